"""Evaluate a whole sweep for one model in one process with one model load.

``run_sweep`` builds every variant of the plan as an in-memory ``InstructEvalTask`` and hands them,
one chunk (task x instruction) at a time, to ``lm_eval.simple_evaluate`` with the already-loaded
model, so any harness backend works and identical requests within a chunk are computed once. Each
chunk is saved as a standard results file before the next starts (see ``store``).

Example:
    >>> report = run_sweep(model="hf", model_args="pretrained=models/smollm2-135m-instruct",
    ...                    tasks=["agnews"], methods=["null", "generic"], profile="quick",
    ...                    data_dir="../shared/data", output="out/sweep")   # doctest: +SKIP
"""

from __future__ import annotations

import copy
import datetime as _dt
import logging
import sys
import time
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any, Callable

from instructeval_banks import join_bank_dirs, load_layered_bank

from .. import TASKS_DIR, __version__, object_task_manager
from ..specs import TASK_SPECS, get_spec
from .plan import MODEL_ARG_KEYS, Variant, build_plan, fingerprint
from .profiles import Profile, get_profile
from .interrupts import StopRequests
from .store import SweepStore, model_label_from_args

log = logging.getLogger(__name__)

PRIMARY_METRICS = ("acc_per_token,none", "acc,none", "quasi_exact_match,none")


@dataclass
class SweepReport:
    """What a sweep did: where, how many variants were planned, skipped as done, and evaluated."""

    output_dir: Path
    planned: int
    skipped: int
    evaluated: int = 0
    result_files: list[Path] = field(default_factory=list)
    seconds: float = 0.0


def parse_model_args(model_args: str | dict | None) -> dict[str, Any]:
    if isinstance(model_args, dict):
        return dict(model_args)
    from lm_eval.utils import simple_parse_args_string

    return simple_parse_args_string(model_args or "")


def resolve_names(values: list[str] | str, known: list[str], what: str) -> list[str]:
    """Split comma lists, expand ``all``, and reject unknown names with the list of known ones."""
    if isinstance(values, str):
        values = [values]
    names = [v.strip() for item in values for v in item.split(",") if v.strip()]
    if any(n in ("all", "instructeval") for n in names):
        return list(known)
    names = [n.removeprefix("instructeval_") for n in names] if what == "task" else names
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown {what}(s) {unknown}; known: {', '.join(known)}")
    return names


def base_task_config(task: str) -> dict[str, Any]:
    """The task's YAML with includes and ``!function`` resolved (the in-memory variant template)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    spec = get_spec(task)
    return load_yaml(TASKS_DIR / spec.name / f"{spec.task_name}.yaml", resolve_func=True)


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


def load_model(model: str, model_args: str | dict | None, *, batch_size: int | str, max_batch_size: int | None, device: str | None):
    """The harness LM, created once for the whole sweep."""
    import lm_eval.api.registry

    cls = lm_eval.api.registry.get_model(model)
    device = device or default_device(model)
    extra = {"batch_size": batch_size, "max_batch_size": max_batch_size, "device": device}
    if isinstance(model_args, dict):
        return cls.create_from_arg_obj(model_args, extra)
    return cls.create_from_arg_string(model_args or "", extra)


def evaluate_chunk(
    lm: Any,
    variants: list[Variant],
    profile: Profile,
    metadata: dict[str, dict[str, Any]],
    bases: dict[str, dict[str, Any]],
    *,
    log_samples: bool,
) -> tuple[dict[str, Any], dict[str, list[dict]]]:
    """Build the chunk's variants as tasks and evaluate them in one harness call: (results, samples)."""
    import lm_eval

    from ..task import InstructEvalTask

    tasks = []
    for variant in variants:
        base = bases.setdefault(variant.task, base_task_config(variant.task))
        tasks.append(InstructEvalTask(config=variant_config(base, variant, profile, metadata[variant.name])))
    results = lm_eval.simple_evaluate(model=lm, tasks=tasks, log_samples=log_samples, verbosity="ERROR",
                                      task_manager=object_task_manager())
    samples = results.pop("samples", {}) if log_samples else {}
    results.pop("samples", None)
    return results, samples


def _primary(result: dict[str, Any]) -> tuple[str, float | None]:
    for key in PRIMARY_METRICS:
        if key in result:
            return key.split(",")[0], result[key]
    return "?", None


