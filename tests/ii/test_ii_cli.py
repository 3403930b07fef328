"""The issue's command through the real ``lm_eval`` console script: all 24 tasks, gold instructions,
a tiny offline model. With ``../shared/data`` present it runs exactly
``lm_eval --include_path instructeval_tasks --tasks instructeval_ii --model hf ... --metadata
'{"method": "gold", "data_dir": "../shared/data"}'``; without it, on this folder's tiny raw files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from instructeval_banks import load_bank
from instructeval_tasks.ii.names import II_IDS, source_name
from instructeval_tasks.ii.examples import build_rows
from instructeval_tasks.ii.source import local_path, read_examples

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED = REPO_ROOT.parent / "shared" / "data"


def test_lm_eval_runs_all_24_tasks_with_the_gold_bank(tiny_model_dir, ii_data_dir, tmp_path):
    data_dir = "../shared/data" if (SHARED / "instruction_induction").is_dir() else str(ii_data_dir)
    exe = Path(sys.executable).with_name("lm_eval")
    args = [str(exe) if exe.exists() else "lm_eval",
            "--include_path", "instructeval_tasks", "--tasks", "instructeval_ii",
            "--model", "hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32", "--device", "cpu",
            "--batch_size", "8", "--limit", "2", "--output_path", str(tmp_path / "out"), "--log_samples",
            "--metadata", json.dumps({"method": "gold", "data_dir": data_dir})]
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run(args, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    (results_file,) = (tmp_path / "out").rglob("results_*.json")
    results = json.loads(results_file.read_text())
    names = [f"instructeval_{i}" for i in II_IDS]
    assert sorted(results["results"]) == sorted(names)
    bank = load_bank()
    root = (REPO_ROOT / data_dir).resolve() if data_dir.startswith("..") else Path(data_dir)
    for name in names:
        score = results["results"][name]["execution_accuracy,none"]
        assert 0.0 <= score <= 1.0
        assert results["n-samples"][name]["effective"] == 2
        meta = results["configs"][name]["metadata"]
        task = source_name(name)
        assert meta["method"] == "gold" and meta["instruction_id"].startswith(f"gold-{name.removeprefix('instructeval_')}-")
        (samples_file,) = (tmp_path / "out").rglob(f"samples_{name}_*.jsonl")
        samples = sorted((json.loads(line) for line in samples_file.read_text().splitlines()), key=lambda s: s["doc_id"])
        path = local_path(root, "execute", task)
        rows = build_rows(task, read_examples(path, task), str(path))
        gold = bank.entry("gold", name.removeprefix("instructeval_"), index=0).text
        for sample, row in zip(samples, rows):
            assert sample["arguments"]["gen_args_0"]["arg_0"] == f"Instruction: {gold}\nInput: {row['input']}\nOutput:"
            assert sample["doc"]["answers"] == row["answers"]
            assert sample["execution_accuracy"] in (0.0, 1.0) or task in ("common_concept", "informal_to_formal")


def test_an_example_without_output_is_one_line_exit_2(tmp_path):
    """Instruction Induction data without ``output`` under ``instructeval run``: one line naming the
    file, the example and the field (it was a 38-line traceback, exit 1), and no output folder."""
    import shutil

    source = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "instruction_induction"
    if not source.is_dir():
        pytest.skip("../shared/data/instruction_induction is absent")
    data = tmp_path / "data"
    shutil.copytree(source, data / "instruction_induction")
    path = data / "instruction_induction" / "raw" / "execute" / "sum.json"
    raw = json.loads(path.read_text())
    first = next(iter(raw["examples"]))
    del raw["examples"][first]["output"]
    path.write_text(json.dumps(raw))
    proc = subprocess.run([sys.executable, "-m", "instructeval_tasks.cli", "run", "--model", "hf", "--model_args",
                           "pretrained=unused", "--tasks", "ii_sum", "--methods", "null", "--data-dir", str(data),
                           "--output", str(tmp_path / "out"), "--test-sample", "4"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("instructeval: error:")]
    assert errors == [f"instructeval: error: {path}: example {first!r}: example lacks the field 'output' "
                      f"(fields: ['input', 'x', 'y']); add it or remove the example"]
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()
