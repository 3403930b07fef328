"""Resuming never reuses scores of another model, dtype or data: the run fingerprint.

A finished one-variant sweep is re-run with one thing changed at a time; every change must stop
with a message naming the differing field, never print "skipped (done)".
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from instructeval_tasks import cli
from instructeval_tasks.sweep import run_sweep
from instructeval_tasks.sweep.identity import SCORING_VERSION
from instructeval_tasks.sweep.store import SweepStoreError

OVERRIDES = {"instructions_per_method": 1, "test_sample": 2, "settings": ["zero_shot"]}


def _run(model_dir: Path, data_dir: Path, out: Path, dtype: str = "float32", **extra):
    return run_sweep(model="hf", model_args=f"pretrained={model_dir},dtype={dtype}", tasks="agnews",
                     methods="null", output=out, profile="quick", overrides=OVERRIDES, data_dir=str(data_dir),
                     device="cpu", progress=False, **extra)


def _perturb_weights(model_dir: Path) -> None:
    from safetensors.torch import load_file, save_file

    path = model_dir / "model.safetensors"
    tensors = load_file(path)
    name = sorted(tensors)[0]
    tensors[name] = tensors[name] + 0.5
    save_file(tensors, path, metadata={"format": "pt"})


@pytest.fixture(scope="module")
def finished(tmp_path_factory, tiny_model_dir, tiny_data_dir):
    root = tmp_path_factory.mktemp("fingerprint")
    model = root / "a" / "model"
    shutil.copytree(tiny_model_dir, model)
    data = root / "data"
    shutil.copytree(tiny_data_dir, data)
    out = root / "out"
    report = _run(model, data, out)
    assert report.evaluated == 1
    return root, model, data, out


def test_fingerprint_is_recorded_in_sweep_json_and_every_results_file(finished):
    _, model, data, out = finished
    sweep = json.loads((out / "model" / "sweep.json").read_text())
    fp = sweep["run_fingerprint"]
    assert fp["backend"] == "hf" and fp["dtype"] == "float32" and fp["scoring_version"] == SCORING_VERSION
    assert fp["model_path"] == str(model.resolve()) and len(fp["model_files_sha256"]) == 64
    assert fp["model_args"] == {"pretrained": str(model.resolve()), "dtype": "float32"}
    assert fp["data"]["agnews"]["source"] == "local" and len(fp["data"]["agnews"]["eval_sha256"]) == 64
    results = list((out / "model").glob("results_*.json"))
    assert results
    for path in results:
        data_json = json.loads(path.read_text())
        for cfg in data_json["configs"].values():
            assert cfg["metadata"]["run_fingerprint"] == fp


def test_unchanged_rerun_skips(finished):
    _, model, data, out = finished
    again = _run(model, data, out)
    assert (again.skipped, again.evaluated) == (1, 0)


def test_same_basename_other_folder_and_weights_is_refused(finished):
    root, model, data, out = finished
    other = root / "b" / "model"  # same label "model"
    shutil.copytree(model, other)
    _perturb_weights(other)
    with pytest.raises(SweepStoreError, match=r"model_files_sha256: old .* vs new .*model_path: old .*/a/model.* vs new .*/b/model"):
        _run(other, data, out)


def test_weights_changed_in_place_are_refused(tmp_path, tiny_model_dir, tiny_data_dir):
    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model)
    out = tmp_path / "out"
    _run(model, tiny_data_dir, out)
    _perturb_weights(model)
    with pytest.raises(SweepStoreError, match=r"holds results of another model or data .*model_files_sha256: old '[0-9a-f]{8}"):
        _run(model, tiny_data_dir, out)


def test_other_dtype_is_refused_through_the_cli(finished, capsys):
    _, model, data, out = finished
    code = cli.main(["run", "--model", "hf", "--model_args", f"pretrained={model},dtype=bfloat16", "--tasks", "agnews",
                     "--methods", "null", "--settings", "zero_shot", "--instructions-per-method", "1",
                     "--test-sample", "2", "--data-dir", str(data), "--output", str(out), "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 2
    lines = [line for line in err.splitlines() if line.startswith("instructeval: error:")]
    assert len(lines) == 1, err
    assert "dtype: old 'float32' vs new 'bfloat16'" in lines[0]
    assert "model_args.dtype" in lines[0] and "--model-label" in lines[0]
    assert "skipped (done)" not in err


def test_changed_data_content_is_refused(finished):
    _, model, data, out = finished
    eval_file = data / "ag_news" / "eval.jsonl"
    original = eval_file.read_text()
    rows = [json.loads(line) for line in original.splitlines()]
    rows[0]["text"] = "A different first article."
    try:
        eval_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
        with pytest.raises(SweepStoreError, match=r"data\.agnews\.eval_sha256: old '[0-9a-f]{12}\.\.\.' vs new '[0-9a-f]{12}\.\.\.'"):
            _run(model, data, out, dry_run=True)
    finally:
        eval_file.write_text(original)


def test_results_without_a_fingerprint_are_refused(finished, tmp_path):
    _, model, data, out = finished
    legacy = tmp_path / "legacy"
    shutil.copytree(out, legacy)
    for path in (legacy / "model").glob("results_*.json"):
        content = json.loads(path.read_text())
        for cfg in content["configs"].values():
            del cfg["metadata"]["run_fingerprint"]
        path.write_text(json.dumps(content))
    with pytest.raises(SweepStoreError, match="without a run fingerprint"):
        _run(model, data, legacy, dry_run=True)


def test_a_new_task_in_the_same_label_keeps_the_saved_data_fields(finished):
    """Extending the sweep by a task compares data only for tasks both runs have."""
    _, model, data, out = finished
    report = run_sweep(model="hf", model_args=f"pretrained={model},dtype=float32", tasks="agnews,imdb",
                       methods="null", output=out, profile="quick", overrides=OVERRIDES, data_dir=str(data),
                       device="cpu", progress=False, dry_run=True)
    assert (report.planned, report.skipped) == (2, 1)
