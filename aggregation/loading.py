"""Reading and validating lm-eval results files into one :class:`RunSet` of variants.

Input: standard lm-eval results JSON files (``results_*.json``; a directory is searched
recursively for them). Each evaluated InstructEval variant ``T`` contributes its metric values
(``results[T]["<metric>,none"]``) and its identity, read from ``configs[T]["metadata"]`` -- never
from the task name. Per-sample logs ``samples_<T>_<stamp>.jsonl`` beside the results file are
located here and read later (``samples.py``).

Validation (every problem becomes an :class:`~instructeval_aggregation.issues.Issue`; a bad file
or variant never hides what the other files give):

- a file that is not JSON, truncated, not UTF-8 or nested absurdly deep: ``error bad-json`` naming
  the line (``json_input.py``), the file is skipped;
- JSON that is not a harness results file (no ``results``/``configs`` mappings): ``error not-results``,
  except ``instructeval run``'s own ``sweep.json`` plan (``note sweep-plan``, skipped); an Open LLM
  Leaderboard v1 file without its model name: ``error no-model``;
- a task without InstructEval metadata (no ``instructeval_task``): ``note not-instructeval``, ignored,
  unless its name starts with ``instructeval_`` (then ``error missing-metadata``);
- a variant lacking a required metadata key, or with values of the wrong type, or whose ``setting``
  contradicts ``num_fewshot``/``order_seed``/``perturbation``: ``error missing-metadata`` / ``bad-metadata``;
- a variant with no usable metric for its task type: ``error no-metric``;
- then the checks across files (``validation.py``): duplicates, protocol disagreements within a
  (model, task) -- sweep profile, K, ``test_ids``, ``test_sample``, ``test_seed``,
  ``truncate_words``, ``template_sha`` -- and instruction ids with two texts.
"""

from __future__ import annotations

import glob
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from instructeval_tasks.fingerprint import RUN_FINGERPRINT_KEY, SCORING_VERSION
from instructeval_tasks.options import CHAT_PLACEMENTS

from .catalog import KNOWN_RESULT_METRICS, SETTINGS, TASK_KIND, canonical_method
from .issues import AggregationError, IssueLog
from .json_input import BadJson, parse_json_bytes
from .records import RunInfo, RunSet, VariantResult
from .result_formats import (FORMATS_READ, LM_EVAL, OPEN_LLM_V1, is_open_llm_v2, is_stock_results, is_sweep_plan,
                             results_format, v1_model)
from .validation import check_instructions, check_protocol, deduplicate


def is_accuracy(value: Any) -> bool:
    """A finite number in [0, 1] (not a bool): what every compared or aggregated metric must be.

        >>> is_accuracy(0.5), is_accuracy(True), is_accuracy(float("nan")), is_accuracy(50)
        (True, False, False, False)
    """
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value <= 1

TASK_KINDS = ("cls", "mcq", "gqa")
_STAMP_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?")


# --------------------------------------------------------------------------------------- files


def expand_paths(paths: Iterable[str | os.PathLike], issues: IssueLog) -> list[Path]:
    """Results files named directly, plus every ``results_*.json`` below named directories (sorted)."""
    out: list[Path] = []
    seen: set[str] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(path.rglob("results_*.json"), key=lambda p: p.as_posix())
            if not found:
                issues.warn("no-results", "directory holds no results_*.json file", file=str(path))
            candidates = found
        elif path.is_file():
            candidates = [path]
        else:
            issues.error("missing-file", "no such file or directory", file=str(path))
            continue
        for candidate in candidates:
            key = os.path.realpath(candidate)
            if key not in seen:
                seen.add(key)
                out.append(candidate)
    return out


def parse_model_args(model_args: Any) -> dict[str, Any]:
    """``"pretrained=x,dtype=bfloat16"`` or a dict -> dict.

    Example:
        >>> parse_model_args("pretrained=/m/SmolLM2,dtype=bfloat16")["pretrained"]
        '/m/SmolLM2'
    """
    if isinstance(model_args, Mapping):
        return dict(model_args)
    if isinstance(model_args, str):
        out = {}
        for part in model_args.split(","):
            if "=" in part:
                key, value = part.split("=", 1)
                out[key.strip()] = value.strip()
        return out
    return {}


