"""``instructeval-hf`` under plain ``lm_eval``: prompts longer than the window are refused, or recorded.

The harness cuts a long prompt from the left, the instruction first; ``lm_eval --model instructeval-hf``
used to print lm-eval's "Truncating N tokens from the left" per request, exit 0 and credit the scores
to an instruction the model never saw, with nothing in the results file. The backend now measures
every request before the first forward pass, by the sweep's rules (``instructeval_tasks.truncation``):
refused by default (exit 2 under the CLI), recorded per task with ``allow_truncation=True``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from instructeval_tasks.truncation import TruncationError, measure

TASKS_DIR = Path(__file__).resolve().parents[2] / "instructeval_tasks"
LONG = "Read the news story below very carefully, then decide which one of the four categories it belongs to. " * 3
LIMIT = 3


def _cli(argv: list[str], monkeypatch) -> int | None:
    """``lm_eval <argv>`` in this process: its exit code (None when it returns).

    The harness's own task index (thousands of YAML files, ~10 s) is left out: the tasks come from
    ``--include_path``. Its logging set-up is left out too (a handler it adds would keep this test's
    captured stderr after the test)."""
    import lm_eval.__main__
    import lm_eval.evaluator
    import lm_eval.tasks
    from lm_eval.__main__ import cli_evaluate

    for module in (lm_eval.__main__, lm_eval.evaluator):
        monkeypatch.setattr(module, "setup_logging", lambda *args, **kwargs: None)

    class OwnTasksOnly(lm_eval.tasks.TaskManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "include_defaults": False})

    monkeypatch.setattr(lm_eval.tasks, "TaskManager", OwnTasksOnly)
    monkeypatch.setattr(sys, "argv", ["lm_eval", *argv])
    try:
        cli_evaluate()
    except SystemExit as done:
        return done.code
    return None


def _agnews_args(model_dir: Path, data_dir: Path, out: Path, extra_model_args: str = "") -> list[str]:
    return ["--include_path", str(TASKS_DIR), "--tasks", "instructeval_agnews", "--model", "instructeval-hf",
            "--model_args", f"pretrained={model_dir},dtype=float32,max_length=48{extra_model_args}", "--device", "cpu",
            "--batch_size", "4", "--limit", str(LIMIT), "--num_fewshot", "2", "--output_path", str(out),
            "--metadata", json.dumps({"instruction": LONG, "data_dir": str(data_dir)})]


@pytest.fixture
def forward_calls(monkeypatch) -> list[int]:
    """The log-likelihood calls that reached the model (their request counts)."""
    from instructeval_tasks.backend import InstructEvalHFLM

    calls: list[int] = []
    original = InstructEvalHFLM._loglikelihood_tokens

    def counted(self, requests, *args, **kwargs):
        calls.append(len(requests))
        return original(self, requests, *args, **kwargs)

    monkeypatch.setattr(InstructEvalHFLM, "_loglikelihood_tokens", counted)
    return calls


def test_lm_eval_refuses_a_cut_instruction_in_one_line_with_exit_2(tmp_path, tiny_model_dir, tiny_data_dir, capsys,
                                                                 monkeypatch, forward_calls):
    out = tmp_path / "out"
    code = _cli(_agnews_args(tiny_model_dir, tiny_data_dir, out), monkeypatch)
    assert code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("lm_eval: error:")]
    assert len(errors) == 1, errors
    line = errors[0]
    assert f"task instructeval_agnews: {LIMIT} of {LIMIT} prompts do not fit the model's window of 48 tokens" in line
    assert "the longest, item " in line and "the instruction (" in line
    assert "allow_truncation=True to --model_args" in line
    assert forward_calls == []  # refused before any forward pass
    assert not list(out.rglob("results_*.json"))


def test_allow_truncation_records_the_sweeps_record_and_aggregate_warns(tmp_path, tiny_model_dir, tiny_data_dir,
                                                                        monkeypatch, forward_calls):
    from lm_eval.models.huggingface import HFLM

    from instructeval_aggregation import load_runs
    from instructeval_tasks.preview import build_task

    out = tmp_path / "out"
    assert _cli(_agnews_args(tiny_model_dir, tiny_data_dir, out, ",allow_truncation=True"), monkeypatch) is None
    assert forward_calls  # it ran
    (results_file,) = out.rglob("results_*.json")
    meta = json.loads(results_file.read_text())["configs"]["instructeval_agnews"]["metadata"]
    record = meta["truncation"]
    assert record["window"] == 48 and record["of"] == LIMIT and record["items"] == len(record["cut"]) > 0
    assert record["instruction_cut"] == sum(1 for _, _, fate in record["cut"] if fate != "intact") > 0
    # the same numbers as the sweep's measure of the same prompts with the same tokenizer
    lm = HFLM(pretrained=str(tiny_model_dir), device="cpu", batch_size=1, max_length=48)
    task = build_task("agnews", {"instruction": LONG, "data_dir": str(tiny_data_dir)}, 2)
    assert record == measure(task, lm, list(range(LIMIT)))
    warnings = [i for i in load_runs([out]).issues.sorted() if i.code == "truncated"]
    assert len(warnings) == 1 and "window of 48 tokens" in warnings[0].message


def _nq_task(data_dir: Path, **metadata):
    from instructeval_tasks.preview import build_task

    return build_task("nq_open", {"data_dir": str(data_dir), "method": "generic", "instruction_index": 0, **metadata}, 0)


def _evaluate(lm, task):
    import lm_eval

    from instructeval_tasks import object_task_manager

    return lm_eval.simple_evaluate(model=lm, tasks=[task], verbosity="ERROR", task_manager=object_task_manager())


def test_generation_is_measured_against_the_window_minus_max_gen_toks(tiny_model_dir, tiny_data_dir):
    from instructeval_tasks.backend import InstructEvalHFLM

    lm = InstructEvalHFLM(pretrained=str(tiny_model_dir), dtype="float32", device="cpu", batch_size=4, max_length=30)
    with pytest.raises(TruncationError, match=r"task instructeval_nq_open: \d+ of 8 prompts do not fit the model's window of 30"):
        _evaluate(lm, _nq_task(tiny_data_dir))
    lm.get_model_info()  # as simple_evaluate does after a finished evaluation
    # allowed by the task's own metadata (what `instructeval run --allow-truncation` sets)
    results = _evaluate(lm, _nq_task(tiny_data_dir, allow_truncation=True))
    record = results["configs"]["instructeval_nq_open"]["metadata"]["truncation"]
    expected = measure(_nq_task(tiny_data_dir), lm)  # max_gen_toks 10 (the task's YAML): 20 tokens of context
    assert expected is not None and record == expected


def test_a_request_no_window_setting_can_evaluate_is_refused_even_when_allowed(tiny_model_dir, tiny_data_dir):
    from instructeval_tasks.backend import InstructEvalHFLM

    lm = InstructEvalHFLM(pretrained=str(tiny_model_dir), dtype="float32", device="cpu", batch_size=4, max_length=10,
                          allow_truncation=True)
    with pytest.raises(TruncationError, match=r"max_gen_toks=10 \(.*\) leaves no room for a prompt in the model.s window of 10 tokens"):
        _evaluate(lm, _nq_task(tiny_data_dir))


def test_a_sweep_checks_its_variants_once(tmp_path, tiny_model_dir, tiny_data_dir, monkeypatch):
    """``instructeval run --allow-truncation --model instructeval-hf``: the sweep refuses or records; the
    backend does not measure (or refuse) the variants again."""
    import instructeval_tasks.backend.window as backend_window
    from instructeval_tasks.sweep import run_sweep

    def measured_twice(*args, **kwargs):
        raise AssertionError("the backend measured a variant the sweep had checked")

    monkeypatch.setattr(backend_window, "measure_task", measured_twice)
    out = tmp_path / "out"
    report = run_sweep(model="instructeval-hf", model_args=f"pretrained={tiny_model_dir},dtype=float32,max_length=24",
                       tasks="agnews", methods="generic", profile="quick", output=out, data_dir=str(tiny_data_dir),
                       overrides={"instructions_per_method": 1, "test_sample": 4, "settings": ["zero_shot"]},
                       allow_truncation=True, device="cpu", progress=False, echo=lambda line: None)
    assert report.evaluated == 1
    (meta,) = [c["metadata"] for c in json.loads(next(out.rglob("results_*.json")).read_text())["configs"].values()]
    assert meta["truncation"]["window"] == 24 and meta["truncation"]["items"] > 0


def test_a_stock_tasks_description_is_the_instruction_it_records(tmp_path, tiny_model_dir):
    """A task that is not InstructEval's: its (rendered) description heads the prompt, and is what the cut reaches."""
    from lm_eval.api.task import ConfigurableTask

    from instructeval_tasks.backend import InstructEvalHFLM

    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"subject": "news", "text": f"Story number {i} about the markets today.", "label": i % 2})
                            + "\n" for i in range(4)))
    config = {"task": "stock_like", "dataset_path": "json", "dataset_kwargs": {"data_files": {"test": str(rows)}},
              "test_split": "test", "output_type": "multiple_choice",
              "description": "Below is a story about {{subject}}; say whether it is good news or bad news.\n\n",
              "doc_to_text": "{{text}}\nAnswer:", "doc_to_choice": ["good", "bad"], "doc_to_target": "label",
              "metric_list": [{"metric": "acc"}]}
    lm = InstructEvalHFLM(pretrained=str(tiny_model_dir), dtype="float32", device="cpu", batch_size=4, max_length=24,
                          allow_truncation=True)
    record = _evaluate(lm, ConfigurableTask(config=config))["configs"]["stock_like"]["metadata"]["truncation"]
    described = "Below is a story about news; say whether it is good news or bad news.\n\n"
    assert record["instruction_tokens"] == len(lm.tok_encode(described)) > 0
    assert record["of"] == 4 and record["items"] == len(record["cut"]) > 0
    for _, cut, fate in record["cut"]:
        assert fate == ("partly cut" if cut < record["instruction_tokens"] else "cut entirely")
