"""``instructeval run --tasks ni_...``: the header encodings swept as instructions with the tiny offline model,
resumed, and ``instructeval aggregate``'s Natural Instructions report on the folder."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from aggregation.bootstrap import resample_counts, rng_for
from aggregation.cli import main as aggregate_main
from instructeval_tasks.errors import UserError
from instructeval_tasks.ni.metrics import score
from instructeval_tasks.ni.prompt import render_header
from instructeval_tasks.ni.source import read_task_file
from instructeval_tasks.sweep import run_sweep

SNLI, COPA = "ni_task190_snli_classification", "ni_task828_copa_commonsense_cause_effect"
SWEEP_DIR = Path(__file__).resolve().parents[2] / "instructeval_tasks" / "sweep"


@pytest.fixture(scope="module")
def two_tasks(tmp_path_factory, ni) -> Path:
    """task190 (one negative example) and task828 (no negative example, its own category), 4 instances each."""
    root = tmp_path_factory.mktemp("ni_two")
    snli = ni.toy_task(4)
    for n, instance in enumerate(snli["Instances"]):  # short answers the tiny model's words may overlap
        instance["output"] = ["N"] if n % 2 else ["N N", "Yes"]
    ni.write_task(root, snli)
    copa = ni.toy_task(4)
    copa["Categories"], copa["Negative Examples"] = ["Cause Effect Classification"], []
    return ni.write_task(root, copa, COPA.removeprefix("ni_"))


def _sweep(model: Path, data: Path, out: Path, lines: list[str], **extra):
    return run_sweep(model="hf", model_args=f"pretrained={model},dtype=float32", device="cpu", tasks=f"{SNLI},{COPA}",
                     methods="null", overrides={"test_sample": 3}, data_dir=str(data), output=str(out),
                     progress=False, echo=lines.append, **extra)


@pytest.fixture(scope="module")
def swept(tiny_model_dir, two_tasks, tmp_path_factory):
    out = tmp_path_factory.mktemp("ni_sweep")
    first, second = [], []
    reports = _sweep(tiny_model_dir, two_tasks, out, first), _sweep(tiny_model_dir, two_tasks, out, second)
    return out, reports, first, second


def test_sweep_plans_each_distinct_header_encoding_and_resumes(swept):
    out, (first, second), lines, again = swept
    # task190: null + 9 encodings; task828 (no negatives): the 3 encodings that would repeat another's text left out
    assert first.planned == 17 and first.evaluated == 17
    assert second.evaluated == 0 and second.skipped == second.planned == 17
    plan_line = next(line for line in lines if "Natural Instructions task(s)" in line)
    assert f"{COPA}: definition_pos2_neg2, definition_pos2_neg2_explanations, full" in plan_line
    assert any("17 variants planned, 17 already done, 0 to run" in line for line in again)


def test_header_variant_prompts_are_the_task_header(swept, two_tasks):
    out = swept[0]
    task_file = read_task_file("task190_snli_classification", str(two_tasks))
    name = f"instructeval_{SNLI}__ni_header-task190_snli_classification-definition_pos2_neg2__zs"
    (samples,) = out.rglob(f"samples_{name}_*.jsonl")
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    assert len(rows) == 3
    header = render_header(task_file, "definition_pos2_neg2")
    for row in rows:
        assert row["arguments"]["gen_args_0"]["arg_0"] == f"{header}\n\nInput: {row['doc']['input']}\nOutput:"


def test_an_adaptive_budget_is_refused_for_ni_tasks_in_one_line(tiny_model_dir, two_tasks, tmp_path):
    from instructeval_tasks.sweep.budget import Budget

    with pytest.raises(UserError) as err:
        _sweep(tiny_model_dir, two_tasks, tmp_path / "out", [], budget=Budget(0.5, design="adaptive"))
    assert str(err.value).startswith(f"--budget-design adaptive with --tasks {SNLI}: its rounds are chosen from accuracy")
    assert not (tmp_path / "out").exists()


def test_a_budgeted_sweep_scores_each_encoding_on_its_share_and_its_verdict_never_reads_robust(tiny_model_dir, two_tasks,
                                                                                                tmp_path, capsys):
    """``--budget 0.5`` (uniform, at least 1 item): the null instruction on all 4 instances, each encoding on
    2 of them; the report pairs the encodings on the instances both scored, the verdict tests the observed
    cells and leaves the instruction SD (and the card) to a full grid."""
    from instructeval_tasks.sweep.budget import Budget

    out = tmp_path / "out"
    run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", device="cpu", tasks=SNLI, methods="null",
              overrides={"test_sample": 4}, data_dir=str(two_tasks), output=str(out), progress=False, echo=lambda line: None,
              budget=Budget(0.5, min_items=1, design="uniform"))
    counts = {}
    for path in out.rglob("samples_*.jsonl"):
        counts[path.name.split("__")[1]] = len(path.read_text().splitlines())
    assert counts.pop("null") == 4 and set(counts.values()) == {2} and len(counts) == 9
    assert aggregate_main([str(out), "--out", str(tmp_path / "agg"), "--bootstrap", "50", "--seed", "s"]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "[ROUGE-L, zero-shot]" in ln]
    assert "instruction SD not resolved" in line and "robust" not in line
    assert not (tmp_path / "agg" / "sensitivity" / "ni_card.json").exists()


def test_every_sweep_function_is_at_most_50_lines():
    long = []
    for path in sorted(SWEEP_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 50:
                long.append(f"{path.name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not long


def _samples(out: Path, encoding: str) -> dict[str, float]:
    """instance id -> ROUGE-L of task190's variant under ``encoding``, recomputed from the logged generation."""
    name = f"instructeval_{SNLI}__ni_header-task190_snli_classification-{encoding}__zs"
    (path,) = out.rglob(f"samples_{name}_*.jsonl")
    values = {}
    for row in map(json.loads, path.read_text().splitlines()):
        values[row["doc"]["id"]] = score(row["resps"][0][0].split("\n")[0], row["doc"]["outputs"])["rougeL"]
        assert values[row["doc"]["id"]] == row["rougeL"]
    return values