def run_sweep(
    *,
    model: str,
    model_args: str | dict | None,
    tasks: list[str] | str,
    methods: list[str] | str,
    output: str | Path,
    profile: str | Profile = "quick",
    overrides: dict[str, Any] | None = None,
    data_dir: str | None = None,
    bank_dir: str | list[str] | None = None,
    model_label: str | None = None,
    batch_size: int | str = 8,
    max_batch_size: int | None = None,
    device: str | None = None,
    lm: Any = None,
    log_samples: bool = True,
    dry_run: bool = False,
    progress: bool = True,
    echo: Callable[[str], None] | None = None,
    leaderboard_tasks: str | None = None,
    leaderboard_map: str | None = None,
) -> SweepReport:
    """Run (or resume) a sweep; see the module docstring. Returns a ``SweepReport``."""
    import datasets
    from tqdm.auto import tqdm

    start = time.monotonic()
    echo = echo or (lambda line: print(line, file=sys.stderr))
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    prof = prof.override(**(overrides or {}))
    bank = load_layered_bank(bank_dir)  # the shipped banks with bank_dir's directories on top
    task_names = resolve_names(tasks, list(TASK_SPECS), "task")
    method_names = resolve_names(methods, bank.methods(), "method")
    args_dict = parse_model_args(model_args)
    label = model_label or model_label_from_args(model, args_dict)
    data_dir = str(Path(data_dir).expanduser().resolve()) if data_dir else None
    bank_dir = join_bank_dirs(bank_dir)  # resolved; several directories joined by os.pathsep

    plan = build_plan(task_names, method_names, prof, bank, model_label=label)
    model_meta = {k: args_dict[k] for k in MODEL_ARG_KEYS if k in args_dict}
    metadata = {}
    for variant in plan:
        meta = variant.protocol_metadata(prof, bank_dir=bank_dir, data_dir=data_dir)
        metadata[variant.name] = {**meta, **model_meta, "model_label": label}

    stock_runs: list = []
    if leaderboard_tasks is not None:  # "" asks for every task that has a stock counterpart
        from .leaderboard import plan_leaderboard

        stock_runs, notes = plan_leaderboard(leaderboard_tasks, leaderboard_map, task_names, test_sample=prof.test_sample,
                                             test_seed=prof.test_seed, data_dir=data_dir, model_meta=model_meta)
        for note in notes:
            echo(note)

    store = SweepStore(output, label)
    done = store.finished()
    planned = {name: meta["variant_fingerprint"] for name, meta in metadata.items()}
    planned.update({run.name: run.fingerprint for run in stock_runs})
    store.check_conflicts(planned, done)
    pending = [v for v in plan if v.name not in done]
    stock_pending = [run for run in stock_runs if run.name not in done]
    report = SweepReport(store.root, planned=len(plan), skipped=len(plan) - len(pending))
    store.write_plan(
        {
            "plugin_version": __version__,
            "model": model,
            "model_args": args_dict,
            "model_label": label,
            "profile": prof.as_dict(),
            "tasks": task_names,
            "methods": method_names,
            "data_dir": data_dir,
            "bank_dir": bank_dir,
            "instructions": sorted(
                {(v.task, v.entry.method, v.entry.id, v.entry.sha, v.entry.text) for v in plan}
            ),
            "variants": [v.name for v in plan],
            "leaderboard": [run.metadata["leaderboard"] for run in stock_runs],
        }
    )
    echo(f"sweep: {len(plan)} variants planned, {report.skipped} already done, {len(pending)} to run -> {store.root}")
    if stock_runs:
        echo(f"leaderboard: {len(stock_runs)} stock task(s), {len(stock_pending)} to run: "
             + ", ".join(f"{r.name} ({r.counterpart.num_fewshot}-shot {r.counterpart.metric})" for r in stock_runs))
    if dry_run or not (pending or stock_pending):
        report.seconds = time.monotonic() - start
        return report

    datasets.disable_progress_bars()  # one sweep bar, not one "Map" bar per variant
    if lm is None:
        device = device or default_device(model)  # recorded in every results file's config
        lm = load_model(model, model_args, batch_size=batch_size, max_batch_size=max_batch_size, device=device)
    bases: dict[str, dict[str, Any]] = {}
    bar = tqdm(total=len(pending), unit="variant", desc="sweep", disable=not progress, file=sys.stderr)
    stop = StopRequests(lambda line: bar.write(line, file=sys.stderr))
    from .leaderboard import StockSchedule  # stock tasks run as soon as their task's variants are saved

    stock = StockSchedule(stock_pending, pending, lm=lm, store=store, model=model, args_dict=args_dict, label=label,
                          batch_size=batch_size, device=device, log_samples=log_samples,
                          write=lambda line: bar.write(line, file=sys.stderr))
    try:
        with stop:
            report.result_files += stock.run_ready()
            for chunk, group in groupby(pending, key=lambda v: v.chunk):
                variants = list(group)
                chunk_start = time.monotonic()
                results, samples = evaluate_chunk(lm, variants, prof, metadata, bases, log_samples=log_samples)
                results["config"].update(model=model, model_args=args_dict, batch_size=batch_size, device=device)
                results["model_name"] = label
                stamp = _dt.datetime.now().strftime("%Y-%m-%dT%H-%M-%S.%f")
                # One file per pending set: extending a sweep never overwrites earlier chunks' results.
                chunk_key = f"{chunk}__{fingerprint({'variants': [v.name for v in variants]})[:8]}"
                path = store.write_chunk(chunk_key, results, samples, stamp)
                report.result_files.append(path)
                report.evaluated += len(variants)
                seconds = time.monotonic() - chunk_start
                for variant in variants:
                    metric, value = _primary(results["results"].get(variant.name, {}))
                    shown = "n/a" if value is None else f"{value:.3f}"
                    bar.write(f"done {variant.name}: {metric}={shown} ({seconds / len(variants):.1f} s)", file=sys.stderr)
                bar.update(len(variants))
                report.result_files += stock.run_ready(variants)
                if stop.requested:
                    raise KeyboardInterrupt
    except KeyboardInterrupt:
        bar.close()
        echo(f"interrupted after {report.evaluated} variants; finished chunks are saved in {store.root}. "
             f"Run the same command again to resume.")
        raise
    bar.close()
    report.seconds = time.monotonic() - start
    echo(f"sweep finished: {report.evaluated} variants evaluated in {report.seconds:.0f} s -> {store.root}")
    return report

