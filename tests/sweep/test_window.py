"""Prompts longer than the model's window: a sweep refuses them, or records per item what was cut.

The harness cuts a long request from the left, so the instruction goes first: with a 64-token window
a generic instruction never reached the model, and the results still credited it (exit 0).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from instructeval_aggregation import load_runs
from instructeval_tasks import cli
from instructeval_tasks.sweep import run_sweep
from instructeval_tasks.sweep.window import cut_tokens, measure

SMALL = dict(tasks="agnews", methods="generic", profile="quick", device="cpu", progress=False,
             overrides={"instructions_per_method": 1, "test_sample": 4, "settings": ["zero_shot"]})


def test_cut_tokens_follows_the_hf_backend():
    # loglikelihood: context + continuation - 1 tokens are fed (the last token is only predicted)
    assert cut_tokens("loglikelihood", prompt_tokens=65, window=64) == 0
    assert cut_tokens("loglikelihood", prompt_tokens=66, window=64) == 1
    # generation: the context keeps window - max_gen_toks tokens
    assert cut_tokens("generate_until", prompt_tokens=54, window=64, max_gen_toks=10) == 0
    assert cut_tokens("generate_until", prompt_tokens=60, window=64, max_gen_toks=10) == 6


def test_measure_counts_with_the_models_own_tokens(tiny_model_dir, tiny_data_dir):
    """Each doc's cut equals a hand count: its longest request in the model's tokens, minus the window."""
    from lm_eval.models.huggingface import HFLM

    from instructeval_tasks.preview import build_task, render_prompt

    lm = HFLM(pretrained=str(tiny_model_dir), device="cpu", batch_size=1, max_length=40)
    task = build_task("agnews", {"data_dir": str(tiny_data_dir), "method": "generic", "instruction_index": 0}, 2)
    record = measure(task, lm)
    assert record is not None and record["window"] == 40 and record["of"] == len(task.eval_docs)
    expected = {}
    for i in range(len(task.eval_docs)):
        context, continuations = render_prompt(task, i)
        longest = max(sum(map(len, lm._encode_pair(context, c))) for c in continuations)
        if longest - 1 > 40:
            expected[i] = longest - 1 - 40
    assert {doc: cut for doc, cut, _ in record["cut"]} == expected
    instruction = len(lm.tok_encode(task.prompt_description))
    assert record["instruction_tokens"] == instruction
    assert all(fate == ("partly cut" if cut < instruction else "cut entirely") for _, cut, fate in record["cut"])
    assert measure(task, HFLM(pretrained=str(tiny_model_dir), device="cpu", batch_size=1)) is None  # 1024 tokens fit


def test_a_sweep_refuses_a_variant_whose_instruction_would_be_cut(tmp_path, tiny_model_dir, tiny_data_dir, capsys):
    out = tmp_path / "out"
    args = ["run", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir},max_length=24", "--tasks", "agnews",
            "--methods", "generic", "--instructions-per-method", "1", "--settings", "zero_shot", "--test-sample", "4",
            "--data-dir", str(tiny_data_dir), "--output", str(out), "--device", "cpu"]
    assert cli.main(args) == 2
    line = [x for x in capsys.readouterr().err.splitlines() if x.startswith("instructeval: error:")]
    assert len(line) == 1
    assert "prompts do not fit the model's window of 24 tokens" in line[0] and "instructeval_agnews__generic-" in line[0]
    assert "--allow-truncation" in line[0]
    assert not out.exists()  # nothing was evaluated, no empty folder is left


def test_allow_truncation_records_each_cut_and_the_aggregate_warns(tmp_path, tiny_model_dir, tiny_data_dir):
    out = tmp_path / "out"
    report = run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},max_length=24", output=out,
                       data_dir=str(tiny_data_dir), allow_truncation=True, **SMALL)
    assert report.evaluated == 1
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    (meta,) = [c["metadata"] for c in results["configs"].values()]
    record = meta["truncation"]
    assert meta["allow_truncation"] is True
    assert record["window"] == 24 and record["items"] == len(record["cut"]) > 0 and record["of"] == 4
    assert record["instruction_cut"] == sum(1 for _, _, fate in record["cut"] if fate != "intact")
    runs = load_runs([out])
    warnings = [i for i in runs.issues.sorted() if i.code == "truncated"]
    assert len(warnings) == 1 and "cut to the model's window of 24 tokens" in warnings[0].message


def test_a_window_that_fits_changes_nothing(tmp_path, tiny_model_dir, tiny_data_dir):
    run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir}", output=tmp_path / "out",
              data_dir=str(tiny_data_dir), **SMALL)
    results = json.loads(next(Path(tmp_path / "out").rglob("results_*.json")).read_text())
    (meta,) = [c["metadata"] for c in results["configs"].values()]
    assert "truncation" not in meta and "allow_truncation" not in meta


@pytest.mark.parametrize("allow", [False, True])
def test_generation_prompts_are_measured_against_the_window_minus_the_generated_tokens(allow, tiny_model_dir, tiny_data_dir):
    from lm_eval.models.huggingface import HFLM

    from instructeval_tasks.preview import build_task
    from instructeval_tasks.sweep.window import TruncationError, check_window

    lm = HFLM(pretrained=str(tiny_model_dir), device="cpu", batch_size=1, max_length=30)
    task = build_task("nq_open", {"data_dir": str(tiny_data_dir), "method": "generic", "instruction_index": 0}, 0)
    context_tokens = [len(lm.tok_encode(task.fewshot_context(doc, 0))) for doc in task.eval_docs]
    expected = {i: n - (30 - 10) for i, n in enumerate(context_tokens) if n > 20}  # max_gen_toks 10 (task YAML)
    assert expected, "the tiny prompts should exceed 20 tokens"
    if not allow:
        with pytest.raises(TruncationError, match="window of 30 tokens"):
            check_window(task, lm, "v", allow=False)
        return
    record = check_window(task, lm, "v", allow=True)
    assert {doc: cut for doc, cut, _ in record["cut"]} == expected


@pytest.mark.parametrize("allow", [False, True])
def test_a_window_no_prompt_fits_is_refused_even_with_allow_truncation(allow, tmp_path, tiny_model_dir, tiny_data_dir, capsys):
    """max_length=8 leaves no room beside nq_open's max_gen_toks of 10: lm-eval would stop on an
    AssertionError, so the sweep refuses it in one line whatever --allow-truncation says."""
    out = tmp_path / "out"
    args = ["run", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir},max_length=8", "--tasks", "nq_open",
            "--methods", "generic", "--instructions-per-method", "1", "--settings", "zero_shot", "--test-sample", "4",
            "--data-dir", str(tiny_data_dir), "--output", str(out), "--device", "cpu"] + (["--allow-truncation"] if allow else [])
    assert cli.main(args) == 2
    line = [x for x in capsys.readouterr().err.splitlines() if x.startswith("instructeval: error:")]
    assert len(line) == 1
    assert "max_gen_toks=10" in line[0] and "window of 8 tokens" in line[0] and "even with --allow-truncation" in line[0]
    assert not out.exists()
