"""One chunk of a sweep: build its variants' tasks, evaluate them on a loaded model, merge the results.

The step every executor runs (``evaluate_job``, in the sweep's process or in a Ray worker), and what
it needs: the model to load (``ModelSpec``), the chunk (``ChunkJob``), the in-memory task config of
a variant (``base_task_config``, ``variant_config``). The orchestration that plans, claims and saves
chunks is ``runner``'s; nothing here imports it.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from itertools import groupby
from typing import Any, Callable

from .. import object_task_manager
from ..errors import UserError
from ..specs import get_spec
from .budget import BUDGET_KEY
from .env_info import environment_info_once
from .job import Chunk, ChunkOfVariants
from .plan import Variant, fingerprint
from .profiles import Profile
from .window import ALLOW_TRUNCATION_KEY, check_window
from .validate import check_chat_template, parse_model_args


def variant_config(base: dict[str, Any], variant: Variant, profile: Profile, metadata: dict[str, Any]) -> dict[str, Any]:
    cfg = copy.copy(base)
    cfg.pop("tag", None)
    cfg["task"] = variant.name
    cfg["task_alias"] = f"{get_spec(variant.task).title} | {variant.entry.id} | {variant.setting_code}"
    cfg["num_fewshot"] = variant.num_fewshot(profile)
    cfg["metadata"] = metadata
    return cfg


# Local transformers backends: without a device, HFLM asks for "cuda" and the model load fails on a
# CPU-only machine (transformers' allocator warm-up asserts), although HFLM itself would fall back.
_LOCAL_HF_BACKENDS = ("hf", "hf-auto", "huggingface", "instructeval-hf")


def default_device(model: str) -> str | None:
    """``"cuda"`` or ``"cpu"`` (whichever torch can use) for the local HF backends; None for others,
    which keep their own default.

        >>> default_device("local-completions") is None
        True
    """
    if model not in _LOCAL_HF_BACKENDS:
        return None
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class ModelLoadError(UserError, RuntimeError):
    """The backend could not create the model from its arguments (a missing folder, an unreachable hub
    id, an unknown argument); the message names the backend, the arguments and the cause."""


def load_model(model: str, model_args: str | dict | None, *, batch_size: int | str, max_batch_size: int | None, device: str | None):
    """The harness LM, created once for the whole sweep.

    Raises:
        ModelLoadError: the backend refused its arguments or found no model (one line, exit 2).
    """
    import lm_eval.api.registry

    cls = lm_eval.api.registry.get_model(model)
    device = device or default_device(model)
    extra = {"batch_size": batch_size, "max_batch_size": max_batch_size, "device": device}
    try:
        if isinstance(model_args, dict):
            return cls.create_from_arg_obj(model_args, extra)
        return cls.create_from_arg_string(model_args or "", extra)
    except UserError:
        raise
    except (OSError, ValueError, TypeError, ImportError) as err:  # not found, offline, bad argument
        cause = (str(err).strip().splitlines() or [""])[0]
        raise ModelLoadError(f"--model {model} --model_args {model_args or ''!s}: the model could not be loaded "
                             f"({type(err).__name__}: {cause})") from err


@dataclass(frozen=True)
class ModelSpec:
    """How to load the sweep's model: what a worker needs to create its own copy (picklable)."""

    model: str
    model_args: str | dict | None
    label: str
    batch_size: int | str = 8
    max_batch_size: int | None = None
    device: str | None = None

    def resolved_device(self) -> str | None:
        """The device the model loads on: the one asked for, else the machine's default (per worker)."""
        return self.device or default_device(self.model)

    def load(self):
        return load_model(self.model, self.model_args, batch_size=self.batch_size,
                          max_batch_size=self.max_batch_size, device=self.resolved_device())


@dataclass
class ChunkJob(ChunkOfVariants):
    """The pending variants of one (task, instruction) chunk: one results file (a ``job.Chunk``)."""

    key: str
    variants: list[Variant]
    poolable = True  # budgeted chunks of one placement share a harness call (``pool_key``)

    def restricted(self, variants: list[Variant]) -> "ChunkJob":
        """The same chunk for ``variants`` only (those still missing after another process saved some)."""
        return chunk_jobs(variants)[0]

    def evaluate(self, lm: Any, spec: "ModelSpec", profile: Profile, bases: dict[str, dict[str, Any]], *,
                 log_samples: bool, on_variant: Callable[[Variant, dict[str, Any], float], None] | None = None
                 ) -> tuple[dict[str, Any], dict[str, list[dict]]]:
        """``evaluate_chunk`` of its variants."""
        return evaluate_chunk(lm, self.variants, profile, bases, log_samples=log_samples, on_variant=on_variant)