def seconds_per_variant(data: Mapping[str, Any]) -> float:
    """A results file's ``total_evaluation_time_seconds`` shared evenly over its variants (as ``sweep.chunk``
    records a call's); NaN where the file records none.

        >>> seconds_per_variant({"total_evaluation_time_seconds": "12", "results": {"a": {}, "b": {}}})
        6.0
    """
    try:
        return float(data.get("total_evaluation_time_seconds")) / max(1, len(data["results"]))
    except (TypeError, ValueError, KeyError):
        return math.nan


def label_from_pretrained(pretrained: str) -> str:
    """A model label from a ``pretrained`` value: hub ids as they are, local paths by last part.

    Example:
        >>> label_from_pretrained("facebook/opt-1.3b"), label_from_pretrained("/models/SmolLM2-135M/")
        ('facebook/opt-1.3b', 'SmolLM2-135M')
    """
    text = str(pretrained).strip().rstrip("/\\")
    if text.startswith(("/", ".", "~")) or text.count("/") >= 2 or "\\" in text:
        return re.split(r"[/\\]", text)[-1] or text
    return text


def results_stamp(path: Path) -> str | None:
    """The stamp shared by a results file and its samples files (``results_<stamp>.json``)."""
    stem = path.stem
    if stem.startswith("results_"):
        return stem[len("results_") :]
    match = _STAMP_RE.search(stem)
    return match.group(0) if match else None


def find_samples(
    path: Path, variant: str, stamp: str | None, siblings: Iterable[str] = ()
) -> tuple[str | None, str | None]:
    """``(samples file, note)``: ``samples_<variant>_<stamp>.jsonl`` beside ``path``.

    Without an exact stamp match, the only ``samples_<variant>_*.jsonl`` there is used (the sweep
    store names samples by write time, results by chunk); several candidates give none. A file that
    belongs to a longer sibling variant name (``<variant>_x``) is never taken.
    """
    folder = path.parent
    if stamp is not None:
        exact = folder / f"samples_{variant}_{stamp}.jsonl"
        if exact.is_file():
            return str(exact), None
    prefix = f"samples_{variant}_"
    longer = [f"samples_{s}_" for s in siblings if s != variant and s.startswith(variant + "_")]
    candidates = sorted(
        p
        for p in glob.glob(os.path.join(glob.escape(str(folder)), glob.escape(prefix) + "*.jsonl"))
        if not any(os.path.basename(p).startswith(other) for other in longer)
    )
    if len(candidates) > 1:  # a stamp starts with a digit; "<variant>__r1_<stamp>" is another variant's (an adaptive round)
        candidates = [p for p in candidates if os.path.basename(p)[len(prefix):][:1].isdigit()] or candidates
    if len(candidates) == 1:
        return candidates[0], None
    if len(candidates) > 1:
        return None, f"{len(candidates)} samples files for this variant and none matches the results stamp {stamp!r}"
    return None, None


# ------------------------------------------------------------------------------------ variants


def _as_int(value: Any, key: str, *, allow_none: bool) -> int | None:
    if value is None:
        if allow_none:
            return None
        raise ValueError(f"metadata {key!r} is null")
    if isinstance(value, bool):
        raise ValueError(f"metadata {key}={value!r} is not an integer")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    raise ValueError(f"metadata {key}={value!r} is not an integer")


def _metric_values(result: Mapping[str, Any], issues: IssueLog, file: str, name: str) -> dict[str, float]:
    """``{"acc": 0.5, ...}`` from ``{"acc,none": 0.5, ...}`` (filter ``none``, or the only filter)."""
    by_metric: dict[str, dict[str, Any]] = {}
    for key, value in result.items():
        if "," not in key:
            continue
        metric, filt = key.split(",", 1)
        if metric.endswith("_stderr") or metric not in KNOWN_RESULT_METRICS:
            continue
        by_metric.setdefault(metric, {})[filt] = value
    out: dict[str, float] = {}
    for metric, by_filter in sorted(by_metric.items()):
        if "none" in by_filter:
            value = by_filter["none"]
        elif len(by_filter) == 1:
            value = next(iter(by_filter.values()))
        else:
            issues.warn("ambiguous-filter", f"{metric}: several filters {sorted(by_filter)} and none is 'none'; ignored", file, name)
            continue
        if not is_accuracy(value):
            issues.warn("bad-metric", f"{metric}={value!r} is not an accuracy in [0, 1]; ignored", file, name)
            continue
        out[metric] = float(value)
    return out


