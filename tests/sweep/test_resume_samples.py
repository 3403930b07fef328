"""A saved variant without its samples file is not done: a resumed sweep that logs samples evaluates
it again (one line says which and why), for the nine tasks' variants and harness tasks' alike, and
nothing else is redone or lost. A resume refused for another protocol names the fields that differ
and the options that resume."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from instructeval_tasks.sweep import run_sweep
from instructeval_tasks.sweep.store import SweepStoreError

OVERRIDES = {"instructions_per_method": 1, "test_sample": 2, "settings": ["zero_shot", "few_shot"], "n_selections": 1}


def _sweep(model: Path, data: Path, out: Path, lines: list[str] | None = None, overrides: dict = OVERRIDES, **extra):
    return run_sweep(model="hf", model_args=f"pretrained={model},dtype=float32", tasks="agnews", methods="null,generic",
                     output=out, profile="quick", overrides=overrides, data_dir=str(data), device="cpu", progress=False,
                     harness_tasks="hellaswag", echo=(lines.append if lines is not None else lambda line: None), **extra)


def _results(root: Path) -> dict[str, tuple[str, dict]]:
    """``{variant: (its results file's name, its scores)}``; a variant in two results files fails."""
    found: dict[str, tuple[str, dict]] = {}
    for path in sorted(root.glob("results_*.json")):
        for name, scores in json.loads(path.read_text())["results"].items():
            assert name not in found, f"{name} is in {found[name][0]} and {path.name}"
            found[name] = (path.name, scores)
    return found


def _samples(root: Path) -> dict[str, tuple[str, str]]:
    """``{variant: (its samples file's name, content)}``."""
    found: dict[str, tuple[str, str]] = {}
    for path in sorted(root.glob("samples_*.jsonl")):
        name = path.name[len("samples_"):].rsplit("_", 1)[0]
        assert name not in found, f"two samples files of {name}"
        found[name] = (path.name, path.read_text())
    return found


@pytest.fixture(scope="module")
def finished(tmp_path_factory, tiny_model_dir, tiny_data_dir):
    out = tmp_path_factory.mktemp("resume_samples")
    report = _sweep(tiny_model_dir, tiny_data_dir, out)
    assert report.evaluated == 6  # agnews: null and generic, zero-shot and one few-shot set; hellaswag: null, generic
    return out / tiny_model_dir.name


def _copy(finished: Path, tmp_path: Path) -> Path:
    shutil.copytree(finished, tmp_path / "out" / finished.name)
    return tmp_path / "out" / finished.name


def test_a_deleted_samples_file_of_a_chunk_variant_is_evaluated_again_and_nothing_else(finished, tmp_path, tiny_model_dir,
                                                                                       tiny_data_dir):
    root = _copy(finished, tmp_path)
    before_results, before_samples = _results(root), _samples(root)
    gone = next(name for name in before_samples if name.startswith("instructeval_agnews__generic") and "__fs-d0" in name)
    chunk_file = before_results[gone][0]
    assert sorted(n for n, (f, _) in before_results.items() if f == chunk_file) == sorted([gone, gone.replace("__fs-d0", "__zs")])
    (root / before_samples[gone][0]).unlink()

    lines: list[str] = []
    dry = _sweep(tiny_model_dir, tiny_data_dir, root.parent, lines, dry_run=True)
    assert (dry.planned, dry.skipped) == (6, 5)
    assert (f"resume: {gone} is saved in {chunk_file} but its samples file (samples_{gone}_<time>.jsonl) is missing; "
            "evaluating it again") in lines

    lines.clear()
    report = _sweep(tiny_model_dir, tiny_data_dir, root.parent, lines)
    assert (report.planned, report.skipped, report.evaluated) == (6, 5, 1)
    assert sum(line.startswith("resume:") for line in lines) == 1
    after_results, after_samples = _results(root), _samples(root)  # each variant in one results file
    assert after_results[gone][0] != chunk_file and after_results[gone][1] == before_results[gone][1]
    assert after_results == {**before_results, gone: after_results[gone]}  # the others where they were, same scores
    assert {n: s for n, s in after_samples.items() if n != gone} == {n: s for n, s in before_samples.items() if n != gone}
    assert after_samples[gone][1] == before_samples[gone][1]

    lines.clear()
    again = _sweep(tiny_model_dir, tiny_data_dir, root.parent, lines)
    assert (again.skipped, again.evaluated) == (6, 0) and not any(line.startswith("resume:") for line in lines)


def test_an_empty_samples_file_of_a_harness_variant_is_evaluated_again(finished, tmp_path, tiny_model_dir, tiny_data_dir):
    root = _copy(finished, tmp_path)
    before_results, before_samples = _results(root), _samples(root)
    emptied = next(name for name in before_samples if name.startswith("hellaswag__generic"))
    (root / before_samples[emptied][0]).write_text("")

    lines: list[str] = []
    report = _sweep(tiny_model_dir, tiny_data_dir, root.parent, lines)
    assert (report.skipped, report.evaluated) == (5, 1)
    assert any(line.startswith(f"resume: {emptied} is saved in {before_results[emptied][0]} but its samples file")
               and line.endswith("is empty; evaluating it again") for line in lines), lines
    after_results, after_samples = _results(root), _samples(root)
    assert after_results["hellaswag__null"] == before_results["hellaswag__null"]  # its file keeps the null variant
    assert after_results[emptied][1] == before_results[emptied][1] and after_results[emptied][0] != before_results[emptied][0]
    assert after_samples == before_samples | {emptied: after_samples[emptied]}
    assert after_samples[emptied][1] == before_samples[emptied][1]


def test_variants_saved_with_no_log_samples_stay_done(tmp_path, tiny_model_dir, tiny_data_dir):
    common = dict(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks="agnews", methods="null",
                  output=tmp_path, profile="quick", overrides={"instructions_per_method": 1, "test_sample": 2,
                                                                "settings": ["zero_shot"]},
                  data_dir=str(tiny_data_dir), device="cpu", progress=False)
    assert run_sweep(**common, log_samples=False).evaluated == 1
    (path,) = (tmp_path / tiny_model_dir.name).glob("results_*.json")
    assert json.loads(path.read_text())["config"]["log_samples"] is False
    lines: list[str] = []
    report = run_sweep(**common, echo=lines.append)
    assert (report.skipped, report.evaluated) == (1, 0)
    assert any(line.startswith("resume: 1 saved variant(s) were run with --no-log-samples") for line in lines), lines


# ------------------------------------------------------------------------ another protocol, named

def test_another_k_is_refused_naming_the_field_and_the_option_that_resumes(finished, tiny_model_dir, tiny_data_dir):
    with pytest.raises(SweepStoreError) as refused:
        _sweep(tiny_model_dir, tiny_data_dir, finished.parent, dry_run=True,
               overrides={**OVERRIDES, "num_fewshot": 3})
    message = str(refused.value)
    assert "different protocol for 2 planned variant(s), e.g. instructeval_agnews__" in message
    assert "__fs-d0: num_fewshot 6 -> 3 (saved -> this run); rerun with the folder's values (--num-fewshot 6) to resume" in message
    assert "use another --output for the new protocol" in message


def test_another_harness_nshot_is_refused_naming_the_field_and_the_option_that_resumes(finished, tiny_model_dir,
                                                                                     tiny_data_dir):
    with pytest.raises(SweepStoreError, match=r"e\.g\. hellaswag__\S+: harness\.num_fewshot 0 -> 2 \(saved -> this run\); "
                                              r"rerun with the folder's values \(--harness-tasks hellaswag:0\)"):
        run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks=None, methods="null,generic",
                  output=finished.parent, profile="quick", overrides={"instructions_per_method": 1, "test_sample": 2},
                  data_dir=str(tiny_data_dir), device="cpu", progress=False, harness_tasks="hellaswag:2", dry_run=True)
