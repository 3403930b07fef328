"""``instructeval run --harness-tasks``: prompts longer than the model's window are refused as the nine
tasks' are, or run and recorded with ``--allow-truncation``; an answer longer than the window is
refused either way (lm-eval stopped on an AssertionError there)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from instructeval_tasks import cli
from instructeval_tasks.sweep import run_sweep
from instructeval_tasks.sweep.budget import Budget
from instructeval_tasks.sweep.window import TruncationError

COMMON = dict(model="hf", tasks=None, methods="null,generic", profile="quick", device="cpu", progress=False)


@pytest.fixture(scope="module")
def hellaswag_dir(tiny_data_dir, tmp_path_factory) -> Path:
    """A --data-dir holding the tiny HellaSwag rows (8 eval rows, 12 train rows) in the HF layout."""
    root = tmp_path_factory.mktemp("harness_window_data")
    shutil.copytree(tiny_data_dir / "hellaswag", root / "hellaswag")
    return root


def _error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("instructeval: error:")]


def _run_args(model: Path, data: Path, out: Path, *extra: str, max_length: int | None = None) -> list[str]:
    window = f",max_length={max_length}" if max_length else ""
    return ["run", "--model", "hf", "--model_args", f"pretrained={model},dtype=float32{window}", "--methods", "null,generic",
            "--instructions-per-method", "1", "--data-dir", str(data), "--output", str(out), "--device", "cpu", *extra]


def _entries(out: Path) -> dict[str, dict]:
    found = {}
    for path in sorted(out.rglob("results_*.json")):
        data = json.loads(path.read_text())
        found.update({name: data["configs"][name]["metadata"] for name in data["results"]})
    return found


def _cuts_sent(out: Path, name: str, lm) -> dict[int, int]:
    """Per doc of the samples log, the most tokens the model's window cuts from one of the requests it
    was sent (context + answer as ``_encode_pair`` encodes them, minus 1, minus the window)."""
    (path,) = sorted(out.rglob(f"samples_{name}_[0-9]*.jsonl"))
    cuts: dict[int, int] = {}
    for row in map(json.loads, path.read_text().splitlines()):
        for request in row["arguments"].values():
            context, answer = lm._encode_pair(request["arg_0"], request["arg_1"])
            cut = len(context) + len(answer) - 1 - lm.max_length
            if cut > 0:
                cuts[row["doc_id"]] = max(cuts.get(row["doc_id"], 0), cut)
    return cuts


# ------------------------------------------------------------------------------ an answer longer than the window


@pytest.mark.parametrize("allow", [False, True])
def test_an_answer_longer_than_the_window_is_refused_even_with_allow_truncation(allow, tiny_model_dir, hellaswag_dir,
                                                                                tmp_path, capsys):
    """A 10-token window holds no HellaSwag ending of the tiny rows: lm-eval would stop on an AssertionError."""
    out = tmp_path / "out"
    args = _run_args(tiny_model_dir, hellaswag_dir, out, "--harness-tasks", "hellaswag", "--test-sample", "4",
                     *(["--allow-truncation"] if allow else []), max_length=10)
    assert cli.main(args) == 2
    (line,) = _error_lines(capsys)
    assert "hellaswag__null: the answer of eval row " in line and "more than the model's window of 10" in line
    assert "cannot evaluate it, even with --allow-truncation" in line and "max_length=" in line
    assert not out.exists()  # nothing evaluated, no empty folder left


# ------------------------------------------------------------------------------ prompts cut: refused, or recorded


def test_prompts_longer_than_the_window_are_refused_as_the_nine_tasks_are(tiny_model_dir, hellaswag_dir, tmp_path, capsys):
    out = tmp_path / "out"
    args = _run_args(tiny_model_dir, hellaswag_dir, out, "--harness-tasks", "hellaswag:1", "--test-sample", "4",
                     max_length=40)
    assert cli.main(args) == 2
    (line,) = _error_lines(capsys)
    assert "prompts do not fit the model's window of 40 tokens" in line and line.split(": ")[2].startswith("hellaswag__")
    assert "--allow-truncation" in line and "--harness-tasks hellaswag:K" in line
    assert not out.exists()


def test_allow_truncation_records_each_cut_of_the_requests_sent_and_the_aggregate_warns(tiny_chat_model, hellaswag_dir,
                                                                                     tmp_path):
    """The record of every variant (the chat placement's prompts too) is the cut of the requests the
    samples log shows were sent, item by item; each variant's results say so, and aggregate warns."""
    from lm_eval.models.huggingface import HFLM

    from instructeval_aggregation.harness_effects import load_harness_results
    from instructeval_aggregation.issues import IssueLog

    out = tmp_path / "out"
    report = run_sweep(**COMMON, model_args=f"pretrained={tiny_chat_model},dtype=float32,max_length=40", output=out,
                       overrides={"instructions_per_method": 1, "test_sample": 4}, data_dir=str(hellaswag_dir),
                       harness_tasks="hellaswag:1", placements=("description", "chat-system"), allow_truncation=True)
    assert report.evaluated == 4
    lm = HFLM(pretrained=str(tiny_chat_model), device="cpu", batch_size=1, max_length=40)
    entries = _entries(out)
    for name, meta in entries.items():
        record = meta["truncation"]
        assert meta["allow_truncation"] is True and record["window"] == 40 and record["of"] == 4
        assert {doc: cut for doc, cut, _ in record["cut"]} == _cuts_sent(out, name, lm), name
        assert record["items"] == len(record["cut"]) > 0
        if meta["harness"]["method"] == "null":
            assert record["instruction_tokens"] == 0 and record["instruction_cut"] == 0
        else:
            assert record["instruction_tokens"] == len(lm.tok_encode(meta["harness"]["instruction"]))
            assert record["instruction_cut"] == sum(1 for _, _, fate in record["cut"] if fate != "intact") > 0
    issues = IssueLog()
    load_harness_results([str(out)], issues)
    warned = sorted(issue.variant for issue in issues.items if issue.code == "truncated")
    assert warned == sorted(entries)


def test_a_budgeted_variant_is_measured_on_its_own_cells(tiny_model_dir, hellaswag_dir, tmp_path):
    from lm_eval.models.huggingface import HFLM

    out = tmp_path / "out"
    run_sweep(**COMMON, model_args=f"pretrained={tiny_model_dir},dtype=float32,max_length=40", output=out,
              overrides={"instructions_per_method": 3, "test_sample": 8}, data_dir=str(hellaswag_dir),
              harness_tasks="hellaswag:1", budget=Budget(0.25, seed=3, min_items=2), allow_truncation=True)
    lm = HFLM(pretrained=str(tiny_model_dir), device="cpu", batch_size=1, max_length=40)
    budgeted = 0
    for name, meta in _entries(out).items():
        cells = meta["budget"]["items"]
        record = meta.get("truncation")
        assert record is not None and record["of"] == len(cells), name
        assert {doc for doc, _, _ in record["cut"]} <= {meta["harness"]["test_ids"][p] for p in cells}  # eval rows
        assert {doc: cut for doc, cut, _ in record["cut"]} == _cuts_sent(out, name, lm), name
        budgeted += len(cells) < 8
    assert budgeted == 3  # the generic instructions: 2 or 3 cells of 8 each, null on all 8


def test_a_window_that_fits_records_nothing_and_a_test_sample_of_every_row_scores_them_all(tiny_model_dir, hellaswag_dir,
                                                                                           tmp_path):
    out = tmp_path / "out"
    run_sweep(**COMMON, model_args=f"pretrained={tiny_model_dir},dtype=float32", output=out,
              overrides={"instructions_per_method": 1, "test_sample": 8}, data_dir=str(hellaswag_dir),
              harness_tasks="hellaswag:1")
    entries = _entries(out)
    assert len(entries) == 2
    assert all("truncation" not in meta and "allow_truncation" not in meta for meta in entries.values())
    assert all(meta["harness"]["test_sample"] == 8 and meta["harness"]["test_ids"] is None for meta in entries.values())


def test_the_window_check_raises_a_truncation_error_in_a_program(tiny_model_dir, hellaswag_dir, tmp_path):
    with pytest.raises(TruncationError, match="window of 40 tokens"):
        run_sweep(**COMMON, model_args=f"pretrained={tiny_model_dir},dtype=float32,max_length=40", output=tmp_path / "o",
                  overrides={"instructions_per_method": 1, "test_sample": 4}, data_dir=str(hellaswag_dir),
                  harness_tasks="hellaswag:1")