def warn_truncated(issues: IssueLog, meta: Mapping[str, Any], file: str, name: str, *, stock: bool = False) -> None:
    """Warn (``truncated``) about a results entry whose metadata records prompts cut to the model's
    window (``truncation``, written under ``--allow-truncation``): :func:`truncation_message`."""
    cut = meta.get("truncation")
    if isinstance(cut, Mapping) and cut.get("items"):
        issues.warn("truncated", truncation_message(cut, stock=stock), file, name)


def truncation_message(cut: Mapping[str, Any], *, stock: bool = False) -> str:
    """The ``truncated`` warning of a variant's ``truncation`` record (``instructeval_tasks/sweep/window.py``),
    worded by what happened to the instruction in the cut prompts: kept whole (a null instruction has
    none to lose: its demos or input were cut), partly cut, or cut entirely. ``stock``: the record of a
    stock run (``--leaderboard-tasks``), whose prompt has no instruction.

        >>> null = {"items": 3, "of": 8, "window": 96, "instruction_tokens": 0, "cut": [[0, 4, "intact"], [5, 1, "intact"]]}
        >>> truncation_message(null).split("; ")[1]
        'the variant has no instruction (null), so only its demos or input were cut: the score is of prompts shorter than planned'
        >>> long = {"items": 2, "of": 8, "window": 96, "instruction_tokens": 40, "cut": [[0, 60, "cut entirely"], [1, 9, "partly cut"]]}
        >>> for part in truncation_message(long).split("; ")[1:]:
        ...     print(part)
        in 1 the instruction (40 tokens) was partly cut: there the score is only partly the instruction's
        in 1 it was cut entirely: there the score is not the instruction's at all
    """
    head = (("stock " if stock else "") + f"{cut.get('items')} of {cut.get('of')} prompts were cut to the model's window of {cut.get('window')} tokens "
            f"(run with --allow-truncation); ")
    rows = cut.get("cut")
    if not (isinstance(rows, list) and all(isinstance(r, (list, tuple)) and len(r) >= 3 for r in rows)):
        lost = cut.get("instruction_cut")  # a record without its per-item list: only this count
        if lost == 0:
            return head + "the instruction survived whole in all of them (the demos or input were cut)"
        return head + (f"the instruction lost tokens in {lost if isinstance(lost, int) else 'an unrecorded number'} of them "
                       "(partly or entirely: the record does not say), so this score is at most partly the instruction's")
    fates = [str(r[2]) for r in rows]
    kept, partly, entirely = fates.count("intact"), fates.count("partly cut"), fates.count("cut entirely")
    tokens = cut.get("instruction_tokens")
    if not partly and not entirely:
        if tokens == 0:
            subject = "the stock task has no instruction" if stock else "the variant has no instruction (null)"
            return head + (f"{subject}, so only its demos or input were cut: the score is of prompts shorter than "
                           "planned")
        return head + ("the instruction survived whole in every one of them (the demos or input were cut): the score is "
                       "the instruction's, on prompts shorter than planned")
    size = f" ({tokens} tokens)" if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0 else ""
    parts = []
    if kept:
        parts.append(f"in {kept} the instruction{size} survived whole (the demos or input were cut)")
        size = ""
    if partly:
        parts.append(f"in {partly} the instruction{size} was partly cut: there the score is only partly the instruction's")
        size = ""
    if entirely:
        subject = "it" if parts else f"the instruction{size}"
        parts.append(f"in {entirely} {subject} was cut entirely: there the score is not the instruction's at all")
    return head + "; ".join(parts)


def _scoring_version(meta: Mapping[str, Any]) -> str | None:
    """The scoring version a sweep recorded in the variant's run fingerprint (None: a plain lm_eval run)."""
    run = meta.get(RUN_FINGERPRINT_KEY)
    value = run.get("scoring_version") if isinstance(run, Mapping) else None
    return None if value is None else str(value)