def chunk_jobs(pending: list[Variant]) -> list[ChunkJob]:
    """The pending variants grouped into chunks, in plan order."""
    jobs = []
    for chunk, group in groupby(pending, key=lambda v: v.chunk):
        variants = list(group)
        # One file per pending set: extending a sweep never overwrites earlier chunks' results.
        key = f"{chunk}__{fingerprint({'variants': [v.name for v in variants]})[:8]}"
        jobs.append(ChunkJob(key, variants))
    return jobs


# Keys of a harness results dict that map task names to values: a chunk's are the union of its variants'.
_PER_TASK_KEYS = ("results", "group_subtasks", "configs", "versions", "n-shot", "higher_is_better", "n-samples",
                  "task_hashes")


def merge_results(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One harness results dict for a chunk from its variants' (one ``simple_evaluate`` each).

    Per-task maps are joined; run-level keys (config, versions of the tools, model info) are the
    first part's, ``end_time`` the last part's and ``total_evaluation_time_seconds`` their sum.
    """
    merged = copy.copy(parts[0])
    for key in _PER_TASK_KEYS:
        if any(key in part for part in parts):
            merged[key] = {k: v for part in parts for k, v in (part.get(key) or {}).items()}
    paths = [part.get("config", {}).get(PATH_KEY) for part in parts]
    if any(isinstance(p, dict) for p in paths):  # instructeval-hf's path counts: the chunk's sums
        merged["config"] = {**merged["config"], PATH_KEY: merge_path_counts([p for p in paths if isinstance(p, dict)])}
    if "end_time" in parts[-1]:
        merged["end_time"] = parts[-1]["end_time"]
    if all("total_evaluation_time_seconds" in part for part in parts):
        merged["total_evaluation_time_seconds"] = str(sum(float(p["total_evaluation_time_seconds"]) for p in parts))
    return merged


PATH_KEY = "instructeval_hf"  # results config: which path of instructeval-hf served the requests


def merge_path_counts(records: list[dict[str, Any]]) -> dict[str, Any]:
    """One ``instructeval_hf`` record from several evaluations' (request counts and reasons summed)."""
    merged = dict(records[0])
    for key in ("prefix_requests", "stock_requests"):
        merged[key] = sum(int(r.get(key) or 0) for r in records)
    reasons: dict[str, int] = {}
    for record in records:
        for why, n in (record.get("stock_reasons") or {}).items():
            reasons[why] = reasons.get(why, 0) + int(n)
    merged["stock_reasons"] = dict(sorted(reasons.items()))
    return merged


def stock_path_note(results: dict[str, Any]) -> str:
    """`` [N of M requests on the stock path: reasons]`` for a results dict whose requests fell back, else ``""``."""
    record = (results.get("config") or {}).get(PATH_KEY)
    if not isinstance(record, dict) or not record.get("stock_requests"):
        return ""
    total = int(record.get("prefix_requests") or 0) + int(record["stock_requests"])
    reasons = "; ".join(sorted(record.get("stock_reasons") or {}))
    pooled = f" of a call pooling {record['pooled_variants']} variants" if record.get("pooled_variants") else ""
    return f" [{record['stock_requests']} of {total} requests{pooled} on the stock path: {reasons}]"


def _prepared_task(lm: Any, variant: Variant, profile: Profile,
                   bases: dict[str, dict[str, Any]]) -> tuple[Any, list[int] | None, dict[str, Any]]:
    """``variant``'s harness task, its budget's cells (None: every item) and its chat keywords."""
    from ..task import base_task_config, task_from_config

    base = bases.setdefault(variant.task, base_task_config(variant.task))
    task = task_from_config(variant_config(base, variant, profile, variant.metadata))
    budget = variant.metadata.get(BUDGET_KEY)
    # A budgeted variant evaluates its cells through the harness's own doc selection
    # (``lm_eval --samples``); the logged doc_id stays the item's position in the test sample.
    items = list(budget["items"]) if budget else None
    chat = chat_arguments(lm, variant)
    # A prompt longer than the window would lose its instruction first: refused, or recorded.
    task.truncation = check_window(task, lm, variant.name, allow=bool(variant.metadata.get(ALLOW_TRUNCATION_KEY)),
                                   doc_ids=items, chat=chat)
    return task, items, chat


def evaluate_chunk(
    lm: Any,
    variants: list[Variant],
    profile: Profile,
    bases: dict[str, dict[str, Any]],
    *,
    log_samples: bool,
    on_variant: Callable[[Variant, dict[str, Any], float], None] | None = None,
) -> tuple[dict[str, Any], dict[str, list[dict]]]:
    """Evaluate the chunk's variants, one harness call each: (merged results, samples).

    ``on_variant(variant, its results, seconds)`` runs after each variant; ``seconds`` is the wall
    time of that variant's own ``simple_evaluate`` call (building its requests, the model's
    forward passes, scoring), so per-variant times are measured, not a share of the chunk.
    """
    import lm_eval

    parts: list[dict[str, Any]] = []
    samples: dict[str, list[dict]] = {}
    with environment_info_once():  # torch's collect_env once per process, not ~4 s per variant
        for variant in variants:
            started = time.monotonic()
            task, items, chat = _prepared_task(lm, variant, profile, bases)
            results = lm_eval.simple_evaluate(model=lm, tasks=[task], log_samples=log_samples, verbosity="ERROR",
                                              task_manager=object_task_manager(),
                                              samples={variant.name: items} if items is not None else None, **chat)
            variant_samples = results.pop("samples", None) or {}
            if log_samples:
                samples.update(variant_samples)
            seconds = time.monotonic() - started
            # as lm_eval's CLI records it (its tracker, not simple_evaluate): the report's cost per cell reads it
            results.setdefault("total_evaluation_time_seconds", str(seconds))
            parts.append(results)
            if on_variant is not None:
                on_variant(variant, results, seconds)
    return merge_results(parts), samples


# A pooled harness call takes budgeted chunks until their cells reach this many items: enough
# requests to fill the backend's batches and spread the call's fixed cost, few enough that an
# interrupted sweep loses at most a few seconds' worth of variants.
POOL_ITEMS = 200


def pool_key(job: Any) -> tuple | None:
    """What chunks must share to be evaluated in one harness call (their chat keywords); None for a
    chunk that is evaluated on its own: one that is not ``poolable`` (a harness task's job: one call already), or a chunk with a
    variant that is not budgeted (its variant has enough items to fill the batches alone)."""
    if not job.poolable or not all(BUDGET_KEY in v.metadata for v in job.variants):
        return None
    keys = {(v.placement, v.fewshot_as_multiturn) for v in job.variants}
    return next(iter(keys)) if len(keys) == 1 else None


def pool_items(job: "ChunkJob") -> int:
    """The cells a budgeted chunk evaluates (items summed over its variants)."""
    return sum(len(v.metadata[BUDGET_KEY]["items"]) for v in job.variants)


def evaluate_pool(
    lm: Any,
    jobs: list["ChunkJob"],
    profile: Profile,
    bases: dict[str, dict[str, Any]],
    *,
    log_samples: bool,
    on_variant: Callable[[Variant, dict[str, Any], float], None] | None = None,
) -> list[tuple[dict[str, Any], dict[str, list[dict]]]]:
    """Budgeted chunks (same ``pool_key``) in one harness call, split back into one (results,
    samples) per chunk, in ``jobs``' order.

    A budgeted variant evaluates a few items, so one call per variant spends more on the harness's
    fixed cost per call than on the model; pooled, the requests of all the chunks' variants share
    the backend's batches. Each variant's scores are its own (the harness scores tasks apart);
    the call's time and ``instructeval_hf`` request counts are the pool's: ``seconds`` and
    ``total_evaluation_time_seconds`` are the call's time divided evenly over its variants, and
    the counts' record says how many variants shared them (``pooled_variants``).
    """
    import lm_eval

    variants = [v for job in jobs for v in job.variants]
    started = time.monotonic()
    with environment_info_once():
        prepared = [_prepared_task(lm, v, profile, bases) for v in variants]
        chat = prepared[0][2]
        results = lm_eval.simple_evaluate(model=lm, tasks=[task for task, _, _ in prepared], log_samples=log_samples,
                                          verbosity="ERROR", task_manager=object_task_manager(),
                                          samples={v.name: items for v, (_, items, _) in zip(variants, prepared)},
                                          **chat)
    share = (time.monotonic() - started) / len(variants)
    pooled_samples = results.pop("samples", None) or {}
    record = (results.get("config") or {}).get(PATH_KEY)
    out = []
    for job in jobs:
        names = set(job.names)
        part = copy.copy(results)
        for key in _PER_TASK_KEYS:
            if key in results:
                part[key] = {k: v for k, v in (results[key] or {}).items() if k in names}
        part["config"] = dict(results["config"])  # each chunk's own (the model settings are added to it)
        if isinstance(record, dict):
            part["config"][PATH_KEY] = {**record, "pooled_variants": len(variants)}
        part["total_evaluation_time_seconds"] = str(share * len(job.variants))
        out.append((part, {k: v for k, v in pooled_samples.items() if k in names} if log_samples else {}))
        if on_variant is not None:
            for variant in job.variants:
                on_variant(variant, part, share)
    return out


def chat_arguments(lm: Any, variant: Variant) -> dict[str, Any]:
    """``simple_evaluate``'s chat keywords for ``variant``'s placement (none for ``description``);
    a chat placement on a model without a chat template is refused (one line)."""
    if variant.placement == "description":
        return {}
    check_chat_template(lm)
    return {"apply_chat_template": True, "fewshot_as_multiturn": variant.fewshot_as_multiturn is not False}


def evaluate_job(
    lm: Any,
    job: "Chunk",
    spec: ModelSpec,
    profile: Profile,
    bases: dict[str, dict[str, Any]],
    *,
    log_samples: bool,
    on_variant: Callable[[Variant, dict[str, Any], float], None] | None = None,
) -> tuple[dict[str, Any], dict[str, list[dict]]]:
    """One chunk, ready to save: ``evaluate_chunk`` plus the run's model settings in ``config``.

    The one step every executor runs (in the sweep's process or in a worker); the caller writes
    the returned (results, samples) through the ``SweepStore``. Each kind of chunk (``job.Chunk``: a
    ``ChunkJob``, a harness task's ``harness_runs.HarnessJob``) evaluates itself.
    """
    with environment_info_once():  # its environment record and git hash: once per process, quietly
        results, samples = job.evaluate(lm, spec, profile, bases, log_samples=log_samples, on_variant=on_variant)
    return _with_model_settings(results, spec), samples


def evaluate_jobs(
    lm: Any,
    jobs: list[Any],
    spec: ModelSpec,
    profile: Profile,
    bases: dict[str, dict[str, Any]],
    *,
    log_samples: bool,
    on_variant: Callable[[Variant, dict[str, Any], float], None] | None = None,
) -> list[tuple[dict[str, Any], dict[str, list[dict]]]]:
    """``evaluate_job`` for each of ``jobs``; budgeted chunks of one ``pool_key`` (``take_pool``'s)
    in one pooled harness call (``evaluate_pool``)."""
    if len(jobs) == 1:
        return [evaluate_job(lm, jobs[0], spec, profile, bases, log_samples=log_samples, on_variant=on_variant)]
    return [(_with_model_settings(results, spec), samples)
            for results, samples in evaluate_pool(lm, jobs, profile, bases, log_samples=log_samples,
                                                  on_variant=on_variant)]


def take_pool(queue: Any, *, max_items: int | None = None, max_jobs: int | None = None) -> list[Any]:
    """The next chunks to evaluate together: one chunk, followed (when it is budgeted) by the next
    ones of the same ``pool_key`` that the queue can hand out without waiting, while their cells
    stay within ``max_items`` (default ``POOL_ITEMS``; 0 evaluates every chunk alone) and their
    number within ``max_jobs`` (default: no limit; parallel workers share the chunks out). A chunk
    that does not fit goes back to the front of the queue."""
    max_items = POOL_ITEMS if max_items is None else max_items
    first = queue.take()
    if first is None:
        return []
    pool, key = [first], pool_key(first)
    if key is None:
        return pool
    items = pool_items(first)
    while items < max_items and (max_jobs is None or len(pool) < max_jobs) and (job := queue.take_ready()) is not None:
        if pool_key(job) != key or items + pool_items(job) > max_items:
            queue.retry(job)
            break
        pool.append(job)
        items += pool_items(job)
    return pool


def _with_model_settings(results: dict[str, Any], spec: ModelSpec) -> dict[str, Any]:
    results["config"].update(model=spec.model, model_args=parse_model_args(spec.model_args),
                             batch_size=spec.batch_size, device=spec.resolved_device())
    results["model_name"] = spec.label
    return results