def test_aggregate_reports_per_task_per_category_and_schema_part_effects(swept, tmp_path, capsys):
    from instructeval_aggregation.ni_report import MIN_PAIRED

    out = swept[0]
    assert aggregate_main([str(out), "--out", str(tmp_path / "agg"), "--bootstrap", "200", "--seed", "s"]) == 0
    printed = capsys.readouterr().out
    import pandas as pd

    scores = pd.read_csv(tmp_path / "agg" / "data" / "ni_scores.csv", keep_default_na=False, na_values=[""])
    assert set(scores["task"]) == {SNLI, COPA} and len(scores) == 17 and set(scores["n"]) == {3}
    (model,) = set(scores["model"])  # the sweep's model label
    assert set(scores.loc[scores["task"] == SNLI, "instruction"]) == {
        "null", "definition", "pos2", "definition_pos2", "definition_pos2_explanations", "definition_pos2_neg2",
        "definition_pos2_neg2_explanations", "pos_examples", "prompt_definition_pos_examples", "full"}
    with_part, without = _samples(out, "definition_pos2"), _samples(out, "definition")
    row = scores[(scores["task"] == SNLI) & (scores["instruction"] == "definition_pos2")].iloc[0]
    assert row["rougeL"] == pytest.approx(sum(with_part.values()) / 3)

    categories = pd.read_csv(tmp_path / "agg" / "data" / "ni_categories.csv", keep_default_na=False, na_values=[""])
    assert set(categories["category"]) == {"Textual Entailment", "Cause Effect Classification"}
    entail = categories[(categories["category"] == "Textual Entailment") & (categories["instruction"] == "definition_pos2")]
    assert entail.iloc[0]["rougeL"] == pytest.approx(row["rougeL"]) and entail.iloc[0]["tasks"] == 1

    # the 2 positive examples' effect on task190, by hand: paired differences, resampled with the documented draw
    ids = sorted(with_part)
    d = [with_part[i] - without[i] for i in ids]
    import hashlib

    import numpy as np

    signature = hashlib.sha256("\0".join(ids).encode("utf-8")).hexdigest()[:16]
    reps = resample_counts(rng_for("s", "ni", model, SNLI, signature), 3, 200) @ np.array(d) / 3
    effects = pd.read_csv(tmp_path / "agg" / "data" / "ni_effects.csv", keep_default_na=False, na_values=[""])
    effect = effects[(effects["scope"] == "task") & (effects["name"] == SNLI) & (effects["metric"] == "rougeL")
                     & (effects["contrast"] == "definition_pos2 - definition")].iloc[0]
    assert effect["part"] == "2 positive examples" and effect["n"] == 3
    assert effect["diff"] == pytest.approx(sum(d) / 3)
    # 3 paired instances: too few for an interval (MIN_PAIRED), said in the row instead of a certain-looking one
    assert np.isnan(effect["ci_low"]) and np.isnan(effect["detectable"])
    assert effect["not_resolved"] == f"only 3 paired instances (an interval needs {MIN_PAIRED})"
    # the replicates themselves are the documented draw (an interval where the instances suffice)
    from instructeval_aggregation.issues import IssueLog
    from instructeval_aggregation.ni_report import effects as ni_effects, effects_frame, load_ni_results

    found = [e for e in ni_effects(load_ni_results([str(out)], IssueLog()), seed="s", n_boot=200)
             if e.scope == "task" and e.name == SNLI and e.metric == "rougeL" and e.part == "2 positive examples"]
    assert np.allclose(found[0].replicates, reps)
    found[0].n = MIN_PAIRED  # as if the instances sufficed: the interval and power of those replicates
    shown = effects_frame(found, 0.95).iloc[0]
    assert (shown["ci_low"], shown["ci_high"]) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])))
    assert shown["detectable"] == pytest.approx((1.959964 + 0.841621) * np.std(reps, ddof=1), rel=1e-5)
    # task828 has no negative examples: no effect of them, its encodings were not planned
    assert effects[(effects["name"] == COPA) & (effects["part"] == "2 negative examples")].empty
    category = effects[(effects["scope"] == "category") & (effects["name"] == "Textual Entailment")
                       & (effects["metric"] == "rougeL") & (effects["part"] == "2 positive examples")].iloc[0]
    assert category["diff"] == pytest.approx(effect["diff"])
    assert (f"ni {model} | Textual Entailment: ROUGE-L {100 * entail.iloc[0]['rougeL']:.1f} points (definition_pos2); "
            f"no schema-part effect resolved (at most 3 paired instances; an effect needs {MIN_PAIRED})") in printed
    assert "tables/natural_instructions.md" in printed
    assert "## Per category" in (tmp_path / "agg" / "tables" / "natural_instructions.md").read_text()


