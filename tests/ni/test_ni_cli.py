"""The documented command through the real ``lm_eval`` console script with the tiny offline model:
``lm_eval --include_path instructeval_tasks --tasks instructeval_ni_task190_snli_classification
--metadata '{"data_dir": "../shared/data"}'`` (on this folder's toy task file when ``../shared`` is
absent), and the pinned standard-encoding header of the real task190 file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from instructeval_tasks.ni.metrics import score
from instructeval_tasks.ni.prompt import render_header
from instructeval_tasks.ni.source import read_task_file

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED = REPO_ROOT.parent / "shared" / "data"
TASK = "instructeval_ni_task190_snli_classification"


def test_lm_eval_prints_exact_match_and_rouge_l(tiny_model_dir, ni_data_dir, tmp_path):
    data_dir = "../shared/data" if (SHARED / "natural_instructions").is_dir() else str(ni_data_dir)
    exe = Path(sys.executable).with_name("lm_eval")
    args = [str(exe) if exe.exists() else "lm_eval", "--include_path", "instructeval_tasks", "--tasks", TASK,
            "--model", "hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32", "--device", "cpu",
            "--limit", "2", "--output_path", str(tmp_path / "out"), "--log_samples",
            "--metadata", json.dumps({"data_dir": data_dir})]
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run(args, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    table = [line for line in proc.stdout.splitlines() if line.startswith("|")]
    assert any("exact_match" in line for line in table) and any("rougeL" in line for line in table), proc.stdout

    (samples_file,) = (tmp_path / "out").rglob(f"samples_{TASK}_*.jsonl")
    root = (REPO_ROOT / data_dir).resolve()
    task_file = read_task_file("task190_snli_classification", str(root))
    header = render_header(task_file, "definition_pos2")
    for line in samples_file.read_text().splitlines():
        sample = json.loads(line)
        instance = task_file.instances[sample["doc_id"]]
        assert sample["arguments"]["gen_args_0"]["arg_0"] == f"{header}\n\nInput: {instance['input']}\nOutput:"
        prediction = sample["resps"][0][0].split("\n")[0]
        assert {m: sample[m] for m in ("exact_match", "rougeL")} == score(prediction, instance["outputs"])


def test_task190_standard_header_is_pinned(shared_data_dir):
    header = render_header(read_task_file("task190_snli_classification", str(shared_data_dir)), "definition_pos2")
    assert header == (
        "Definition: In this task, you're given a pair of sentences, sentence 1 and sentence 2. Your job is to "
        "choose whether the two sentences clearly agree (entailment)/disagree (contradiction) with each other, or "
        "if this cannot be determined (neutral). Your answer must be in the form of the letters E, C, and N "
        "respectively.\n\n"
        "Positive Example 1 -\n"
        "Input: Sentence 1: Jon saw his friend Tom coming out of the grocery store with a bag of fruit. "
        "Sentence 2: Tom had been shopping for fruit to give Jon.\n"
        "Output: N\n\n"
        "Positive Example 2 -\n"
        "Input: Sentence 1: The girl transferred all the flowers from the boquet to a vase. "
        "Sentence 2: The flowers will soon wither.\n"
        "Output: N"
    )


def test_instructeval_run_with_an_adaptive_budget_and_induce_refuse_them_in_one_line(tmp_path):
    common = ["--model", "hf", "--model_args", "pretrained=unused", "--tasks", "ni_task190_snli_classification",
              "--output", str(tmp_path / "out")]
    expected = {
        "run": "--budget-design adaptive with --tasks ni_task190_snli_classification: its rounds are chosen from accuracy "
               "estimates, and a Natural Instructions task is scored by ROUGE-L; deal its cells in advance "
               "(--budget-design uniform or balanced) or drop --budget",
        "induce": "--tasks ni_task190_snli_classification: instructeval induce does not take the Natural Instructions "
                  "tasks; drop them from --tasks",
    }
    for command, extra in (("run", ["--methods", "null", "--budget", "0.5", "--budget-design", "adaptive"]),
                           ("induce", ["--method", "ape"])):
        proc = subprocess.run([sys.executable, "-m", "instructeval_tasks.cli", command, *common, *extra],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert proc.stderr.strip().splitlines() == [f"instructeval: error: {expected[command]}"]
        assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("extra, says", [
    (["--tasks", "ni_task190_snli_classification", "--settings", "few_shot"],
     "--settings few_shot plans no variant: ni_task190_snli_classification is zero-shot only (its header carries its "
     "examples); add zero_shot to --settings"),
    (["--tasks", "boolq", "--ni-prompt-format", "tk-instruct"],
     "--ni-prompt-format tk-instruct applies to the Natural Instructions tasks (--tasks ni or ni_<task>), and none is in "
     "--tasks; drop it"),
])
def test_instructeval_run_refuses_options_that_would_do_nothing(tmp_path, shared_data_dir, extra, says):
    proc = subprocess.run([sys.executable, "-m", "instructeval_tasks.cli", "run", "--model", "hf", "--model_args",
                           "pretrained=unused", "--methods", "null", "--data-dir", str(shared_data_dir),
                           "--output", str(tmp_path / "out"), *extra], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [f"instructeval: error: {says}"]
    assert not (tmp_path / "out").exists()
