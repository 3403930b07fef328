"""Evaluate a whole sweep for one model with one model load per process.

``run_sweep`` builds every variant of the plan as an in-memory ``InstructEvalTask`` and hands each
to ``lm_eval.simple_evaluate`` with an already-loaded model, so any harness backend works. The
variants of one chunk (task x instruction) are evaluated one harness call each -- the progress bar
advances and each variant's time is measured per variant -- and saved together as one standard
results file before the chunk counts as done (see ``store``). An executor (``executors``) decides
who evaluates the chunks: this process (``local``, the default) or a pool of Ray workers
(``ray_executor``); either way this process alone writes the output. ``--shard I/N`` runs one of N
parts of the plan (``shards``).

Example:
    >>> options = SweepOptions(model="hf", model_args="pretrained=models/smollm2",
    ...                        tasks=["agnews"], methods=["null", "generic"], profile="quick",
    ...                        data_dir="../shared/data", output="out/sweep")
    >>> report = run_sweep(options)   # doctest: +SKIP
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from instructeval_banks import join_bank_dirs, load_layered_bank

from .. import __version__
from ..errors import UserError
from ..options import resolve_data_dir
from ..specs import get_spec, resolve_task_names
from .identity import RUN_FINGERPRINT_KEY, for_task, protocol_fields, run_fingerprint
from .plan import MODEL_ARG_KEYS, Variant, build_plan, fingerprint
from .profiles import Profile, get_profile
from .adaptive import SAMPLE_METRICS, plan_round
from .budget import (ADAPTIVE_ROUNDS, BUDGET_KEY, DEFAULT_DESIGN, EXTEND_ROUNDS, Budget, BudgetRound, budget_record, budget_rounds,
                     extended_cells, grid_cells_of)
from .chunk import (
    PATH_KEY,
    ChunkJob,
    ModelSpec,
    chunk_jobs,
    merge_path_counts,
    stock_path_note,
    variant_config,
)
from .env_info import environment_info_once
from .executor_registry import make_executor
from .interrupts import StopRequests, Terminated
from .lock import RunLock, shard_lock_name
from .shards import ClaimingQueue, ShardSpec
from .sweep_options import SweepOptions
from .window import ALLOW_TRUNCATION_KEY
from .store import SweepStore, check_folder_name, check_output, model_label_from_args
from .validate import (SweepOptionError, check_backend, check_batch_size, check_chat_template, check_max_batch_size, check_pretrained,
                       parse_model_args, resolve_names)

__all__ = ["SweepOptions", "SweepReport", "parse_model_args", "resolve_names", "run_sweep"]

log = logging.getLogger(__name__)

PRIMARY_METRICS = tuple(f"{name},none" for name in SAMPLE_METRICS)  # results keys, first present wins


@dataclass
class SweepReport:
    """What a sweep did: where, how many variants were planned, skipped as done, and evaluated."""

    output_dir: Path
    planned: int
    skipped: int
    evaluated: int = 0
    result_files: list[Path] = field(default_factory=list)
    seconds: float = 0.0
    plan: dict[str, Any] = field(default_factory=dict)  # sweep.json's content (also for a dry run, which writes none)


def preflight(plan: list[Variant], profile: Profile, metadata: dict[str, dict[str, Any]], *,
              classes: bool = False) -> dict[str, list[Any]]:
    """Build the first variant of every (task, setting) as a task before the model loads.

    Building a task reads its metadata options, its data and its instruction, and draws its test
    sample and demos: a bad value there (a test sample larger than the eval split, an option out
    of range, a malformed data file) stops the sweep now instead of after the model load, and
    ``--dry-run`` reports it too.

    With ``classes``, returns each task's test items' classes, in doc order (``--budget`` balances
    them): the gold label of classification and multiple-choice items, one class for the others;
    else an empty dict.
    """
    from ..demos import FixedDemoSampler
    from ..task import base_task_config, task_from_config

    bases: dict[str, dict[str, Any]] = {}
    seen: set[tuple[str, str]] = set()
    labels: dict[str, list[Any]] = {}
    for variant in plan:
        if (variant.task, variant.setting) in seen:
            continue
        seen.add((variant.task, variant.setting))
        base = bases.setdefault(variant.task, base_task_config(variant.task))
        task = task_from_config(variant_config(base, variant, profile, metadata[variant.name]))
        k = int(task.config.num_fewshot or 0)
        if k and isinstance(getattr(task, "sampler", None), FixedDemoSampler):
            try:  # the demo set is drawn lazily, on the first prompt: draw it now (K > the train split)
                task.sampler.demo_ids(k)
            except ValueError as err:
                raise SweepOptionError(f"{err}; use a smaller K (--num-fewshot) or a larger train split") from None
        if classes and variant.task not in labels:
            kind = get_spec(variant.task).kind
            labels[variant.task] = [task.doc_to_target(doc) if kind in ("cls", "mcq") else 0 for doc in task.eval_docs]
    return labels


def apply_budget(plan: list[Variant], metadata: dict[str, dict[str, Any]], classes: dict[str, list[Any]],
                 budget: Budget) -> dict[str, Any]:
    """Record each variant's cells under ``metadata[name]["budget"]`` (see ``budget``); returns the totals.

    A grid is one (task, setting code); its fingerprint-bearing metadata changes, so a budgeted
    variant is never taken for the full one on resume (nor the reverse).
    """
    grids: dict[str, list[Variant]] = {}
    for variant in plan:
        grids.setdefault(variant.grid, []).append(variant)
    cells = size = first_cells = extend_cells = 0
    for grid, variants in grids.items():
        labels = classes[variants[0].task]
        full = [v.name for v in variants if v.entry.method in budget.full_methods]
        chosen, grid_cells = grid_cells_of([v.name for v in variants], labels, budget, grid, full=full,
                                            methods=[v.entry.method for v in variants])
        cells += grid_cells
        if budget.extend_to is not None:
            extend_cells += max(grid_cells, extended_cells([v.entry.method for v in variants], len(labels), budget,
                                                           budget.extend_to))
        first_cells += sum(map(len, chosen.values()))
        size += len(labels) * len(variants)
        for variant in variants:
            record = budget_record(budget, chosen[variant.name], len(labels), grid, grid_cells, len(labels) * len(variants))
            meta = metadata[variant.name]
            meta[BUDGET_KEY] = record
            meta["variant_fingerprint"] = fingerprint({"full": meta["variant_fingerprint"], BUDGET_KEY: record})
    totals = {**budget.as_dict(), "grids": len(grids), "cells": cells, "grid_size": size}
    if budget.design == "adaptive":
        totals["first_cells"] = first_cells
    if budget.extend_to is not None:
        totals.update(extend_to=budget.extend_to, extend_cells=extend_cells)
    return totals


# The profile fields (``SweepOptions.overrides``) that only the nine tasks read, with their options:
# a harness task keeps its stock protocol (its n-shot is written after its name, ``hellaswag:10``).
NINE_TASK_OVERRIDES = {"num_fewshot": "--num-fewshot", "n_selections": "--selections",
                       "n_perturbed_selections": "--perturbed-selections", "n_orderings": "--orderings",
                       "ordering_demo_seeds": "--ordering-demo-seeds", "order_mode": "--order-mode",
                       "truncate_words": "--truncate-words", "perturbation_seed": "--perturbation-seed",
                       "perturbation_mode": "--perturbation-mode", "settings": "--settings"}


def _check_nine_task_overrides(overrides: dict[str, Any] | None, tasks: list[str], harness_tasks: str | None,
                               echo: Callable[[str], None]) -> None:
    """Refuse an option of the nine tasks' protocol in a run of harness tasks only (it would change
    nothing); with ``--tasks`` too, say which harness tasks keep their own n-shot under ``--num-fewshot``."""
    given = {k: v for k, v in (overrides or {}).items() if v is not None and k in NINE_TASK_OVERRIDES}
    if not harness_tasks or not given:
        return
    from ..harness.tasks import parse_harness_tasks

    shot = given.get("num_fewshot")
    refs = parse_harness_tasks(harness_tasks)
    if not tasks:
        if shot is not None:
            raise UserError(f"--num-fewshot {shot} sets K of the nine InstructEval tasks (--tasks), and none is given; "
                            f"a harness task's n-shot follows its name: --harness-tasks "
                            + ",".join(f"{ref.name}:{shot}" for ref in refs))
        flag = NINE_TASK_OVERRIDES[next(iter(given))]
        raise UserError(f"{flag} applies to the nine InstructEval tasks (--tasks) only, and none is given: the harness "
                        f"tasks keep their stock protocol; drop {flag}")
    implicit = [ref.name for ref in refs if ref.num_fewshot is None]
    if shot is not None and implicit:
        echo(f"--num-fewshot {shot} sets K of the nine tasks only: {', '.join(implicit)} keep(s) the harness task's own "
             f"n-shot; write {implicit[0]}:{shot} in --harness-tasks to give it {shot}")


def _placements(placements: Sequence[str]) -> tuple[str, ...]:
    """``--placements``, checked (did-you-mean), duplicates dropped, in the order given."""
    from ..harness.tasks import check_placement

    out: list[str] = []
    for placement in placements:
        check_placement(placement)
        if placement not in out:
            out.append(placement)
    if not out:
        raise UserError("--placements: give at least one of description, chat-system, chat-user")
    return tuple(out)


def _primary(result: dict[str, Any]) -> tuple[str, float | None]:
    for key in PRIMARY_METRICS:
        if key in result:
            return key.split(",")[0], result[key]
    for key, value in result.items():  # a harness task's own metric, e.g. exact_match,strict-match
        if "," in key and "_stderr" not in key and isinstance(value, (int, float)) and not isinstance(value, bool):
            return key, value
    return "?", None


def run_sweep(options: SweepOptions | None = None, /, *, lm: Any = None, echo: Callable[[str], None] | None = None,
              **fields: Any) -> SweepReport:
    """Run (or resume) a sweep; see the module docstring. Returns a ``SweepReport``.

    Args:
        options: what to evaluate (``SweepOptions``); or give its fields as keywords instead
            (``run_sweep(model="hf", tasks="agnews", ...)``), which builds the same object.
        lm: an already-loaded harness model (``lm_eval.api.model.LM``), used instead of loading ``model``.
        echo: where the progress lines go (default: stderr).

    ``executor="ray"`` with ``workers=N`` evaluates the chunks on N Ray actors (see ``ray_executor``;
    ``ray_address`` joins a cluster, ``worker_resources`` are each actor's Ray resources); the results
    are those of the local executor. ``shard="I/N"`` runs the I-th of N parts of the plan (see
    ``shards``); shards of one command may run at once on one ``output``.
    """
    if options is None:
        options = SweepOptions(**fields)
    elif fields:
        raise TypeError(f"run_sweep takes a SweepOptions or keywords, not both (got {sorted(fields)})")
    o = options
    model, model_args, tasks, methods, output = o.model, o.model_args, o.tasks, o.methods, o.output
    profile, overrides, data_dir, bank_dir, model_label = o.profile, o.overrides, o.data_dir, o.bank_dir, o.model_label
    batch_size, max_batch_size, device, log_samples = o.batch_size, o.max_batch_size, o.device, o.log_samples
    dry_run, progress, lock_wait, executor, workers = o.dry_run, o.progress, o.lock_wait, o.executor, o.workers
    ray_address, worker_resources, shard, budget = o.ray_address, o.worker_resources, o.shard, o.budget
    leaderboard_tasks, leaderboard_map = o.leaderboard_tasks, o.leaderboard_map
    import datasets

    start = time.monotonic()
    echo = echo or (lambda line: print(line, file=sys.stderr))
    # Every check that can fail on the user's input runs here, before the lock and the model load.
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    prof = prof.override(**(overrides or {}))
    if budget is not None and not isinstance(budget, Budget):
        budget = Budget(budget)
    bank = load_layered_bank(bank_dir)  # the shipped banks with bank_dir's directories on top
    # the nine, ii_<task> ids, or the groups all / instructeval_ii; none when only harness tasks are asked
    if not tasks and not o.harness_tasks:
        raise UserError("give --tasks (InstructEval's tasks) and/or --harness-tasks (lm-eval's own tasks)")
    task_names = resolve_task_names(tasks) if tasks else []
    _check_nine_task_overrides(overrides, task_names, o.harness_tasks, echo)
    method_names = resolve_names(methods, bank.methods(), "method")
    if budget is not None:  # a typo would silently estimate the baseline
        budget.check_methods(bank.methods())
    args_dict = parse_model_args(model_args)
    runner = make_executor(executor, workers=workers, ray_address=ray_address, worker_resources=worker_resources, lm=lm)
    part = ShardSpec.parse(shard)
    adaptive = budget is not None and budget.design == "adaptive"
    # rounds of cells chosen from the scores of the earlier ones: an adaptive design's, an extension's
    rounds_option = "--budget-design adaptive" if adaptive else "--budget-extend"
    has_rounds = adaptive or (budget is not None and budget.extend_to is not None)
    if has_rounds and not log_samples:
        raise UserError(f"{rounds_option} needs the per-sample logs (drop --no-log-samples): each round is "
                        "chosen from the scores of the earlier ones")
    if lm is None:
        check_backend(model)
        check_pretrained(args_dict)
    batch_size = check_batch_size(batch_size)
    check_max_batch_size(max_batch_size)
    label = check_folder_name(model_label, "--model-label") if model_label is not None else model_label_from_args(model, args_dict)
    check_output(output, label)
    if budget is not None and "design" in budget.defaulted:  # a folder begun under another default keeps its design
        folder = SweepStore(output, label)
        begun = folder.begun_design()
        if begun is not None and begun != budget.design:
            budget = budget.resumed(begun)
            echo(f"budget: {folder.root} was begun with the {begun} design, so it continues with it "
                 f"(--budget-design {begun}); the default design, {DEFAULT_DESIGN}, needs another --output")
    data_dir = resolve_data_dir(data_dir)  # as the tasks would read it
    data_dir = str(Path(data_dir).expanduser().resolve()) if data_dir else None
    bank_dir = join_bank_dirs(bank_dir)  # resolved; several directories joined by os.pathsep

    placements = _placements(o.placements)
    plan = build_plan(task_names, method_names, prof, bank, model_label=label, placements=placements,
                      fewshot_as_multiturn=o.fewshot_as_multiturn)
    ii_tasks = [t for t in task_names if get_spec(t).kind == "ii"]
    skipped_settings = [s for s in prof.settings if s != "zero_shot"]
    if ii_tasks and skipped_settings:
        echo(f"sweep: {len(ii_tasks)} Instruction Induction task(s) run zero-shot execution only; "
             f"settings {', '.join(skipped_settings)} are not planned for them")
    model_meta = {k: args_dict[k] for k in MODEL_ARG_KEYS if k in args_dict}
    run_fp = run_fingerprint(model, args_dict, task_names, data_dir)  # also: every data file exists
    metadata = {}
    for variant in plan:
        meta = variant.protocol_metadata(prof, bank_dir=bank_dir, data_dir=data_dir)
        metadata[variant.name] = {**meta, **model_meta, "model_label": label,
                                  RUN_FINGERPRINT_KEY: for_task(run_fp, variant.task),
                                  **({ALLOW_TRUNCATION_KEY: True} if o.allow_truncation else {})}
    stock_runs: list = []
    if leaderboard_tasks is not None:  # "" asks for every task that has a stock counterpart
        from .leaderboard import plan_leaderboard

        stock_runs, notes = plan_leaderboard(leaderboard_tasks, leaderboard_map, task_names, test_sample=prof.test_sample,
                                             test_seed=prof.test_seed, data_dir=data_dir,
                                             model_meta={**model_meta, **({ALLOW_TRUNCATION_KEY: True} if o.allow_truncation else {})})
        for note in notes:
            echo(note)
        if executor != "local" or part:
            raise UserError(
                "--leaderboard-tasks runs the stock tasks on the sweep's own model, so it needs the local executor "
                "without --shard; run the stock tasks in a separate local run into the same --output"
            )
        for run in stock_runs:  # stock results are checked on resume like the variants
            run.metadata[RUN_FINGERPRINT_KEY] = for_task(run_fp, run.counterpart.task)

    harness: list = []  # (harness task, instruction) variants of --harness-tasks
    harness_configs: dict = {}
    if o.harness_tasks:
        from .harness_runs import plan_harness

        harness, identities, harness_configs = plan_harness(
            o.harness_tasks, method_names, bank, instructions_per_method=prof.instructions_per_method,
            bank_roots=[None] + bank_dir.split(os.pathsep) if bank_dir else None,
            instruction_seed=prof.instruction_seed, test_sample=prof.test_sample, test_seed=prof.test_seed,
            data_dir=data_dir, placements=placements, fewshot_as_multiturn=o.fewshot_as_multiturn, dry_run=dry_run,
            budget=budget, echo=echo)
        run_fp["data"].update({f"harness:{name}": ident for name, ident in identities.items()})
        for variant in harness:
            variant.metadata.update({**model_meta, "model_label": label,
                                     RUN_FINGERPRINT_KEY: for_task(run_fp, f"harness:{variant.task}"),
                                     **({ALLOW_TRUNCATION_KEY: True} if o.allow_truncation else {})})


    datasets.disable_progress_bars()  # one sweep bar, not one "Map" bar per variant
    classes = preflight(plan, prof, metadata, classes=budget is not None)
    budget_totals = apply_budget(plan, metadata, classes, budget) if budget is not None and plan else None
    if budget_totals:
        echo(f"budget {budget.fraction:g} (seed {budget.seed}, {budget.design} design): {budget_totals['cells']:,} of "
             f"{budget_totals['grid_size']:,} (instruction, item) cells "
             f"({budget_totals['cells'] / max(budget_totals['grid_size'], 1):.1%}) in {budget_totals['grids']} "
             f"(task, setting) grid(s); every instruction >= {_least_items(plan, metadata, budget)} "
             f"items, every item >= 1 instruction; {_full_words(budget)}"
             + _adaptive_words(budget, budget_totals))
        if budget.extend_to is not None:
            echo(_extend_words(budget, budget_totals))

    harness_totals = None
    if harness and budget is not None:
        from .harness_runs import budget_totals as harness_budget_totals  # not this function's budget_totals

        harness_totals = harness_budget_totals(harness, budget)
        echo(f"budget {budget.fraction:g} (seed {budget.seed}, {budget.design} design), harness tasks: {harness_totals['cells']:,} of "
             f"{harness_totals['grid_size']:,} (instruction, item) cells "
             f"({harness_totals['cells'] / max(harness_totals['grid_size'], 1):.1%}) in {harness_totals['grids']} (task, placement) grid(s); "
             f"{_full_words(budget)}" + _adaptive_words(budget, harness_totals))
        if budget.extend_to is not None:
            echo(_extend_words(budget, harness_totals, what=", harness tasks"))

    every_harness = harness  # the rounds are chosen from every shard's cells
    if harness and part:  # this shard's harness tasks: each is one chunk (one harness call), dealt like the plan's
        harness = part.select(harness)

    store = SweepStore(output, label)
    planned = {name: meta["variant_fingerprint"] for name, meta in metadata.items()}
    planned.update({run.name: run.fingerprint for run in stock_runs})
    planned.update({v.name: v.fingerprint for v in harness})
    protocols = {v.name: protocol_fields(metadata[v.name], v.num_fewshot(prof)) for v in plan}  # named in a refusal
    protocols.update({v.name: protocol_fields(v.metadata) for v in [*harness, *stock_runs]})

    mine = part.select(plan) if part else plan  # this shard's variants (all without --shard)

    stock_pending: list = []  # the stock runs not saved yet (resume_state fills it)
    harness_pending: list = []  # likewise, the harness-task variants

    def resume_state() -> list[Variant]:
        """The variants still to run; refuses results of another model, data or protocol. A saved
        variant whose samples file is missing or empty is run again when this run logs samples."""
        store.check_run(run_fp)
        done = store.finished()
        store.check_conflicts(planned, done, budget=budget.as_dict() if budget is not None else None, protocols=protocols)
        if log_samples:
            done = _logged_only(store, done, [*(v.name for v in mine), *(v.name for v in harness),
                                              *(run.name for run in stock_runs)], echo)
        stock_pending[:] = [run for run in stock_runs if run.name not in done]
        harness_pending[:] = [v for v in harness if v.name not in done]
        return [v for v in mine if v.name not in done]

    plan_record = {
        "plugin_version": __version__,
        "model": model,
        "model_args": args_dict,
        "model_label": label,
        RUN_FINGERPRINT_KEY: run_fp,
        "profile": prof.as_dict(),
        "tasks": task_names,
        "methods": method_names,
        "data_dir": data_dir,
        "bank_dir": bank_dir,
        "instructions": sorted({(v.task, v.entry.method, v.entry.id, v.entry.sha, v.entry.text) for v in plan}),
        "variants": [v.name for v in plan],
        "leaderboard": [run.metadata["leaderboard"] for run in stock_runs],
        "harness": [{"name": v.name, **v.metadata["harness"]} for v in harness],
        BUDGET_KEY: budget_totals,
        "harness_budget": harness_totals,
    }

    def announce_stock() -> None:
        if stock_runs:
            echo(f"leaderboard: {len(stock_runs)} stock task(s), {len(stock_pending)} to run: "
                 + ", ".join(f"{r.name} ({r.counterpart.num_fewshot}-shot {r.counterpart.metric})" for r in stock_runs))
        if harness:
            shots = {}
            for v in harness:
                shots.setdefault(v.task, v.num_fewshot)
            echo(f"harness tasks: {len(harness)} variant(s) of {len(shots)} task(s), {len(harness_pending)} to run: "
                 + ", ".join(f"{name} ({shot}-shot)" for name, shot in shots.items()))

    def announce_plan(pending: list[Variant], sweep: str) -> None:
        """The plan's lines: the nine tasks' variants (this shard's), the stock and harness tasks'."""
        if plan and part and not mine:
            echo(f"shard {part} of the {sweep}: none of the {len(plan)} variants of --tasks falls to this shard (their "
                 f"{len({v.chunk for v in plan})} chunk(s) are dealt round-robin over {part.count} shards) -> {store.root}")
        elif plan:
            what = f"shard {part} of the {sweep}: {len(mine)} of {len(plan)}" if part else f"{sweep}: {len(plan)}"
            echo(f"{what} variants planned, {len(mine) - len(pending)} already done, {len(pending)} to run -> {store.root}")
        if part and every_harness and not harness:
            tasks_here = len({v.task for v in every_harness})
            echo(f"shard {part}: none of the {tasks_here} harness task(s) falls to this shard (each is one chunk; the "
                 f"harness tasks are dealt round-robin over {part.count} shards) -> {store.root}")
        announce_stock()

    # the rounds after the design's cells; an extension smaller than one the folder holds is refused here
    schedule = budget_rounds(budget, store.saved_extensions(), str(store.root)) if has_rounds else []

    if dry_run:  # reads the folder, writes nothing (no folder, no sweep.json, no lock file)
        pending = resume_state()
        report = SweepReport(store.root, planned=len(mine) + len(harness),
                             skipped=len(mine) - len(pending) + len(harness) - len(harness_pending), plan=plan_record)
        announce_plan(pending, "sweep (dry run)")
        if schedule:
            echo(f"then {_schedule_words(schedule)}: each round's cells are chosen from the scores saved before it, "
                 f"so they are not counted here")
        report.seconds = time.monotonic() - start
        return report

    created = [p for p in (store.root, *store.root.parents) if not p.exists()]  # removed again if nothing runs
    store.create()
    # Shards write one folder at once: each holds its own run lock (a shard started twice is
    # refused) and claims chunks one by one (``shards``); every write takes the short store lock.
    run_lock = RunLock(store.root, wait=lock_wait, echo=echo,
                       **({"name": shard_lock_name(part.index, part.count)} if part else {}))
    try:
        with run_lock:
            with store.updating():
                removed = store.clean_temp_files()
                if removed:
                    echo(f"removed {len(removed)} temporary file(s) left by an interrupted write in {store.root}")
                pending = resume_state()
                store.write_plan(plan_record)
            report = SweepReport(store.root, planned=len(mine) + len(harness),
                                 skipped=len(mine) - len(pending) + len(harness) - len(harness_pending), plan=plan_record)
            announce_plan(pending, "sweep")
            if not pending and not stock_pending and not harness_pending and not has_rounds:
                report.seconds = time.monotonic() - start
                return report

            spec = ModelSpec(model, model_args, label, batch_size=batch_size, max_batch_size=max_batch_size, device=device)
            chat = any(v.placement != "description" for v in [*harness_pending, *pending])
            if chat and runner.lm is None and executor == "local":
                runner.lm = spec.load()  # loaded now to check its chat template before anything runs
            if chat and runner.lm is not None:
                check_chat_template(runner.lm, label)
            stock = None
            if stock_pending:  # the local executor (checked above): the stock tasks share its model
                from .leaderboard import StockSchedule  # stock tasks run as soon as their task's variants are saved

                if runner.lm is None:
                    runner.lm = spec.load()
                stock = StockSchedule(stock_pending, pending, lm=runner.lm, store=store, model=model, args_dict=args_dict,
                                      label=label, batch_size=batch_size, device=spec.resolved_device(),
                                      log_samples=log_samples, write=echo)
            if has_rounds and (pending or harness_pending):  # one model load for all rounds
                _load_once(runner, spec)
            jobs = _jobs(pending, harness_pending, metadata, harness_configs, data_dir)
            if jobs or stock_pending:
                _evaluate_pending(runner, jobs, spec, prof, store, report, planned=planned,
                                  log_samples=log_samples, progress=progress, echo=echo, stock=stock)
            rounds = dict(schedule=schedule, budget=budget, spec=spec, prof=prof, store=store, report=report,
                          planned=planned, log_samples=log_samples, progress=progress, echo=echo)
            if schedule and part:  # a round is chosen from every shard's cells, so each shard waits for them
                _other_shards_cells(runner, part, plan, every_harness, metadata, harness_configs, data_dir, **rounds)
            if schedule and plan:
                _budget_rounds(runner, plan, lambda r, earlier: plan_round(r, plan, earlier, metadata, store, budget),
                               lambda variants: chunk_jobs(variants, metadata), lambda v: metadata[v.name], **rounds)
            if schedule and every_harness:
                from .harness_runs import harness_jobs, plan_harness_round

                _budget_rounds(runner, every_harness,
                               lambda r, earlier: plan_harness_round(r, every_harness, earlier, store, budget, harness_configs),
                               lambda variants: harness_jobs(variants, harness_configs, data_dir),
                               lambda v: v.metadata, what=" (harness tasks)", **rounds)
    except UserError:  # e.g. the model cannot load: leave no empty folder behind
        store.remove_if_unused(created)
        raise
    finally:
        runner.close()  # a Ray executor's workers are kept from one round to the next until here
    report.seconds = time.monotonic() - start
    if not report.evaluated and report.planned and report.skipped >= report.planned:
        who = "another shard or an earlier run" if part else "an earlier run"
        echo(f"sweep finished: nothing evaluated here: the {report.planned} variant(s) planned were saved already "
             f"(by {who}) -> {store.root}")
    else:
        echo(f"sweep finished: {report.evaluated} variants evaluated in {report.seconds:.0f} s -> {store.root}")
    return report


def _least_items(plan: list[Variant], metadata: dict[str, dict[str, Any]], budget: Budget) -> int:
    """The fewest items a budgeted instruction of the plan evaluates (now: an adaptive design's first slice)."""
    counts = [len(metadata[v.name][BUDGET_KEY]["items"]) for v in plan if v.entry.method not in budget.full_methods]
    return min(counts, default=0)


def _full_words(budget: Budget) -> str:
    """The plan line's words for ``--budget-full-methods``: which methods get every item.

        >>> _full_words(Budget(0.1)), _full_words(Budget(0.1, full_methods=()))
        ('null on every item', "no method on every item (--budget-full-methods ''): the null baseline is estimated too")
    """
    if budget.full_methods:
        return f"{', '.join(budget.full_methods)} on every item"
    return "no method on every item (--budget-full-methods ''): the null baseline is estimated too"


def _schedule_words(schedule: Sequence[BudgetRound]) -> str:
    """The rounds after the design's cells, by stage.

        >>> _schedule_words([BudgetRound(1, None, 1, 2), BudgetRound(2, None, 2, 2), BudgetRound(3, 0.25, 1, 2),
        ...                  BudgetRound(4, 0.25, 2, 2)])
        'the adaptive rounds 1-2, the extension to 0.25 in rounds 3-4'
    """
    stages: dict[float | None, list[int]] = {}
    for budget_round in schedule:
        stages.setdefault(budget_round.extend, []).append(budget_round.number)
    return ", ".join(("the adaptive rounds" if share is None else f"the extension to {share:g} in rounds")
                     + f" {numbers[0]}-{numbers[-1]}" for share, numbers in stages.items())


def _extend_words(budget: Budget, totals: dict[str, Any], what: str = "") -> str:
    """The plan line of ``--budget-extend``: the cells the extension brings the grids to."""
    cells, size = totals["extend_cells"], max(totals["grid_size"], 1)
    return (f"budget extension to {budget.extend_to:g}{what}: the grids brought to the {budget.design} design's cells at "
            f"{budget.extend_to:g}, {cells:,} of {size:,} ({cells / size:.1%}), keeping every saved cell; the new "
            f"ones in {EXTEND_ROUNDS} rounds to the cells the item-response model is least sure of")


def _adaptive_words(budget: Budget, totals: dict[str, Any]) -> str:
    """The plan line's tail for an adaptive budget: how many cells the first slice takes."""
    if budget.design != "adaptive":
        return ""
    if totals["first_cells"] >= totals["cells"]:  # every item must be covered: few instructions take it all
        return "; adaptive: every cell in the first slice (too few instructions to leave any for the rounds)"
    return f"; adaptive: {totals['first_cells']:,} now, the rest in {ADAPTIVE_ROUNDS} rounds"


def _budget_rounds(runner: Any, first: list, plan_next: Callable[[BudgetRound, dict[str, list]], dict[str, Any]],
                   jobs_of: Callable[[list], list], metadata_of: Callable[[Any], dict[str, Any]], schedule: list[BudgetRound],
                   budget: Budget, spec: ModelSpec, prof: Profile, store: SweepStore, report: SweepReport, *,
                   planned: dict[str, str], log_samples: bool, progress: bool, echo: Callable[[str], None],
                   what: str = "") -> None:
    """The rounds of ``schedule`` (an adaptive design's, then the extensions': ``budget.budget_rounds``),
    each once the earlier ones are saved.

    ``plan_next(round, earlier)`` gives the round's variants keyed by their first-slice variant
    (``adaptive.plan_round`` for the nine tasks, ``harness_runs.plan_harness_round`` for harness
    tasks); ``jobs_of`` makes their jobs; ``metadata_of`` gives a variant's metadata (its fingerprint
    and budget cells).
    """
    earlier = {v.name: [v] for v in first}
    for budget_round in schedule:
        later = plan_next(budget_round, earlier)
        for name, variant in later.items():
            earlier[name].append(variant)
            planned[variant.name] = metadata_of(variant)["variant_fingerprint"]
        variants = list(later.values())
        done = store.finished()
        store.check_conflicts({v.name: planned[v.name] for v in variants}, done,
                              budget=budget.as_dict())
        if log_samples:
            done = _logged_only(store, done, [v.name for v in variants], echo)
        pending = [v for v in variants if v.name not in done]
        cells = sum(len(metadata_of(v)[BUDGET_KEY]["items"]) for v in variants)
        stage = (f"adaptive round {budget_round.step} of {ADAPTIVE_ROUNDS}" if budget_round.extend is None
                 else f"extension to {budget_round.extend:g}, round {budget_round.step} of {EXTEND_ROUNDS}")
        if variants and not pending:
            echo(f"{stage}{what}: {cells:,} more cells for {len(variants)} instruction(s), all {len(variants)} variant(s) "
                 "saved already, none to run")
        else:
            echo(f"{stage}{what}: {cells:,} more cells for {len(variants)} instruction(s), {len(pending)} variant(s) to run")
        report.planned += len(variants)
        report.skipped += len(variants) - len(pending)
        if pending:
            _load_once(runner, spec)
            _evaluate_pending(runner, jobs_of(pending), spec, prof, store, report, planned=planned,
                              log_samples=log_samples, progress=progress, echo=echo)


def _logged_only(store: SweepStore, done: dict[str, str], names: Sequence[str], echo: Callable[[str], None]) -> dict[str, str]:
    """``done`` without those of ``names`` whose samples file is missing or empty (``SweepStore.unlogged``):
    they are evaluated again, which one line says; the variants of results files written with
    ``--no-log-samples`` stay done (another line says so)."""
    wanted = set(names)
    redo = {name: where for name, where in store.unlogged().items() if name in wanted and name in done}
    if redo:
        echo(_redo_words(redo))
    kept = store.written_without_samples(n for n in wanted if n in done)
    if kept:
        echo(f"resume: {len(kept)} saved variant(s) were run with --no-log-samples, e.g. {kept[0]}: kept without "
             "per-sample logs (no intervals for them); delete their results files to evaluate them again with logs")
    return {name: fp for name, fp in done.items() if name not in redo}


def _redo_words(redo: dict[str, tuple[Path, str]]) -> str:
    """The resume line for the saved variants evaluated again because their samples file is missing or empty.

        >>> _redo_words({"v": (Path("out/results_c__1.json"), "missing")})
        'resume: v is saved in results_c__1.json but its samples file (samples_v_<time>.jsonl) is missing; evaluating it again'
    """
    items = sorted(redo.items())
    if len(items) == 1:
        name, (path, why) = items[0]
        return (f"resume: {name} is saved in {path.name} but its samples file (samples_{name}_<time>.jsonl) is {why}; "
                "evaluating it again")
    shown = ", ".join(f"{name} ({why}; {path.name})" for name, (path, why) in items[:3])
    more = f" and {len(items) - 3} more" if len(items) > 3 else ""
    return (f"resume: {len(items)} saved variants have no samples file (samples_<variant>_<time>.jsonl missing or "
            f"empty): {shown}{more}; evaluating them again")


def _jobs(variants: list[Variant], harness: list, metadata: dict[str, dict[str, Any]], harness_configs: dict,
          data_dir: str | None) -> list:
    """The chunk jobs of ``variants``, then those of lm-eval's own tasks, instructed (``harness``:
    one job per task), for the same executor."""
    jobs: list = chunk_jobs(variants, metadata)
    if harness:
        from .harness_runs import harness_jobs

        jobs += harness_jobs(harness, harness_configs, data_dir)
    return jobs


def _load_once(runner: Any, spec: ModelSpec) -> None:
    """Load the local executor's model once for all the rounds (a Ray executor's workers hold theirs)."""
    if runner.name == "local" and runner.lm is None:
        runner.lm = spec.load()


def _other_shards_cells(runner: Any, part: ShardSpec, plan: list[Variant], harness: list, metadata: dict[str, dict[str, Any]],
                        harness_configs: dict, data_dir: str | None, *, spec: ModelSpec, prof: Profile, store: SweepStore,
                        report: SweepReport, planned: dict[str, str], log_samples: bool, progress: bool,
                        echo: Callable[[str], None], **_: Any) -> None:
    """Before a sharded run's rounds: the other shards' first-slice variants not saved yet, evaluated
    here unless another process holds them (then waited for: ``shards.ClaimingQueue``).

    Every shard then chooses the same rounds from the same saved cells, and the rounds' chunks go to
    whichever shard claims them first; a shard started after the others finds its part done.
    """
    done = store.finished(logged=log_samples)
    rest = [v for v in plan if v.name not in done]
    rest_harness = [v for v in harness if v.name not in done]
    if not rest and not rest_harness:
        return
    echo(f"shard {part}: the rounds are chosen from every shard's cells; {len(rest) + len(rest_harness)} variant(s) "
         f"of the other shards not saved yet, evaluated here unless another shard is evaluating them (then waited for)")
    report.planned += len(rest) + len(rest_harness)
    _load_once(runner, spec)
    _evaluate_pending(runner, _jobs(rest, rest_harness, metadata, harness_configs, data_dir), spec, prof, store, report,
                      planned=planned, log_samples=log_samples, progress=progress, echo=echo)


def _evaluate_pending(runner: Any, jobs: list[ChunkJob], spec: ModelSpec, prof: Profile, store: SweepStore,
                      report: SweepReport, *, planned: dict[str, str], log_samples: bool, progress: bool,
                      echo: Callable[[str], None], stock: Any = None) -> None:
    """Evaluate and save the pending chunks with ``runner`` (an executor), with the progress bar and
    Ctrl-C handling; this process alone writes the results (``save``)."""
    from tqdm.auto import tqdm

    # Redrawn on every variant (a variant takes seconds), not at tqdm's default 0.1 s rate limit.
    bar = tqdm(total=sum(len(job.variants) for job in jobs), unit="variant", desc="sweep", disable=not progress,
               file=sys.stderr, mininterval=0, miniters=1)
    stop = StopRequests(lambda line: bar.write(line, file=sys.stderr))
    paths: list[dict[str, Any]] = []  # instructeval-hf path records of variants with stock-path requests

    def variant_done(variant: Variant, results: dict[str, Any], seconds: float) -> None:
        metric, value = _primary(results["results"].get(variant.name, {}))
        shown = "n/a" if value is None else f"{value:.3f}"
        counts = (results.get("n-samples") or {}).get(variant.name) or {}
        if counts.get("effective") != counts.get("original"):  # a budgeted variant: its own cells only
            shown += f" on {counts.get('effective')} of {counts.get('original')} items"
        note = stock_path_note(results)
        if note:
            paths.append(results["config"][PATH_KEY])
        bar.write(f"done {variant.name}: {metric}={shown} ({seconds:.1f} s){note}", file=sys.stderr)
        bar.update(1)

    def save(job: ChunkJob, results: dict[str, Any], samples: dict[str, list[dict]]) -> None:
        stamp = _dt.datetime.now().strftime("%Y-%m-%dT%H-%M-%S.%f")
        report.result_files.append(store.write_chunk(job.key, results, samples, stamp))
        report.evaluated += len(job.variants)
        if stock is not None:  # the stock counterpart of a task whose variants are now all saved (not a harness job's)
            report.result_files.extend(stock.run_ready([v for v in job.variants if isinstance(v, Variant)]))

    def still_pending(job: ChunkJob) -> ChunkJob | None:
        """The job's variants not saved yet (another shard may have saved some); conflicts refused."""
        saved = store.finished(job.variants[0].chunk)
        store.check_conflicts({name: planned[name] for name in job.names}, saved)
        if log_samples:  # a variant saved without its samples file is evaluated again (``_logged_only``)
            saved = store.finished(job.variants[0].chunk, logged=True)
        left = [v for v in job.variants if v.name not in saved]
        return None if not left else job if len(left) == len(job.variants) else job.restricted(left)

    queue = ClaimingQueue(jobs, store.root, still_pending=still_pending, stopping=lambda: stop.requested,
                          echo=lambda line: bar.write(line, file=sys.stderr))
    if stock is not None:
        stock.evaluation["write"] = lambda line: bar.write(line, file=sys.stderr)
    try:
        with stop, environment_info_once():  # the stock runs' harness calls too: one environment record, quiet git
            if stock is not None:  # tasks whose variants were all saved by an earlier run
                report.result_files.extend(stock.run_ready())
            runner.run(queue, spec=spec, profile=prof, log_samples=log_samples, save=save, on_variant=variant_done,
                       stop=stop, echo=lambda line: bar.write(line, file=sys.stderr))
            stop.raise_if_requested()
    except KeyboardInterrupt as stop_now:
        bar.close()
        how = "terminated (SIGTERM)" if isinstance(stop_now, Terminated) else "interrupted"
        echo(f"{how} after {report.evaluated} variants; finished chunks are saved in {store.root}. "
             f"Run the same command again to resume.")
        raise
    except BaseException:  # an error ends on its own line, after the bar
        bar.close()
        raise
    bar.close()
    if paths:  # the summary repeats what scrolled by in the progress lines
        merged = merge_path_counts(paths)
        echo(f"instructeval-hf: {len(paths)} variant(s) ran requests on the stock hf path{stock_path_note({'config': {PATH_KEY: merged}})} "
             f"-- same scores, about the speed of --model hf; require_prefix=true in --model_args makes this an error")
    report.skipped += queue.skipped  # saved by another process (a shard) while this one ran
