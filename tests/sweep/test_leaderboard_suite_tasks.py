"""The leaderboard suites' own tasks offline (``--harness-tasks arc_easy,...,mmlu_marketing --data-dir``).

For each task, the null variant sends exactly the requests of a plain ``lm_eval`` run of the stock YAML
reading the same local rows, gets the same answers and the same scores (Winogrande's partial-context
scoring and TruthfulQA MC2's multi-answer aggregation included), and an instruction lands before the
task's own prompt (and its own description, where it has one), as the description placement says.
The rows are the first few of the real copies in ``../shared/data``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from instructeval_tasks.harness.local_data import LocalDataError, local_splits
from instructeval_tasks.harness.tasks import harness_index, stock_task_config
from instructeval_tasks.sweep import run_sweep

from harness_outputs import _entries, _same_answers, _samples

#: task -> (n-shot in the sweep, {split: file under the data folder}); the n-shots are small so that the
#: tiny model's 1,024 positions hold the prompt, the leaderboard's own are checked by the dry run below
SUITE = {
    "arc_easy": (0, {"train": "arc_easy/train.jsonl", "validation": "arc_easy/validation.jsonl",
                     "test": "arc_easy/eval.jsonl"}),
    "arc_challenge": (3, {"train": "arc_challenge/train.jsonl", "validation": "arc_challenge/validation.jsonl",
                          "test": "arc_challenge/eval.jsonl"}),
    "piqa": (0, {"validation": "piqa/eval.jsonl"}),
    "winogrande": (3, {"train": "winogrande/train.jsonl", "validation": "winogrande/eval.jsonl"}),
    "openbookqa": (0, {"train": "openbookqa/train.jsonl", "validation": "openbookqa/validation.jsonl",
                       "test": "openbookqa/eval.jsonl"}),
    "truthfulqa_mc1": (0, {"validation": "truthfulqa/eval.jsonl"}),
    "truthfulqa_mc2": (0, {"validation": "truthfulqa/eval.jsonl"}),
    "mmlu_marketing": (5, {"test": "mmlu/test/marketing.jsonl", "dev": "mmlu/dev/marketing.jsonl"}),
}
ROWS = 12


@pytest.fixture(scope="module")
def suite_data(shared_data_dir, tmp_path_factory) -> Path:
    """The first ``ROWS`` rows of every file the suite reads, in the same layout."""
    root = tmp_path_factory.mktemp("suite_data")
    for _, files in SUITE.values():
        for rel in files.values():
            target = root / rel
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                lines = (shared_data_dir / rel).read_text(encoding="utf-8").splitlines(keepends=True)
                target.write_text("".join(lines[:ROWS]), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def suite_sweep(tiny_model_dir, suite_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("suite_sweep")
    refs = ",".join(f"{task}:{shot}" if shot else task for task, (shot, _) in SUITE.items())
    report = run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks=None,
                       methods="null,generic", output=out, profile="quick",
                       overrides={"instructions_per_method": 1, "test_sample": 3}, data_dir=str(suite_data),
                       device="cpu", progress=False, harness_tasks=refs)
    return out, report


@pytest.fixture(scope="module")
def plain_run(suite_sweep, suite_data, tiny_model_dir, tmp_path_factory) -> Path:
    """One plain ``lm_eval`` run of every stock YAML (each reading the local rows, at the sweep's n-shot)
    on the items the sweep recorded."""
    out, _ = suite_sweep
    entries = _entries(out)
    tasks = tmp_path_factory.mktemp("plain_tasks")
    index = harness_index()
    samples = {}
    for task, (shot, files) in SUITE.items():
        samples[f"{task}_local"] = entries[f"{task}__null"]["meta"]["harness"]["test_ids"]
        # lm-eval builds a task's demo sampler from its training split even at 0-shot; PIQA's has no
        # local copy, so its plain run names none (no demo is drawn at 0-shot: the requests are the same)
        no_train = "" if "train" in files or not stock_task_config(task).get("training_split") else "training_split: null\n"
        (tasks / f"{task}_local.yaml").write_text(
            f"include: {index[task].yaml_path}\ntask: {task}_local\ndataset_path: json\ndataset_name: null\n"
            f"num_fewshot: {shot}\n{no_train}dataset_kwargs:\n  data_files:\n"
            + "".join(f"    {split}: {suite_data / rel}\n" for split, rel in files.items()))
    plain = tmp_path_factory.mktemp("plain")
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(
        [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32",
         "--include_path", str(tasks), "--tasks", ",".join(samples), "--seed", "0,1234,1234,1234",
         "--samples", json.dumps(samples), "--device", "cpu", "--batch_size", "8", "--output_path", str(plain),
         "--log_samples"], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return plain


@pytest.mark.parametrize("task", sorted(SUITE))
def test_the_null_variant_is_the_stock_task(suite_sweep, plain_run, task):
    out, _ = suite_sweep
    entry = _entries(out)[f"{task}__null"]
    assert entry["meta"]["harness"]["num_fewshot"] == SUITE[task][0]
    plain, ours = _samples(plain_run, f"{task}_local"), _samples(out, f"{task}__null")
    assert sorted(plain) == sorted(ours) and len({d for d, _ in ours}) == 3
    for key, sample in ours.items():
        assert plain[key]["arguments"] == sample["arguments"]  # every request string, byte for byte
        assert _same_answers(plain[key]["resps"], sample["resps"]), (plain[key]["resps"], sample["resps"])
        assert _same_answers(plain[key]["filtered_resps"], sample["filtered_resps"])
    plain_scores = json.loads(next(plain_run.rglob("results_*.json")).read_text())["results"][f"{task}_local"]
    scored = [m for m in entry["result"] if "," in m]
    assert scored, entry["result"]
    for metric in scored:
        assert plain_scores[metric] == pytest.approx(entry["result"][metric], abs=0), metric


@pytest.mark.parametrize("task", sorted(SUITE))
def test_the_instruction_lands_before_the_task_prompt(suite_sweep, task):
    out, _ = suite_sweep
    entries = _entries(out)
    (generic,) = [k for k, e in entries.items() if e["meta"]["harness"]["task"] == task
                  and e["meta"]["harness"]["method"] == "generic"]
    meta = entries[generic]["meta"]["harness"]
    assert meta["placement"] == "description"
    null, instructed = _samples(out, f"{task}__null"), _samples(out, generic)
    assert null.keys() == instructed.keys()
    description = stock_task_config(task).get("description") or ""
    for key, sample in null.items():
        args = sample["arguments"]
        assert len(args) >= 2  # one request per answer choice (Winogrande: one context per option)
        for name, request in args.items():  # only the context changes: the instruction, a blank line, the rest
            assert instructed[key]["arguments"][name]["arg_0"] == f"{meta['instruction']}\n\n{request['arg_0']}"
            assert request["arg_0"].startswith(description)
            assert instructed[key]["arguments"][name]["arg_1"] == request["arg_1"]


def test_winogrande_scores_the_option_inside_the_sentence_and_mc2_pools_the_true_answers(suite_sweep):
    out, _ = suite_sweep
    wino = next(iter(_samples(out, "winogrande__null").values()))
    contexts = {a["arg_0"] for a in wino["arguments"].values()}
    continuations = {a["arg_1"] for a in wino["arguments"].values()}
    assert len(contexts) == 2 and len(continuations) == 1  # partial scoring: the option sits in the context
    mc2 = next(iter(_samples(out, "truthfulqa_mc2__null").values()))
    assert len(mc2["arguments"]) == len(mc2["doc"]["mc2_targets"]["choices"]) and 0.0 <= mc2["acc"] <= 1.0


def test_the_leaderboard_suite_plans_at_its_own_nshots_and_a_missing_demo_split_is_one_line(shared_data_dir, tiny_model_dir,
                                                                                             tmp_path):
    report = run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks=None, methods="null",
                       output=tmp_path / "dry", profile="quick", overrides={"test_sample": 2},
                       data_dir=str(shared_data_dir), device="cpu", progress=False, dry_run=True,
                       harness_tasks="arc_challenge:25,winogrande:5,mmlu:5,truthfulqa_mc2,piqa")
    assert report.planned == 1 + 1 + 57 + 1 + 1
    rows, record = local_splits("piqa", stock_task_config("piqa"), str(shared_data_dir), zero_shot=True)
    assert rows["train"] == [] and len(rows["validation"]) == 1000
    with pytest.raises(LocalDataError, match=r"^piqa: needs split 'train' of \S+, which the local copy does not hold"):
        local_splits("piqa", stock_task_config("piqa"), str(shared_data_dir))
    rows, _ = local_splits("mmlu_professional_law", stock_task_config("mmlu_professional_law"), str(shared_data_dir))
    assert len(rows["test"]) == 1000 and len(rows["dev"]) == 5
