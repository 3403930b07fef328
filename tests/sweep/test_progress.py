"""The sweep's progress bar advances per variant, and each variant's time is its own harness call."""

from __future__ import annotations

import json
import re

from instructeval_tasks.sweep import run_sweep
from instructeval_tasks.sweep import chunk


def test_progress_advances_per_variant_with_measured_times(tmp_path, tiny_model_dir, tiny_data_dir, capsys, monkeypatch):
    import lm_eval

    calls: list[tuple[str, list[str]]] = []
    real = lm_eval.simple_evaluate

    def recording(*args, **kwargs):
        calls.append(("evaluate", [t.config.task for t in kwargs["tasks"]]))
        return real(*args, **kwargs)

    monkeypatch.setattr(lm_eval, "simple_evaluate", recording)
    timed: list[tuple[str, float]] = []
    evaluate_chunk = chunk.evaluate_chunk

    def spy(*args, on_variant=None, **kwargs):
        def callback(variant, results, seconds):
            calls.append(("done", [variant.name]))
            timed.append((variant.name, seconds))
            on_variant(variant, results, seconds)
        return evaluate_chunk(*args, on_variant=callback, **kwargs)

    monkeypatch.setattr(chunk, "evaluate_chunk", spy)
    report = run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks="agnews",
                       methods="null", output=tmp_path / "out", profile="quick",
                       overrides={"instructions_per_method": 1, "test_sample": 2}, data_dir=str(tiny_data_dir),
                       device="cpu", progress=True)
    err = capsys.readouterr().err
    assert report.evaluated == 7 and len(report.result_files) == 1  # one chunk, saved as one file
    # One harness call per variant, each followed by its own progress step.
    assert [kind for kind, _ in calls] == ["evaluate", "done"] * 7
    assert all(len(names) == 1 for _, names in calls)
    for step in range(1, 8):
        assert f"| {step}/7 [" in err, err
    shown = re.findall(r"done (\S+): \S+=\S+ \((\d+\.\d) s\)", err)
    assert [name for name, _ in shown] == [name for name, _ in timed]
    assert [f"{seconds:.1f}" for _, seconds in timed] == [s for _, s in shown]
    saved = json.loads(report.result_files[0].read_text())
    assert sorted(saved["results"]) == sorted(saved["configs"]) == sorted(name for name, _ in timed)


def test_stock_path_requests_are_shown_per_variant_summed_and_recorded(tmp_path, tiny_model_dir, tiny_data_dir, capsys):
    """instructeval-hf with the prefix path off: every progress line, the end of the sweep and the
    results file say how many requests ran on the stock path, and why."""
    report = run_sweep(model="instructeval-hf", model_args=f"pretrained={tiny_model_dir},dtype=float32,prefix_sharing=false",
                       tasks="agnews", methods="null", output=tmp_path / "out", profile="quick",
                       overrides={"instructions_per_method": 1, "test_sample": 2}, data_dir=str(tiny_data_dir),
                       device="cpu", progress=True)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("done instructeval_agnews")]
    assert len(lines) == 7
    assert all(line.endswith("[8 of 8 requests on the stock path: loglikelihood request: prefix_sharing=False]") for line in lines), lines
    assert ("instructeval-hf: 7 variant(s) ran requests on the stock hf path [56 of 56 requests on the stock path: "
            "loglikelihood request: prefix_sharing=False]") in err
    saved = json.loads(report.result_files[0].read_text())
    record = saved["config"]["instructeval_hf"]
    assert (record["prefix_requests"], record["stock_requests"]) == (0, 56)
    assert record["stock_reasons"] == {"loglikelihood request: prefix_sharing=False": 56}