def _protocol(meta: Mapping[str, Any], setting: str, num_fewshot: int) -> dict[str, Any]:
    sweep = meta.get("sweep") if isinstance(meta.get("sweep"), Mapping) else {}
    profile = sweep.get("profile", sweep.get("name")) if sweep else None
    sweep_core = {k: v for k, v in sorted(sweep.items()) if not k.endswith("_sha") and k not in ("profile", "name")}
    return {
        "profile": profile,
        "num_fewshot": None if setting == "zero_shot" else num_fewshot,
        "test_ids": json.dumps(meta.get("test_ids"), sort_keys=True),
        "test_sample": meta.get("test_sample"),
        "test_seed": meta.get("test_seed"),
        "truncate_words": meta.get("truncate_words"),
        "template_sha": meta.get("template_sha"),
        "sweep": json.dumps(sweep_core, sort_keys=True, default=str),
        "plugin_version": meta.get("plugin_version"),
        "scoring_version": _scoring_version(meta),
        "data_source": meta.get("data_source"),
        "_sweep": dict(sweep),
    }


def parse_variant(
    name: str,
    result: Mapping[str, Any],
    config: Mapping[str, Any] | None,
    data: Mapping[str, Any],
    file: str,
    issues: IssueLog,
) -> VariantResult | None:
    """One results entry -> :class:`VariantResult`, or ``None`` (with an issue) when it cannot be used."""
    meta = (config or {}).get("metadata") if isinstance(config, Mapping) else None
    if isinstance(meta, Mapping) and isinstance(meta.get("harness"), Mapping):
        return None  # a variant of lm-eval's own task (--harness-tasks): read by harness_effects
    if isinstance(meta, Mapping) and meta.get("task_type") == "ni":
        return None  # a Natural Instructions variant: read by ni_report
    if not isinstance(meta, Mapping) or "instructeval_task" not in meta:
        if name.startswith("instructeval_") and not (data.get("group_subtasks") or {}).get(name):
            issues.error("missing-metadata", "no InstructEval metadata (configs[T].metadata.instructeval_task)", file, name)
        else:
            issues.note("not-instructeval", "not an InstructEval variant; ignored", file, name)
        return None
    required = ["instructeval_task", "task_type", "method", "setting", "num_fewshot"]
    missing = [k for k in required if k not in meta]
    if not any(meta.get(k) is not None for k in ("instruction_id", "instruction_index", "instruction_sha")):
        missing.append("instruction_id")
    setting = meta.get("setting")
    if setting in ("few_shot", "perturbed", "ordering") and meta.get("demo_seed") is None:
        missing.append("demo_seed")
    if setting == "ordering" and meta.get("order_seed") is None:
        missing.append("order_seed")
    if setting == "perturbed" and not meta.get("perturbation"):
        missing.append("perturbation")
    if missing:
        issues.error("missing-metadata", f"metadata lacks required key(s): {', '.join(missing)}", file, name)
        return None
    try:
        task = str(meta["instructeval_task"]).removeprefix("instructeval_")
        task_type = str(meta["task_type"]).lower()
        if task_type not in TASK_KINDS:
            raise ValueError(f"task_type={meta['task_type']!r} is not one of {', '.join(TASK_KINDS)}")
        if task in TASK_KIND and TASK_KIND[task] != task_type:
            raise ValueError(f"task_type={task_type!r} but {task} is a {TASK_KIND[task]} task")
        if setting not in SETTINGS:
            raise ValueError(f"setting={setting!r} is not one of {', '.join(SETTINGS)}")
        num_fewshot = _as_int(meta["num_fewshot"], "num_fewshot", allow_none=False)
        if num_fewshot < 0:
            raise ValueError(f"num_fewshot={num_fewshot} is negative")
        demo_seed = _as_int(meta.get("demo_seed"), "demo_seed", allow_none=True)
        order_seed = _as_int(meta.get("order_seed"), "order_seed", allow_none=True)
        perturbation = meta.get("perturbation") or None
        perturbation_seed = _as_int(meta.get("perturbation_seed"), "perturbation_seed", allow_none=True)
        index = _as_int(meta.get("instruction_index"), "instruction_index", allow_none=True)
        if setting == "zero_shot" and (num_fewshot != 0 or perturbation or order_seed is not None):
            raise ValueError("setting=zero_shot needs num_fewshot=0, no perturbation and no order_seed")
        if setting == "few_shot" and (num_fewshot == 0 or perturbation or order_seed is not None):
            raise ValueError("setting=few_shot needs num_fewshot>0, no perturbation and no order_seed")
        if setting == "ordering" and (num_fewshot == 0 or perturbation):
            raise ValueError("setting=ordering needs num_fewshot>0 and no perturbation")
    except ValueError as err:
        issues.error("bad-metadata", str(err), file, name)
        return None
    text = meta.get("instruction_text")
    method = canonical_method(meta.get("method"), text)
    if meta.get("instruction_id") is not None:
        instruction = str(meta["instruction_id"])
    elif index is not None:
        instruction = f"#{index}"
    else:
        instruction = f"sha:{meta['instruction_sha']}"

    metrics = _metric_values(result, issues, file, name)
    wanted = ("quasi_exact_match",) if task_type == "gqa" else ("acc_per_token", "acc", "acc_norm")
    if not any(m in metrics for m in wanted):
        issues.error("no-metric", f"no usable metric among {', '.join(wanted)} in results", file, name)
        return None

    model_args = parse_model_args((data.get("config") or {}).get("model_args"))
    pretrained = model_args.get("pretrained") or meta.get("pretrained")
    if meta.get("model_label"):
        model = str(meta["model_label"])
    elif pretrained:
        model = label_from_pretrained(str(pretrained))
    elif data.get("model_name"):
        model = label_from_pretrained(str(data["model_name"]))
    else:
        issues.warn("no-model", "no model identity (model_label, pretrained or model_name); using 'unknown'", file, name)
        model = "unknown"
    if meta.get("placement") in CHAT_PLACEMENTS:  # a chat placement is its own protocol: its own rows
        model = f"{model}@{meta['placement']}"
    scoring = _scoring_version(meta)
    if scoring is not None and scoring != SCORING_VERSION:
        issues.warn("scoring-version", f"scored under scoring_version {scoring!r}; this release scores under "
                    f"{SCORING_VERSION!r}, so its numbers are not comparable with a rerun today", file, name)
    warn_truncated(issues, meta, file, name)
    n_params = (data.get("config") or {}).get("model_num_parameters")
    n_samples = (data.get("n-samples") or {}).get(name) or {}
    n_items = result.get("sample_len", n_samples.get("effective"))
    return VariantResult(
        seconds=seconds_per_variant(data),
        name=name,
        file=file,
        model=model,
        task=task,
        task_type=task_type,
        method=method,
        instruction=instruction,
        instruction_index=index,
        instruction_sha=meta.get("instruction_sha"),
        instruction_text=text,
        setting=setting,
        num_fewshot=num_fewshot,
        demo_seed=None if setting == "zero_shot" else demo_seed,
        order_seed=order_seed,
        perturbation=perturbation,
        perturbation_seed=perturbation_seed if perturbation else None,
        metrics=metrics,
        n_items=int(n_items) if isinstance(n_items, (int, float)) and not isinstance(n_items, bool) else None,
        protocol=_protocol(meta, setting, num_fewshot),
        pretrained=str(pretrained) if pretrained else None,
        model_num_parameters=float(n_params) if isinstance(n_params, (int, float)) and n_params > 0 else None,
        metadata=dict(meta),
    )