def test_aggregate_without_samples_gives_the_scores_and_no_effects(swept, tmp_path):
    import pandas as pd

    assert aggregate_main([str(swept[0]), "--out", str(tmp_path / "agg"), "--no-samples"]) == 0
    scores = pd.read_csv(tmp_path / "agg" / "data" / "ni_scores.csv", keep_default_na=False, na_values=[""])
    effects = pd.read_csv(tmp_path / "agg" / "data" / "ni_effects.csv", keep_default_na=False, na_values=[""])
    assert len(scores) == 17 and effects.empty


def test_sweep_without_a_data_directory_names_the_option(tmp_path, monkeypatch):
    monkeypatch.delenv("INSTRUCTEVAL_DATA_DIR", raising=False)
    with pytest.raises(UserError) as err:
        run_sweep(model="hf", model_args="pretrained=unused", tasks=SNLI, methods="null", output=str(tmp_path / "out"),
                  dry_run=True, progress=False, echo=lambda line: None)
    assert str(err.value).startswith(f"--tasks {SNLI}: no data directory; give --data-dir <dir> (or set "
                                     "$INSTRUCTEVAL_DATA_DIR) holding <dir>/natural_instructions/tasks/")


def test_aggregate_opens_with_one_verdict_per_task_and_writes_its_card(swept, tmp_path, capsys):
    """The verdict lines come first on the terminal and in report.html; each (model, task) has a card
    whose measures are those of its ROUGE-L grid (the instructions x the instances they all scored)."""
    import numpy as np

    out = swept[0]
    assert aggregate_main([str(out), "--out", str(tmp_path / "agg"), "--bootstrap", "50", "--seed", "s"]) == 0
    printed = capsys.readouterr().out.splitlines()
    verdicts = [line for line in printed if "[ROUGE-L, zero-shot]" in line]
    assert len(verdicts) == 2 and printed[:2] == verdicts  # the answer first
    assert all(": definition_pos2 " in line and any(w in line for w in ("sensitive", "robust", "not resolved"))
               for line in verdicts)
    cards = json.loads((tmp_path / "agg" / "sensitivity" / "ni_card.json").read_text())["cards"]
    snli = next(c for c in cards if c["task"] == SNLI)
    rows = {label: _samples(out, label) for label in ("definition", "definition_pos2")}
    assert snli["metric"] == "rougeL" and snli["n_items"] == 3 and snli["n_instructions"] == 10
    assert snli["verdict"]["line"] in verdicts
    assert snli["verdict"]["stock"] == pytest.approx(100 * np.mean(list(rows["definition_pos2"].values())))
    assert snli["methods"] == {"null": 1, "ni_header": 9}
    import pandas as pd

    scores = pd.read_csv(tmp_path / "agg" / "data" / "ni_scores.csv", keep_default_na=False, na_values=[""])
    mine = scores[scores["task"] == SNLI]["rougeL"]  # every variant scored the same 3 instances
    assert snli["measures"]["avgp"]["value"] == pytest.approx(100 * mine.mean())
    assert snli["measures"]["maxp"]["value"] == pytest.approx(100 * mine.max())
    page = (tmp_path / "agg" / "report.html").read_text()
    assert page.index("<h2>Verdict</h2>") < page.index("<h2>Overview</h2>") < page.index("<h2>Natural Instructions</h2>")
    assert "ROUGE-L per category, standard encoding" in page and "Sensitivity cards (ROUGE-L)" in page
    assert "InstructEval's own tasks: none" not in page and "Confidence intervals" not in page


