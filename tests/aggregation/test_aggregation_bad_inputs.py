"""Broken results and samples files: an issue naming the file and line, never a traceback, nothing else lost."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from instructeval_aggregation import aggregate, load_runs
from instructeval_aggregation.json_input import MAX_DEPTH, BadJson, parse_json_bytes
from instructeval_aggregation.samples import read_sample_values
from instructeval_aggregation.issues import AggregationError
from instructeval_aggregation.testing import grid, sweep_record, write_run
from instructeval_tasks.cli import main as cli_main

INSTRUCTIONS = [("null", "null"), ("generic", "generic-0")]


def run_dir(root: Path, model: str) -> Path:
    def accuracy(task, method, iid, setting, demo, order):
        rng = random.Random(f"{model}|{task}|{iid}|{setting}|{demo}|{order}")
        return [1 if rng.random() < 0.5 else 0 for _ in range(20)]

    return write_run(root, model, grid(["agnews"], INSTRUCTIONS, accuracy), sweep=sweep_record())


BROKEN_RESULTS = {
    "bomb": (b'{"results":\n' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested more than", 2),
    "deep": (b'{"results": {}, "configs": {"x": ' + b"[" * 500 + b"]" * 500 + b"}}", "nested more than", 1),
    "truncated": (None, "truncated?", None),
    "latin1": (b'{"results": {},\n "configs": {"caf\xe9": 1}}', "not UTF-8: byte 0xe9 at line 2", 2),
    "bigint": (b'{"results": {"a": ' + b"9" * 5000 + b"}}", "not usable JSON", None),
}


def test_results_files_that_cannot_be_parsed_are_dropped_with_their_line(tmp_path, capsys):
    good = run_dir(tmp_path / "runs", "SmolLM2-135M")
    text = good.read_bytes()
    bad_dir = tmp_path / "runs" / "bad"
    bad_dir.mkdir()
    for name, (content, _, _) in BROKEN_RESULTS.items():
        (bad_dir / f"results_{name}.json").write_bytes(text[: len(text) // 2] if content is None else content)
    runset = load_runs([tmp_path / "runs"])
    by_file = {Path(i.file).name: i for i in runset.issues.items if i.level == "error"}
    for name, (_, expected, line) in BROKEN_RESULTS.items():
        issue = by_file[f"results_{name}.json"]
        assert issue.code == "bad-json" and expected in issue.message, issue
        if line is not None:
            assert f"line {line} " in issue.message, issue
    assert {v.model for v in runset.variants} == {"SmolLM2-135M"}
    assert len(runset.variants) == len(json.loads(text)["results"])  # the good file is complete
    # the command: written (exit 3, some input dropped), every dropped file named on stderr, no traceback
    capsys.readouterr()
    assert cli_main(["aggregate", str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--bootstrap", "20", "--no-plots"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("[bad-json]") == len(BROKEN_RESULTS)
    assert (tmp_path / "out" / "report.html").is_file()
    ci = (tmp_path / "out" / "data" / "ci.csv").read_text()
    assert "SmolLM2-135M" in ci or "agnews" in ci  # item-level results of the good run survive


def test_json_input_locates_the_problem():
    with pytest.raises(BadJson, match=r"nested more than 100 levels deep at line 3 column 100") as err:
        parse_json_bytes(b'{"a":\n\n' + b"[" * 10_000)
    assert err.value.line == 3
    assert parse_json_bytes(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None
    assert parse_json_bytes('\ufeff{"a": "\\u00e9"}'.encode()) == {"a": "é"}
    with pytest.raises(BadJson, match="not UTF-8: byte 0xff at line 1 column 8"):
        parse_json_bytes(b'{"a": "\xff"}')


@pytest.mark.parametrize(
    "line, expected",
    [
        (b'{"doc_id": 3, "acc_per', "line 4: not valid JSON (truncated?) at column 15"),
        (b'{"doc_id": 3, "acc_per_token": 1.0, "doc": "\xff"}', "line 4: not UTF-8: byte 0xff at column"),
        (b'{"doc_id": 3, "doc": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", "line 4: nested more than 100 levels"),
        (b'{"doc_id": "three", "acc_per_token": 1.0}', "line 4: doc_id 'three' is not an integer"),
        (b'{"doc_id": 3, "acc_per_token": "1.0"}', "line 4: no numeric 'acc_per_token' value"),
    ],
)
def test_a_broken_samples_line_is_named(tmp_path, line, expected):
    path = tmp_path / "samples_x.jsonl"
    good = b"".join(json.dumps({"doc_id": i, "acc_per_token": 1.0}).encode() + b"\n" for i in range(3))
    path.write_bytes(good + line + b"\n")
    with pytest.raises(AggregationError) as err:
        read_sample_values(str(path), "acc_per_token")
    assert str(path) in str(err.value) and expected in str(err.value)


def test_a_broken_samples_file_drops_only_its_item_level_results(tmp_path):
    run_dir(tmp_path / "runs", "SmolLM2-135M")
    run_dir(tmp_path / "runs", "opt-1.3b")
    victim = sorted((tmp_path / "runs" / "opt-1.3b").glob("samples_*zs*.jsonl"))[0]
    victim.write_bytes(victim.read_bytes()[:-40] + b"\xff\n")  # a truncated, non-UTF-8 last line
    result = aggregate(load_runs([tmp_path / "runs"]), n_boot=20)
    bad = [i for i in result.issues if i.code == "bad-samples"]
    assert len(bad) == 1 and "opt-1.3b/agnews" in bad[0].message and victim.name in bad[0].message
    assert "line 20" in bad[0].message
    assert set(result.ci["model"]) == {"SmolLM2-135M"} if "model" in result.ci.columns else not result.ci.empty
    assert {"SmolLM2-135M", "opt-1.3b"} <= set(result.instructions["model"])  # both models still aggregated


def test_a_broken_samples_file_is_dropped_input_exit_3(tmp_path, capsys):
    """An empty samples file (or one that cannot be read) drops that (model, task)'s item-level results:
    an error, so the command exits 3 as documented for dropped input, naming the file and the fix."""
    run_dir(tmp_path / "runs", "SmolLM2-135M")
    victim = sorted((tmp_path / "runs" / "SmolLM2-135M").glob("samples_*zs*.jsonl"))[0]
    victim.write_bytes(b"")
    capsys.readouterr()
    assert cli_main(["aggregate", str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--bootstrap", "20", "--no-plots"]) == 3
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if "[bad-samples]" in x]
    assert line.startswith("error [bad-samples]") and victim.name in line and "empty (no per-item line)" in line
    assert "rerun that variant" in line and (tmp_path / "out" / "report.html").is_file()


def test_nan_acc_per_token_and_acc_drop_the_variants_not_the_paper_metric(tmp_path, capsys):
    """Variants whose acc_per_token and acc are NaN are dropped by name (error, exit 3); the rest keep the
    paper's acc_per_token, never acc_norm behind a warning that names acc."""
    def accuracy(task, method, iid, setting, demo, order):
        rng = random.Random(f"{iid}|{setting}|{demo}|{order}")
        return [1 if rng.random() < 0.5 else 0 for _ in range(8)]

    variants = grid(["agnews"], INSTRUCTIONS, accuracy)
    for v in variants:
        v.metrics = {"acc_norm": 1.0}  # acc_norm differs from the items' acc/acc_per_token: its use would show
    broken = [v for v in variants if v.method == "generic" and v.setting == "few_shot"]
    for v in broken:
        v.metrics = {"acc_norm": 1.0, "acc_per_token": float("nan"), "acc": float("nan")}
    write_run(tmp_path / "runs", "m", [v for v in variants if v not in broken], sweep=sweep_record())
    write_run(tmp_path / "runs", "m", broken, sweep=sweep_record(), stamp="2024-01-02T00-00-00.000000")
    result = aggregate(load_runs([tmp_path / "runs"]), n_boot=0)
    assert list(result.metric_choice["metric"]) == ["acc_per_token"]
    assert not (set(result.variants["variant"]) & {v.name for v in broken}) and len(result.variants) == 17
    (error,) = [i for i in result.issues if i.code == "metric-missing"]
    assert error.level == "error" and "3 of 20 variants have neither acc_per_token nor acc" in error.message
    assert "--metric acc_norm" in error.message
    assert not [i for i in result.issues if i.code == "metric-fallback"]
    kept = result.instructions.set_index("method").loc["null"]
    null_zs = [v for v in variants if v.method == "null" and v.setting == "zero_shot"][0]
    assert kept["zero_shot"] == null_zs.metric_value() != 1.0
    # one variant lacks acc_per_token only: acc for the rest, and the warning names the metric used
    lacking = next(v for v in variants if v.method == "null" and v.setting == "perturbed")
    lacking.metrics = {"acc_norm": 1.0, "acc_per_token": float("nan")}
    write_run(tmp_path / "runs", "m", [v for v in variants if v not in broken], sweep=sweep_record())
    result = aggregate(load_runs([tmp_path / "runs"]), n_boot=0)
    assert list(result.metric_choice["metric"]) == ["acc"]
    (warning,) = [i for i in result.issues if i.code == "metric-fallback"]
    assert "missing or not a number in 1 of 17 variants; using acc for all of them" in warning.message
    capsys.readouterr()
    assert cli_main(["aggregate", str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--bootstrap", "0", "--no-plots"]) == 3
    assert (tmp_path / "out" / "data" / "metric_choice.csv").read_text().splitlines()[1] == "m,agnews,acc"


def test_the_runs_own_sweep_json_is_skipped_with_a_note(tmp_path, tiny_model_dir, tiny_data_dir, capsys):
    """``aggregate runs/*/*.json`` on a real run folder: its sweep.json is named once and skipped, the
    results are aggregated (exit 0); a foreign JSON file is still refused by name."""
    from instructeval_tasks.sweep.runner import run_sweep

    runs = tmp_path / "runs"
    run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks="agnews", methods="null,generic",
              profile="quick", data_dir=str(tiny_data_dir), device="cpu", progress=False, output=runs,
              overrides={"instructions_per_method": 1, "test_sample": 4, "settings": ("zero_shot",)})
    files = sorted(str(p) for p in runs.glob("*/*.json"))
    (plan,) = [f for f in files if f.endswith("sweep.json")]
    assert len(files) == 3
    capsys.readouterr()
    assert cli_main(["aggregate", *files, "--out", str(tmp_path / "out"), "--bootstrap", "0", "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert f"note [sweep-plan] file {plan}: the plan instructeval run writes beside its results" in err
    assert "not-results" not in err and (tmp_path / "out" / "report.html").is_file()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["n_variants"] == 2 and {i["code"] for i in summary["issues"] if i["level"] == "error"} == set()
    other = runs / "notes.json"
    other.write_text(json.dumps({"profile": "quick", "comment": "not a plan"}))
    assert cli_main(["aggregate", *files, str(other), "--out", str(tmp_path / "out"), "--bootstrap", "0", "--no-plots"]) == 3
    assert f"error [not-results] file {other}" in capsys.readouterr().err


def test_harness_task_results_are_written_beside_a_dropped_file(tmp_path, capsys):
    """Only lm-eval's own tasks (--harness-tasks) among the inputs, plus a file that is not results: the
    file is listed as dropped (exit 3), the harness-task tables are still written."""
    out = tmp_path / "runs" / "m"
    out.mkdir(parents=True)
    results, configs = {}, {}
    for iid, correct in {"null": [1, 0, 1, 0], "generic-0": [1, 1, 1, 0], "generic-1": [0, 0, 1, 0]}.items():
        name = f"boolq__{iid}"
        results[name] = {"alias": name, "acc,none": sum(correct) / 4, "acc_stderr,none": 0.1}
        configs[name] = {"task": name, "metric_list": [{"metric": "acc"}], "metadata": {"model_label": "m", "harness": {
            "task": "boolq", "num_fewshot": 0, "method": "null" if iid == "null" else "generic", "instruction_id": iid,
            "instruction": "" if iid == "null" else f"text {iid}", "placement": "description", "test_ids": [0, 1, 2, 3]}}}
        rows = [{"doc_id": d, "filter": "none", "acc": float(c), "target": "0", "filtered_resps": [["-1.0", "False"]]}
                for d, c in enumerate(correct)]
        (out / f"samples_{name}_2026-01-01T00-00-00.000000.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (out / "results_harness__boolq.json").write_text(json.dumps({"results": results, "configs": configs,
                                                                  "config": {"model": "hf", "model_args": "pretrained=m"}}))
    (out / "results_junk.json").write_text(json.dumps({"scores": [1, 2]}))
    capsys.readouterr()
    assert cli_main(["aggregate", str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--bootstrap", "0", "--no-plots"]) == 3
    err = capsys.readouterr().err
    assert "error [not-results]" in err and "results_junk.json" in err and "nothing written" not in err
    assert (tmp_path / "out" / "tables" / "harness_effects.md").is_file()


@pytest.mark.parametrize(
    "record, expected, absent",
    [
        ({"items": 3, "of": 8, "window": 96, "instruction_tokens": 0, "instruction_cut": 0,
          "cut": [[0, 4, "intact"], [2, 34, "intact"], [5, 1, "intact"]]},
         ["3 of 8 prompts were cut to the model's window of 96 tokens", "no instruction (null), so only its demos or input were cut"],
         "instruction's"),
        ({"items": 8, "of": 8, "window": 96, "instruction_tokens": 250, "instruction_cut": 8,
          "cut": [[i, 300, "cut entirely"] for i in range(7)] + [[7, 100, "partly cut"]]},
         ["in 1 the instruction (250 tokens) was partly cut: there the score is only partly the instruction's",
          "in 7 it was cut entirely: there the score is not the instruction's at all"], "survived"),
        ({"items": 2, "of": 8, "window": 96, "instruction_tokens": 5, "instruction_cut": 1,
          "cut": [[0, 3, "partly cut"], [1, 2, "intact"]]},
         ["in 1 the instruction (5 tokens) survived whole (the demos or input were cut)",
          "in 1 the instruction was partly cut"], "not the instruction's at all"),
    ],
)
def test_the_truncation_warning_says_what_the_instruction_lost(tmp_path, record, expected, absent):
    """--allow-truncation variants: the warning is worded by the record (instruction survived / partly cut /
    cut entirely, with counts), never "only partly the instruction's" for a null or an entirely cut one."""
    from instructeval_aggregation.testing import SyntheticVariant

    v = SyntheticVariant("agnews", "generic", "g0", "zero_shot", correct=[1, 0, 1, 0], metadata={"truncation": record})
    write_run(tmp_path, "m", [v], samples=False)
    (warning,) = [i for i in load_runs([tmp_path]).issues.items if i.code == "truncated"]
    assert warning.level == "warning" and warning.variant == v.name
    for text in expected:
        assert text in warning.message, warning.message
    assert absent not in warning.message


@pytest.mark.parametrize("content, says", [
    ("{not json", "cannot be read as JSON"),
    ("[1, 2]", 'expected a JSON object with a "resolved" object'),
    ('{"resolved": {"item-response": {"uniform": {"0.1": {"max": {"resolved": "yes"}}}}}}',
     "resolved.item-response.uniform.0.1.max.resolved is not true or false"),
    ('{"resolved": {"item-response": {"uniform": {"ten": {}}}}}', "budget 'ten' is not a number"),
    ('{"resolved": {"item-response": ["uniform"]}}', "resolved.item-response is not an object of designs"),
])
def test_a_bad_budget_validity_table_is_one_line_exit_2_before_any_work(tmp_path, capsys, monkeypatch, content, says):
    from instructeval_aggregation import budget_validity

    run_dir(tmp_path / "runs", "SmolLM2-135M")
    table = tmp_path / "validity.json"
    table.write_text(content)
    monkeypatch.setenv(budget_validity.TABLE_ENV, str(table))
    budget_validity._read.cache_clear()
    capsys.readouterr()
    assert cli_main(["aggregate", str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--no-plots"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"instructeval: error: INSTRUCTEVAL_BUDGET_VALIDITY={table}: ")
    assert says in err[0] and "--write-validity, or unset it" in err[0]
    assert not (tmp_path / "out").exists()