def read_results_file(path: Path, issues: IssueLog, *, samples: bool = True) -> tuple[list[VariantResult], RunInfo | None]:
    """Variants of one results file; problems go to ``issues`` and never raise."""
    file = str(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        issues.error("unreadable", f"cannot read: {err.strerror or err}", file)
        return [], None
    try:
        data = parse_json_bytes(raw)
    except BadJson as err:
        issues.error("bad-json", str(err), file)
        return [], None
    kind = results_format(data)
    if kind == OPEN_LLM_V1:  # stock scores only: read by the leaderboard comparison (leaderboard_loading)
        if v1_model(data) is None:
            issues.error("no-model", "Open LLM Leaderboard v1 results without a model name (no config_general.model_name, "
                         "nor config.model_name in older files), so its scores cannot be matched to a model; add "
                         '"config_general": {"model_name": "<org>/<model>"} (the model\'s Hub id) to the file; skipped',
                         file)
        return [], None
    if kind != LM_EVAL:
        if is_sweep_plan(data):
            issues.note("sweep-plan", "the plan instructeval run writes beside its results, not a results file; skipped "
                        "(the results are the results_*.json files of the same folder)", file)
            return [], None
        issues.error("not-results", f"not a results file this reads; it reads {FORMATS_READ}", file)
        return [], None
    limit = (data.get("config") or {}).get("limit") if isinstance(data.get("config"), dict) else None
    if limit not in (None, 0):
        issues.warn("limit", f"the run used --limit {limit}: results cover only part of the test set", file)
    stamp = results_stamp(path)
    variants = []
    for name in sorted(data["results"]):
        result = data["results"][name]
        if not isinstance(result, Mapping):
            issues.error("not-results", "results entry is not an object", file, name)
            continue
        variant = parse_variant(name, result, data["configs"].get(name), data, file, issues)
        if variant is None:
            continue
        if samples:
            variant.samples_path, note = find_samples(path, name, stamp, data["results"].keys())
            if note:
                issues.warn("samples-ambiguous", note, file, name)
        variants.append(variant)
    if not variants:
        if is_stock_results(data) or _harness_only(data) or _ni_only(data):  # leaderboard_loading / harness_effects / ni_report
            return [], None
        if not any(i.file == file and i.level == "error" for i in issues.items):
            names = sorted(str(n) for n in data["results"])
            shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
            what = "Open LLM Leaderboard v2 results: " if is_open_llm_v2(names) else ""
            issues.warn("empty", f"{what}no InstructEval variant and no stock task of the leaderboard map in this results "
                        f"file (its tasks: {shown or 'none'})", file)
        return [], None
    sweeps = [v.protocol["_sweep"] for v in variants if v.protocol["_sweep"]]
    sweep = {k: val for k, val in sorted((sweeps[0] if sweeps else {}).items()) if not k.endswith("_sha")}
    run = RunInfo(
        file=file,
        model=", ".join(sorted({v.model for v in variants})),
        n_variants=len(variants),
        tasks=tuple(sorted({v.task for v in variants})),
        profile=variants[0].protocol["profile"],
        sweep=sweep,
        lm_eval_version=data.get("lm_eval_version"),
        plugin_version=", ".join(sorted({str(v.protocol["plugin_version"]) for v in variants if v.protocol["plugin_version"]})) or None,
        limit=limit,
    )
    return variants, run


def _harness_only(data: Mapping[str, Any]) -> bool:
    """Every entry is a variant of lm-eval's own task (``--harness-tasks``)."""
    configs = data.get("configs") or {}
    return bool(data["results"]) and all(
        isinstance((configs.get(name) or {}).get("metadata"), Mapping) and isinstance(configs[name]["metadata"].get("harness"), Mapping)
        for name in data["results"])


def _ni_only(data: Mapping[str, Any]) -> bool:
    """Every entry is a Natural Instructions variant (``ni_report`` reads them)."""
    configs = data.get("configs") or {}
    return bool(data["results"]) and all(
        isinstance((configs.get(name) or {}).get("metadata"), Mapping) and configs[name]["metadata"].get("task_type") == "ni"
        for name in data["results"])


def load_runs(paths: Iterable[str | os.PathLike], *, strict: bool = False, samples: bool = True) -> RunSet:
    """Read, validate and merge results files (and locate their per-sample logs).

    Args:
        paths: results files and/or directories (searched recursively for ``results_*.json``).
        strict: raise :class:`AggregationError` on any warning or error instead of collecting.
        samples: look for ``samples_<T>_<stamp>.jsonl`` beside each results file.

    Returns:
        A :class:`RunSet`; ``runset.issues`` lists everything that was dropped or needs attention.

    Raises:
        AggregationError: with ``strict``, on any warning or error (all are listed).
    """
    issues = IssueLog()
    files = sorted(expand_paths(paths, issues), key=lambda p: p.as_posix())
    variants: list[VariantResult] = []
    runs: list[RunInfo] = []
    for path in files:
        found, run = read_results_file(path, issues, samples=samples)
        variants.extend(found)
        if run is not None:
            runs.append(run)
    variants = deduplicate(variants, issues)
    variants = check_protocol(variants, issues)
    variants = check_instructions(variants, issues)
    runset = RunSet(variants=variants, runs=runs, issues=issues)
    if strict:
        issues.raise_if(strict=True)
    return runset


__all__ = ["AggregationError", "RunInfo", "RunSet", "VariantResult", "load_runs", "read_results_file"]
