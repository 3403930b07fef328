"""Stock-task results among the aggregation's inputs (``instructeval run --leaderboard-tasks``, any
``lm_eval`` run, or the Open LLM Leaderboard's results files, v1 and v2: see ``result_formats``).

A results entry is a stock result when its ``configs[T].metadata.leaderboard`` record says so
(written by ``--leaderboard-tasks``), or when ``T`` is a stock task of the leaderboard map
(the ``stock:`` blocks of the tasks' ``task_spec.yaml``, or ``--leaderboard-map FILE``). The record or the
map gives the InstructEval task and the metric compared.

Checks: a compared metric that is missing, or not a number in [0, 1], is an ``error
leaderboard-metric`` naming the file and metric (that result is dropped, the rest is kept).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from .issues import IssueLog
from .json_input import BadJson, parse_json_bytes
from .loading import (expand_paths, find_samples, is_accuracy, label_from_pretrained, parse_model_args, results_stamp,
                      warn_truncated)
from .result_formats import OPEN_LLM_V1, results_format, stock_tasks, v1_items, v1_model, v1_task


@dataclass(frozen=True)
class StockResult:
    """One stock-task score of one model."""

    file: str
    model: str
    task: str  # the InstructEval task it stands for
    stock_task: str
    metric: str
    filter: str
    value: float
    num_fewshot: int | None
    n_items: int | None
    test_ids: tuple[int, ...] | None
    data_source: str | None
    from_sweep: bool
    samples_path: str | None = None
    doc_ids_are_rows: bool = False  # the samples log's doc_id is the eval row (test_ids[i] is item i), not i
    source_format: str = "lm-eval"


def _metric_value(result: Mapping[str, Any], metric: str) -> tuple[str | None, Any]:
    """``(filter, value)`` of ``metric``: the ``none`` filter, else the only filter."""
    found = {key.split(",", 1)[1]: value for key, value in result.items() if "," in key and key.split(",", 1)[0] == metric}
    if "none" in found:
        return "none", found["none"]
    if len(found) == 1:
        return next(iter(found.items()))
    return None, None


def _model_name(data: Mapping[str, Any], from_sweep: bool) -> str | None:
    config = data.get("config") if isinstance(data.get("config"), Mapping) else {}
    if from_sweep and data.get("model_name"):
        return str(data["model_name"])
    pretrained = parse_model_args(config.get("model_args")).get("pretrained")
    if pretrained:
        return label_from_pretrained(str(pretrained))
    if data.get("model_name"):
        return label_from_pretrained(str(data["model_name"]))
    return None


def read_stock_file(path: Path, known: Mapping[str, tuple[str, str]], issues: IssueLog, *, samples: bool = True) -> list[StockResult]:
    """The stock results of one results file (unreadable files are reported by ``loading``)."""
    file = str(path)
    try:
        data = parse_json_bytes(path.read_bytes())
    except (OSError, BadJson):  # already reported, with its line, by ``loading``
        return []
    if results_format(data) == OPEN_LLM_V1:
        return read_open_llm_v1(data, file, known, issues)
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict) or not isinstance(data.get("configs"), dict):
        return []
    out = []
    for name in sorted(data["results"]):
        result = data["results"][name]
        config = data["configs"].get(name) or {}
        meta = config.get("metadata") if isinstance(config.get("metadata"), Mapping) else {}
        record = meta.get("leaderboard") if isinstance(meta.get("leaderboard"), Mapping) else None
        if record is None and name not in known:
            continue
        task, metric = (record.get("instructeval_task"), record.get("metric")) if record else known[name]
        if not isinstance(result, Mapping):
            continue
        warn_truncated(issues, meta, file, name, stock=True)  # instructeval run --allow-truncation
        filt, value = _metric_value(result, metric)
        if filt is None:
            issues.error("leaderboard-metric", f"stock task {name}: no {metric!r} value in results (keys: {sorted(result)})", file, name)
            continue
        if not is_accuracy(value):
            issues.error("leaderboard-metric", f"stock task {name}: {metric}={value!r} is not an accuracy in [0, 1]; not compared", file, name)
            continue
        model = _model_name(data, record is not None)
        if model is None:
            issues.error("no-model", f"stock task {name}: no model identity (model_name or model_args pretrained)", file, name)
            continue
        shots = config.get("num_fewshot", record.get("num_fewshot") if record else None)
        n_samples = (data.get("n-samples") or {}).get(name) or {}
        n_items = result.get("sample_len", n_samples.get("effective"))
        test_ids = record.get("test_ids") if record else None
        samples_path = None
        if samples:
            samples_path, note = find_samples(path, name, results_stamp(path), data["results"].keys())
            if note:
                issues.warn("samples-ambiguous", note, file, name)
        out.append(
            StockResult(
                file=file,
                model=model,
                task=str(task),
                stock_task=name,
                metric=str(metric),
                filter=filt,
                value=float(value),
                num_fewshot=int(shots) if isinstance(shots, (int, float)) and not isinstance(shots, bool) else None,
                n_items=int(n_items) if isinstance(n_items, (int, float)) and not isinstance(n_items, bool) else None,
                test_ids=tuple(int(i) for i in test_ids) if isinstance(test_ids, list) else None,
                data_source=record.get("data_source") if record else None,
                from_sweep=record is not None,
                samples_path=samples_path,
                doc_ids_are_rows=bool(record) and record.get("doc_ids") == "eval row",
            )
        )
    return out


def read_open_llm_v1(data: Mapping[str, Any], file: str, known: Mapping[str, tuple[str, str]],
                     issues: IssueLog) -> list[StockResult]:
    """The stock results of an Open LLM Leaderboard v1 file (``harness|<task>|<n-shot>`` entries)."""
    model = v1_model(data)
    if model is None:  # reported by loading (error no-model): nothing to match its scores to
        return []
    out, other = [], []
    for key in sorted(data["results"]):
        parsed = v1_task(str(key))
        if parsed is None:  # "all": the leaderboard's average
            continue
        name, shots = parsed
        result = data["results"][key]
        if name not in known:
            other.append(f"{name} ({shots}-shot)")
            continue
        task, metric = known[name]
        value = result.get(metric) if isinstance(result, Mapping) else None
        if not is_accuracy(value):
            shown = f"no {metric!r} value" if value is None else f"{metric}={value!r} is not an accuracy in [0, 1]"
            issues.error("leaderboard-metric", f"stock task {name} (Open LLM Leaderboard v1 {key}): {shown}; not compared", file, name)
            continue
        out.append(StockResult(file=file, model=str(model), task=str(task), stock_task=name, metric=str(metric), filter="none",
                               value=float(value), num_fewshot=shots, n_items=v1_items(data, key), test_ids=None,
                               data_source=None, from_sweep=False, source_format=OPEN_LLM_V1))
    if other:
        mmlu = [o for o in other if o.startswith("mmlu_")]
        listed = [o for o in other if not o.startswith("mmlu_")] + ([f"mmlu_* ({len(mmlu)} subjects)"] if mmlu else [])
        issues.warn("leaderboard-not-compared", f"Open LLM Leaderboard v1 results of {model}: {', '.join(listed)} have no "
                    f"InstructEval counterpart in the leaderboard map; not compared", file)
    return out


def load_stock_results(
    paths: Iterable[str | os.PathLike],
    issues: IssueLog,
    *,
    leaderboard_map: str | None = None,
    aliases: Mapping[str, str] | None = None,
    samples: bool = True,
) -> list[StockResult]:
    """Every stock result in ``paths`` (files or folders), with ``aliases`` applied to model names."""
    known = stock_tasks(leaderboard_map)
    files = sorted(expand_paths(paths, IssueLog()), key=lambda p: p.as_posix())
    found: list[StockResult] = []
    for path in files:
        for result in read_stock_file(path, known, issues, samples=samples):
            if aliases and result.model in aliases:
                result = StockResult(**{**result.__dict__, "model": aliases[result.model]})
            found.append(result)
    return found


def parse_aliases(values: Iterable[str]) -> dict[str, str]:
    """``["org/Model-1B=model-1b"]`` -> ``{"org/Model-1B": "model-1b"}``; a bad value raises ValueError.

        >>> parse_aliases(["HuggingFaceTB/SmolLM2-135M-Instruct=smollm2"])
        {'HuggingFaceTB/SmolLM2-135M-Instruct': 'smollm2'}
    """
    out = {}
    for value in values:
        name, sep, label = value.partition("=")
        if not sep or not name.strip() or not label.strip() or "=" in label:
            raise ValueError(f"--model-alias {value!r}: expected NAME=LABEL (one '=', neither side empty)")
        name, label = name.strip(), label.strip()
        if out.get(name, label) != label:
            raise ValueError(f"--model-alias {value!r}: {name} is already an alias of {out[name]}")
        out[name] = label
    return out