def test_an_effect_whose_replicates_do_not_vary_claims_no_detectable_size():
    """Every paired difference equal (here all 0): the interval is [0, 0] but no power is claimed."""
    import math

    import numpy as np

    from aggregation.ni_report import Effect, effects_frame

    flat = Effect("m", "task", "t", "c", "definition", "definition_pos2 - pos2", "rougeL", 0.0, np.zeros(200), 100)
    spread = Effect("m", "task", "t", "c", "definition", "definition_pos2 - pos2", "rougeL", 0.1,
                    np.random.default_rng(0).normal(0.1, 0.02, 200), 100)
    frame = effects_frame([flat, spread], 0.95)
    assert (frame.loc[0, "ci_low"], frame.loc[0, "ci_high"]) == (0.0, 0.0) and math.isnan(frame.loc[0, "detectable"])
    assert frame.loc[1, "detectable"] == pytest.approx(2.801585 * np.std(spread.replicates, ddof=1), rel=1e-5)


def _copy_of(swept, tmp_path) -> Path:
    import shutil

    shutil.copytree(swept[0], tmp_path / "runs")
    return tmp_path / "runs"


def _is_standard_snli(path: Path) -> bool:
    """The samples file of task190's standard encoding (``definition_pos2``, no negatives, no explanations)."""
    name = path.name
    return "task190" in name and "definition_pos2" in name and "neg2" not in name and "explanations" not in name


