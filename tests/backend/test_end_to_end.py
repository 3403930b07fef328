"""Whole evaluations give identical scores with ``hf`` and ``instructeval-hf``.

One ``simple_evaluate`` of three ``instructeval_agnews`` variants (two few-shot demo seeds and a
zero-shot one, pooled into one request list as the sweep runner does) on the tiny data, and a
small ``quick`` sweep through the runner on a classification and a generation task.
"""

from __future__ import annotations

import copy
import json

import pytest

METRICS = ("acc,none", "acc_norm,none", "acc_per_token,none")


def _agnews_tasks(data_dir, model_dir):
    from instructeval_tasks.task import base_task_config
    from instructeval_tasks.task import InstructEvalTask

    base = base_task_config("agnews")
    tasks = []
    for name, shots, seed in (("agnews_fs_d0", 2, 0), ("agnews_fs_d1", 2, 1), ("agnews_zs", 0, 0)):
        cfg = copy.copy(base)
        cfg.pop("tag", None)
        cfg["task"], cfg["num_fewshot"] = name, shots
        cfg["metadata"] = {"version": 1.0, "instructeval_task": "agnews", "method": "generic", "instruction_index": 2,
                           "demo_seed": seed, "data_dir": str(data_dir), "pretrained": str(model_dir)}
        tasks.append(InstructEvalTask(config=cfg))
    return tasks


@pytest.mark.parametrize("batch_size", [1, 8])
def test_simple_evaluate_agnews_identical(make_pair, tiny_model_dir, tiny_data_dir, batch_size):
    import lm_eval

    from instructeval_tasks import object_task_manager

    pair = make_pair("gpt2", batch_size=batch_size)
    runs = {}
    for name, lm in (("stock", pair.stock), ("new", pair.new)):
        runs[name] = lm_eval.simple_evaluate(model=lm, tasks=_agnews_tasks(tiny_data_dir, tiny_model_dir),
                                             log_samples=True, verbosity="ERROR", task_manager=object_task_manager())
    assert pair.new.prefix_stats["distinct_tokens"] > 0
    stock, new = runs["stock"], runs["new"]
    assert set(stock["results"]) == set(new["results"]) == {"agnews_fs_d0", "agnews_fs_d1", "agnews_zs"}
    for task, result in stock["results"].items():
        for metric in METRICS:
            assert metric in result
            assert new["results"][task][metric] == result[metric], (task, metric)
        for a, b in zip(stock["samples"][task], new["samples"][task], strict=True):
            assert a["doc_id"] == b["doc_id"]
            for (la, ga), (lb, gb) in zip(a["filtered_resps"], b["filtered_resps"], strict=True):
                assert abs(float(la) - float(lb)) <= 1e-4 and ga == gb


def test_quick_sweep_identical(tmp_path, tiny_model_dir, tiny_data_dir):
    from instructeval_tasks.sweep import run_sweep

    scores = {}
    for model in ("hf", "instructeval-hf"):
        report = run_sweep(
            model=model, model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks="agnews,nq_open",
            methods="null", output=tmp_path / model, profile="quick",
            overrides={"instructions_per_method": 1, "test_sample": 4, "n_selections": 1, "n_perturbed_selections": 1,
                       "n_orderings": 1},
            data_dir=str(tiny_data_dir), batch_size=4, device="cpu", progress=False, echo=lambda line: None,
        )
        found = {}
        for path in report.result_files:
            data = json.loads(path.read_text())
            for name, result in data["results"].items():
                found[name] = {k: v for k, v in result.items() if k.split(",")[0] in ("acc", "acc_per_token", "quasi_exact_match")}
        scores[model] = found
    assert scores["hf"] and scores["hf"] == scores["instructeval-hf"]
