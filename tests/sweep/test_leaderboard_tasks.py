"""``instructeval run --leaderboard-tasks``: stock lm-eval tasks on the sweep's own test items."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from instructeval_tasks.sweep import run_sweep
from instructeval_tasks.leaderboard_map import (
    LeaderboardError,
    load_leaderboard_map,
    parse_leaderboard_tasks,
    select_counterparts,
)


def _entries(out_dir: Path) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for path in sorted(out_dir.rglob("results_*.json")):
        data = json.loads(path.read_text())
        for name, result in data["results"].items():
            found[name] = {"meta": data["configs"][name]["metadata"], "config": data["configs"][name],
                           "result": result, "file": path, "n": data["n-samples"][name]}
    return found


def _samples(out_dir: Path, name: str) -> list[dict]:
    (path,) = sorted(out_dir.rglob(f"samples_{name}_*.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_shipped_map_names_the_leaderboard_settings_and_the_tasks_without_counterpart():
    counterparts, missing = load_leaderboard_map()
    assert {t: (c.stock_task, c.metric, c.num_fewshot) for t, c in counterparts.items()} == {
        "hellaswag": ("hellaswag", "acc_norm", 10),
        "boolq": ("boolq", "acc", 0),
        "anli": ("anli_r1", "acc", 0),
        "triviaqa": ("triviaqa", "exact_match", 0),
        "nq_open": ("nq_open", "exact_match", 0),
    }
    assert sorted(missing) == ["agnews", "cosmosqa", "emotion", "imdb"]


def test_leaderboard_task_selection_and_its_errors(tmp_path):
    counterparts, missing = load_leaderboard_map()
    chosen, notes = select_counterparts(parse_leaderboard_tasks(""), ["imdb", "boolq"], counterparts, missing)
    assert [c.stock_task for c in chosen] == ["boolq"]
    assert notes and "imdb" in notes[0]
    chosen, _ = select_counterparts(parse_leaderboard_tasks("hellaswag:25,anli_r1"), ["hellaswag", "anli"], counterparts, missing)
    assert [(c.stock_task, c.num_fewshot) for c in chosen] == [("hellaswag", 25), ("anli_r1", 0)]
    with pytest.raises(LeaderboardError, match="imdb has no stock counterpart"):
        select_counterparts(parse_leaderboard_tasks("imdb"), ["imdb"], counterparts, missing)
    with pytest.raises(LeaderboardError, match="not among --tasks"):
        select_counterparts(parse_leaderboard_tasks("boolq"), ["hellaswag"], counterparts, missing)
    with pytest.raises(LeaderboardError, match="n-shot"):
        parse_leaderboard_tasks("hellaswag:ten")
    bad = tmp_path / "map.yaml"
    bad.write_text("counterparts:\n  boolq: {stock_task: boolq, metric: acc, num_fewshot: -1}\n")
    with pytest.raises(LeaderboardError, match=r"map.yaml: counterparts.boolq.num_fewshot"):
        load_leaderboard_map(bad)
    bad.write_text("counterparts:\n  boolk: {stock_task: boolq, metric: acc, num_fewshot: 0}\n")
    with pytest.raises(LeaderboardError, match="counterparts.boolk: unknown InstructEval task"):
        load_leaderboard_map(bad)


@pytest.fixture(scope="module")
def leaderboard_sweep(tmp_path_factory, tiny_model_dir, tiny_data_dir):
    out = tmp_path_factory.mktemp("leaderboard")
    report = run_sweep(
        model="hf",
        model_args=f"pretrained={tiny_model_dir},dtype=float32",
        tasks="hellaswag,boolq",
        methods="null",
        output=out,
        profile="quick",
        overrides={"test_sample": 4, "settings": ["zero_shot"]},
        data_dir=str(tiny_data_dir),
        progress=False,
        leaderboard_tasks="hellaswag:2,boolq",
    )
    return out, report


def test_stock_tasks_run_on_the_sweep_test_items(leaderboard_sweep, tiny_rows):
    out, report = leaderboard_sweep
    entries = _entries(out)
    # Each stock task runs as soon as its task's variants are saved.
    order = [p.name.split("__")[0] + ("__" + p.name.split("__")[1] if p.name.startswith("results_leaderboard") else "") for p in report.result_files]
    assert order == ["results_hellaswag", "results_leaderboard__hellaswag", "results_boolq", "results_leaderboard__boolq"]
    for ours, stock, shots, metric in (("hellaswag", "hellaswag", 2, "acc_norm"), ("boolq", "boolq", 0, "acc")):
        variant = entries[f"instructeval_{ours}__null__zs"]
        stock_entry = entries[stock]
        record = stock_entry["meta"]["leaderboard"]
        assert record["stock_task"] == stock and record["metric"] == metric and record["num_fewshot"] == shots
        assert stock_entry["config"]["num_fewshot"] == shots
        assert record["test_ids"] == variant["meta"]["test_ids"] and len(record["test_ids"]) == 4
        assert record["data_source"] == variant["meta"]["data_source"]
        assert stock_entry["n"]["effective"] == 4
        assert 0.0 <= stock_entry["result"][f"{metric},none"] <= 1.0
        # InstructEval doc_id i is eval row test_ids[i], which is the stock log's doc_id (as lm_eval --samples logs it).
        assert record["doc_ids"] == "eval row"
        ours_docs = {s["doc_id"]: s["doc"] for s in _samples(out, f"instructeval_{ours}__null__zs")}
        stock_docs = {s["doc_id"]: s["doc"] for s in _samples(out, stock)}
        assert sorted(ours_docs) == [0, 1, 2, 3] and sorted(stock_docs) == sorted(record["test_ids"])
        assert record["replay"]["samples"] == {stock: sorted(record["test_ids"])}
        local = {"hellaswag": "hellaswag", "boolq": "boolq"}[ours]
        rows = tiny_rows[local]["eval"]
        for doc_id, test_id in enumerate(record["test_ids"]):
            key = "ind" if ours == "hellaswag" else "question"
            assert stock_docs[test_id][key] == ours_docs[doc_id][key] == rows[test_id][key]
    # The stock prompt and process_docs are the harness's own: HellaSwag's preprocess and query,
    # BoolQ's SuperGLUE label copied from google/boolq's answer.
    swag = _samples(out, "hellaswag")[0]
    assert swag["doc"]["query"].startswith(swag["doc"]["activity_label"] + ":")
    assert swag["doc"]["gold"] == int(swag["doc"]["label"])
    boolq = _samples(out, "boolq")
    assert all(s["doc"]["label"] == int(s["doc"]["answer"]) for s in boolq)
    assert boolq[0]["arguments"]["gen_args_0"]["arg_0"].endswith("?\nAnswer:")


def test_lm_eval_samples_on_the_record_replays_the_stock_run(leaderboard_sweep, tiny_model_dir, tiny_data_dir, tmp_path):
    """The record's ``replay`` given to the ``lm_eval`` CLI (the stock YAML, the same local rows) sends
    the very same requests, with the same demos, and gets the same answers and score."""
    import os
    import subprocess
    import sys

    from instructeval_tasks.sweep.leaderboard import stock_yaml

    out, _ = leaderboard_sweep
    entry = _entries(out)["hellaswag"]
    replay = entry["meta"]["leaderboard"]["replay"]
    assert replay["command"].startswith("lm_eval --tasks hellaswag --num_fewshot 2 --seed 0,1234,1234,1234 --samples ")
    # The stock task itself, reading the sweep's local rows instead of the hub's.
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "hellaswag_local.yaml").write_text(
        f"include: {stock_yaml('hellaswag')}\ntask: hellaswag_local\ndataset_path: json\ndataset_name: null\n"
        f"dataset_kwargs:\n  data_files:\n    train: {tiny_data_dir / 'hellaswag' / 'train.jsonl'}\n"
        f"    validation: {tiny_data_dir / 'hellaswag' / 'eval.jsonl'}\n")
    samples = json.dumps({"hellaswag_local": replay["samples"]["hellaswag"]})
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(
        [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32",
         "--include_path", str(tasks), "--tasks", "hellaswag_local", "--num_fewshot", str(replay["num_fewshot"]),
         "--seed", f"0,1234,1234,{replay['fewshot_random_seed']}", "--samples", samples, "--device", "cpu",
         "--batch_size", "1", "--output_path", str(tmp_path / "replay"), "--log_samples"],
        capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    replayed = {s["doc_id"]: s for s in _samples(tmp_path / "replay", "hellaswag_local")}
    recorded = {s["doc_id"]: s for s in _samples(out, "hellaswag")}
    assert sorted(replayed) == sorted(recorded)
    for doc_id, sample in recorded.items():
        assert replayed[doc_id]["arguments"] == sample["arguments"]  # request strings, byte for byte
        # the same log-likelihoods (float32; batch padding moves the last bits) and the same answers
        got = [(float(r[0][0]), r[0][1]) for r in replayed[doc_id]["resps"]]
        want = [(float(r[0][0]), r[0][1]) for r in sample["resps"]]
        assert [g[1] for g in got] == [w[1] for w in want]
        assert max(abs(g[0] - w[0]) for g, w in zip(got, want)) < 1e-4
        assert replayed[doc_id]["acc_norm"] == sample["acc_norm"]
    replayed_score = json.loads(next((tmp_path / "replay").rglob("results_*.json")).read_text())["results"]["hellaswag_local"]
    assert replayed_score["acc_norm,none"] == entry["result"]["acc_norm,none"]


def test_rerun_skips_finished_stock_tasks_and_refuses_another_nshot(leaderboard_sweep, tiny_model_dir, tiny_data_dir):
    out, _ = leaderboard_sweep
    common = dict(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks="hellaswag,boolq", methods="null",
                  output=out, profile="quick", overrides={"test_sample": 4, "settings": ["zero_shot"]},
                  data_dir=str(tiny_data_dir), progress=False)
    again = run_sweep(**common, leaderboard_tasks="hellaswag:2,boolq")
    assert again.evaluated == 0 and not again.result_files
    with pytest.raises(Exception, match="different protocol"):
        run_sweep(**common, leaderboard_tasks="hellaswag:3")


def test_cli_flags_parse_as_in_the_issue(tmp_path, capsys):
    from instructeval_tasks.cli import build_parser, main

    args = build_parser().parse_args(
        ["run", "--model", "instructeval-hf", "--model_args", "pretrained=m", "--tasks", "hellaswag,boolq",
         "--leaderboard-tasks", "--data-dir", "../shared/data", "--output", "runs/"]
    )
    assert args.leaderboard_tasks == "" and args.data_dir == "../shared/data" and args.leaderboard_map is None
    args = build_parser().parse_args(["run", "--model", "hf", "--tasks", "hellaswag", "--output", "o", "--leaderboard-tasks", "hellaswag:25"])
    assert args.leaderboard_tasks == "hellaswag:25"
    assert build_parser().parse_args(["run", "--model", "hf", "--tasks", "hellaswag", "--output", "o"]).leaderboard_tasks is None
    # A user error is one line and exit status 2, before any model is loaded.
    code = main(["run", "--model", "dummy", "--tasks", "imdb", "--output", str(tmp_path), "--leaderboard-tasks", "imdb", "--dry-run"])
    assert code == 2
    assert capsys.readouterr().err.strip().startswith("instructeval: error: --leaderboard-tasks 'imdb': imdb has no stock counterpart")


def test_stock_tasks_need_the_local_executor_without_shards(tmp_path, capsys):
    """The stock tasks share the sweep's in-process model: a shard or Ray sweep refuses them up front."""
    from instructeval_tasks.cli import main

    code = main(["run", "--model", "dummy", "--tasks", "hellaswag", "--output", str(tmp_path / "runs"),
                 "--leaderboard-tasks", "--shard", "0/2", "--dry-run"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("instructeval: error: --leaderboard-tasks runs the stock tasks")
    assert not (tmp_path / "runs").exists()


def test_a_stock_task_whose_prompts_are_cut_is_refused_unless_allowed(tmp_path, tiny_model_dir, tiny_data_dir):
    """The 2-shot stock prompts exceed a 60-token window where the zero-shot variant fits: the stock
    run is refused after the variant is saved (nothing computed is lost); --allow-truncation runs it
    and records the cuts in its results, as for the variants."""
    from instructeval_tasks.truncation import TruncationError

    common = dict(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32,max_length=60", tasks="hellaswag",
                  methods="null", profile="quick", overrides={"test_sample": 4, "settings": ["zero_shot"]},
                  data_dir=str(tiny_data_dir), progress=False, leaderboard_tasks="hellaswag:2")
    with pytest.raises(TruncationError, match=r"stock hellaswag \(2-shot\): \d of 4 prompts do not fit the model's window of 60"):
        run_sweep(output=tmp_path / "refused", **common)
    assert list(_entries(tmp_path / "refused")) == ["instructeval_hellaswag__null__zs"]
    run_sweep(output=tmp_path / "allowed", allow_truncation=True, **common)
    stock = _entries(tmp_path / "allowed")["hellaswag"]["meta"]
    record = stock["truncation"]
    assert stock["allow_truncation"] is True and record["window"] == 60 and record["of"] == 4
    assert record["items"] == len(record["cut"]) > 0
    assert all(fate == "intact" for _, _, fate in record["cut"])  # a stock prompt has no instruction to lose
    from instructeval_aggregation.issues import IssueLog
    from instructeval_aggregation.leaderboard_loading import load_stock_results

    issues = IssueLog()
    load_stock_results([tmp_path / "allowed"], issues)
    warned = [i for i in issues.sorted() if i.code == "truncated"]
    assert len(warned) == 1 and warned[0].message.startswith("stock ") and "the stock task has no instruction" in warned[0].message