def test_a_deleted_ni_samples_file_is_dropped_input_exit_3_and_the_lines_agree(swept, tmp_path, capsys):
    runs = _copy_of(swept, tmp_path)
    (target,) = [p for p in runs.rglob("samples_*.jsonl") if _is_standard_snli(p)]
    target.unlink()
    capsys.readouterr()
    assert aggregate_main([str(runs), "--out", str(tmp_path / "agg"), "--bootstrap", "20", "--no-plots"]) == 3
    captured = capsys.readouterr()
    (line,) = [x for x in captured.err.splitlines() if "[no-samples]" in x]
    assert line.startswith("error [no-samples]") and "deleted or moved?" in line
    snli_verdict = next(x for x in captured.out.splitlines() if "task190" in x and "[ROUGE-L" in x)
    assert "no definition_pos2 score" not in snli_verdict  # the score tables' number, not a contradiction


def test_a_truncated_ni_samples_file_names_its_line_and_exits_3(swept, tmp_path, capsys):
    runs = _copy_of(swept, tmp_path)
    target = sorted(p for p in runs.rglob("samples_*.jsonl") if "task190" in p.name)[0]
    lines = target.read_text().splitlines()
    target.write_text("\n".join(lines[:2] + [lines[2][: len(lines[2]) // 2]]) + "\n")
    capsys.readouterr()
    assert aggregate_main([str(runs), "--out", str(tmp_path / "agg"), "--bootstrap", "20", "--no-plots"]) == 3
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "[bad-samples]" in x]
    assert line.startswith("error [bad-samples]") and f"{target.name}: line 3:" in line


def test_the_python_api_writes_what_the_cli_writes_on_nine_task_harness_and_ni_results(swept, tmp_path, capsys):
    """``collect`` + ``write_report`` (the documented API) and ``instructeval aggregate`` give the same
    files, byte for byte, on one folder holding the three kinds of results."""
    import shutil

    from instructeval_aggregation import collect, write_report
    from instructeval_aggregation.testing import grid, write_harness_run, write_run

    runs = tmp_path / "runs"
    shutil.copytree(swept[0], runs / "ni")
    variants = grid(["agnews"], [("null", "null"), ("generic", "generic-0"), ("generic", "generic-1")],
                    lambda task, method, iid, *rest: [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0],
                    settings=("zero_shot",))
    write_run(runs / "nine", "m1", variants)
    write_harness_run(runs / "harness", "m1", "boolq", {"null": [1, 0, 1, 0, 1, 0, 1, 1],
                                                        "generic-0": [1, 1, 1, 0, 1, 0, 0, 1]})
    assert aggregate_main([str(runs), "--out", str(tmp_path / "cli"), "--bootstrap", "50", "--seed", "s"]) == 0
    said = capsys.readouterr().out
    write_report(collect([str(runs)], n_boot=50, seed="s"), tmp_path / "api")
    cli_files = sorted(p.relative_to(tmp_path / "cli") for p in (tmp_path / "cli").rglob("*") if p.is_file())
    api_files = sorted(p.relative_to(tmp_path / "api") for p in (tmp_path / "api").rglob("*") if p.is_file())
    assert cli_files == api_files
    assert {"tables/natural_instructions.md", "tables/harness_effects.md", "tables/gain_zero_shot.md",
            "sensitivity/ni_card.json"} <= {str(p) for p in cli_files}
    for rel in cli_files:
        assert (tmp_path / "cli" / rel).read_bytes() == (tmp_path / "api" / rel).read_bytes(), rel
    assert "the harness-task tables (tables/harness_effects.md) and the Natural Instructions tables" in said
