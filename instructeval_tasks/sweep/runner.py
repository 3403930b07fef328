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

import logging
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

from instructeval_banks import join_bank_dirs, load_layered_bank

from .. import __version__
from ..errors import UserError
from ..options import resolve_data_dir
from ..specs import get_spec, resolve_task_names
from .identity import RUN_FINGERPRINT_KEY, for_task, protocol_fields, run_fingerprint
from .plan import MODEL_ARG_KEYS, Variant, build_plan, fingerprint
from .profiles import OPTION_OF, Profile, get_profile
from .adaptive import native_grid_cells
from .budget import (ADAPTIVE_ROUNDS, BUDGET_KEY, DEFAULT_DESIGN, EXTEND_ROUNDS, Budget, BudgetRound, budget_record, budget_rounds,
                     grid_cells_of)
from .rounds import Observe, budget_totals, plan_round
from .chunk import ModelSpec, chunk_jobs, variant_config
from .evaluation import Evaluation, SweepReport
from .executor_registry import make_executor
from .lock import RunLock, shard_lock_name
from .shards import ShardSpec
from .sweep_options import SweepOptions
from .window import ALLOW_TRUNCATION_KEY
from .store import SweepStore, check_folder_name, check_output, model_label_from_args
from .validate import (SweepOptionError, check_backend, check_batch_size, check_chat_template, check_max_batch_size, check_pretrained,
                       parse_model_args, resolve_names)

__all__ = ["SweepOptions", "SweepReport", "parse_model_args", "resolve_names", "run_sweep"]

log = logging.getLogger(__name__)


def preflight(plan: list[Variant], profile: Profile, *, classes: bool = False) -> dict[str, list[Any]]:
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
        task = task_from_config(variant_config(base, variant, profile, variant.metadata))
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


def apply_budget(plan: list[Variant], classes: dict[str, list[Any]], budget: Budget) -> dict[str, Any]:
    """Record each variant's cells under ``variant.metadata["budget"]`` (see ``budget``); returns the totals
    (``rounds.budget_totals``).

    A grid is one (task, setting code); its fingerprint-bearing metadata changes, so a budgeted
    variant is never taken for the full one on resume (nor the reverse).
    """
    grids: dict[str, list[Variant]] = {}
    for variant in plan:
        grids.setdefault(variant.grid, []).append(variant)
    for grid, variants in grids.items():
        labels = classes[variants[0].task]
        full = [v.name for v in variants if v.method in budget.full_methods]
        chosen, grid_cells = grid_cells_of([v.name for v in variants], labels, budget, grid, full=full,
                                            methods=[v.method for v in variants])
        for variant in variants:
            record = budget_record(budget, chosen[variant.name], len(labels), grid, grid_cells, len(labels) * len(variants))
            meta = variant.metadata
            meta[BUDGET_KEY] = record
            meta["variant_fingerprint"] = fingerprint({"full": meta["variant_fingerprint"], BUDGET_KEY: record})
    return budget_totals(plan, budget)


# The profile fields (``SweepOptions.overrides``) that only the nine tasks read (their options:
# ``profiles.OPTION_OF``): a harness task keeps its stock protocol (its n-shot is written after its
# name, ``hellaswag:10``).
NINE_TASK_OVERRIDES = ("num_fewshot", "n_selections", "n_perturbed_selections", "n_orderings", "ordering_demo_seeds",
                       "order_mode", "truncate_words", "perturbation_seed", "perturbation_mode", "settings")


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
        flag = OPTION_OF[next(iter(given))]
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
    return Sweep(options, lm=lm, echo=echo).run()


class Sweep:
    """One run of a sweep, in stages that read one ``SweepOptions`` (``o``) and what earlier stages set.

    ``check`` (every check of the user's input), ``plan`` (the jobs of every kind, with their
    metadata), ``preflight`` (the tasks built, the budget's cells), ``index`` (the store, the
    fingerprints, ``sweep.json``'s record), then, unless a dry run, under the folder's lock:
    ``resume`` (what is saved already), ``evaluate`` (the pending jobs), ``rounds`` (a budget's later
    rounds) and ``finish`` (the closing line). A job is a native variant (``plan.Variant``), a
    harness task's variant (``harness_runs.HarnessVariant``) or a stock run
    (``leaderboard.StockRun``), each carrying its metadata (``job.Job``).
    """

    def __init__(self, options: SweepOptions, *, lm: Any = None, echo: Callable[[str], None] | None = None) -> None:
        self.o = options
        self.echo = echo or (lambda line: print(line, file=sys.stderr))
        self.start = time.monotonic()
        self.runner: Any = None  # the executor (``check``)
        self.lm = lm
        self.idle = False  # nothing to run and no rounds (``locked_run``)

    def run(self) -> SweepReport:
        import datasets  # noqa: F401  (imported before the checks, as the tasks will need it)

        self.check()
        self.check_model()
        self.plan()
        self.preflight()
        self.index()
        if self.o.dry_run:  # reads the folder, writes nothing (no folder, no sweep.json, no lock file)
            return self.dry_run()
        created = [p for p in (self.store.root, *self.store.root.parents) if not p.exists()]  # removed if nothing runs
        self.store.create()
        try:
            self.locked_run()
        except UserError:  # e.g. the model cannot load: leave no empty folder behind
            self.store.remove_if_unused(created)
            raise
        finally:
            self.runner.close()  # a Ray executor's workers are kept from one round to the next until here
        return self.finish()

    # ------------------------------------------------------------------ check: the user's input

    def check(self) -> None:
        """Every check that can fail on the user's input, before the lock and the model load."""
        o = self.o
        prof = o.profile if isinstance(o.profile, Profile) else get_profile(o.profile)
        self.prof = prof.override(**(o.overrides or {}))
        self.budget = o.budget if o.budget is None or isinstance(o.budget, Budget) else Budget(o.budget)
        self.bank = load_layered_bank(o.bank_dir)  # the shipped banks with bank_dir's directories on top
        # the nine, ii_<task> ids, or the groups all / instructeval_ii; none when only harness tasks are asked
        if not o.tasks and not o.harness_tasks:
            raise UserError("give --tasks (InstructEval's tasks) and/or --harness-tasks (lm-eval's own tasks)")
        self.task_names = resolve_task_names(o.tasks) if o.tasks else []
        ni_tasks = [t for t in self.task_names if get_spec(t).kind == "ni"]
        if ni_tasks and self.budget is not None and (self.budget.design == "adaptive" or self.budget.extend_to is not None):
            option = "--budget-design adaptive" if self.budget.design == "adaptive" else "--budget-extend"
            raise UserError(f"{option} with --tasks {ni_tasks[0]}: its rounds are chosen from accuracy estimates, and a "
                            f"Natural Instructions task is scored by ROUGE-L; deal its cells in advance (--budget-design "
                            f"uniform or balanced) or drop --budget")
        _check_nine_task_overrides(o.overrides, self.task_names, o.harness_tasks, self.echo)
        if o.ni_prompt_format != "schema" and not ni_tasks:
            raise UserError(f"--ni-prompt-format {o.ni_prompt_format} applies to the Natural Instructions tasks "
                            f"(--tasks ni or ni_<task>), and none is in --tasks; drop it")
        if o.harness_rows != "balanced" and not o.harness_tasks:
            raise UserError(f"--harness-rows {o.harness_rows} applies to --harness-tasks only (the nine tasks' test "
                            "sample is balanced, as the paper's); add --harness-tasks or drop it")
        self.method_names = resolve_names(o.methods, self.bank.methods(), "method")
        if self.budget is not None:  # a typo would silently estimate the baseline
            self.budget.check_methods(self.bank.methods())
        self.args_dict = parse_model_args(o.model_args)
        self.runner = make_executor(o.executor, workers=o.workers, ray_address=o.ray_address,
                                    worker_resources=o.worker_resources, lm=self.lm)
        self.part = ShardSpec.parse(o.shard)
        adaptive = self.budget is not None and self.budget.design == "adaptive"
        # rounds of cells chosen from the scores of the earlier ones: an adaptive design's, an extension's
        self.has_rounds = adaptive or (self.budget is not None and self.budget.extend_to is not None)
        if self.has_rounds and not o.log_samples:
            rounds_option = "--budget-design adaptive" if adaptive else "--budget-extend"
            raise UserError(f"{rounds_option} needs the per-sample logs (drop --no-log-samples): each round is "
                            "chosen from the scores of the earlier ones")

    def check_model(self) -> None:
        """The model's options, the output folder, and where the data and banks are."""
        o = self.o
        if self.lm is None:
            check_backend(o.model)
            check_pretrained(self.args_dict)
        self.batch_size = check_batch_size(o.batch_size)
        check_max_batch_size(o.max_batch_size)
        self.label = (check_folder_name(o.model_label, "--model-label") if o.model_label is not None
                      else model_label_from_args(o.model, self.args_dict))
        check_output(o.output, self.label)
        budget = self.budget
        if budget is not None and "design" in budget.defaulted:  # a folder begun under another default keeps its design
            folder = SweepStore(o.output, self.label)
            begun = folder.begun_design()
            if begun is not None and begun != budget.design:
                self.budget = budget.resumed(begun)
                self.echo(f"budget: {folder.root} was begun with the {begun} design, so it continues with it "
                          f"(--budget-design {begun}); the default design, {DEFAULT_DESIGN}, needs another --output")
        data_dir = resolve_data_dir(o.data_dir)  # as the tasks would read it
        self.data_dir = str(Path(data_dir).expanduser().resolve()) if data_dir else None
        self.bank_dir = join_bank_dirs(o.bank_dir)  # resolved; several directories joined by os.pathsep

    # ------------------------------------------------------------------ plan: the jobs of every kind

    def plan(self) -> None:
        """The nine tasks' variants, the stock runs and the harness tasks' variants, each with its metadata."""
        self.placements = _placements(self.o.placements)
        plan = build_plan(self.task_names, self.method_names, self.prof, self.bank, model_label=self.label,
                          placements=self.placements, fewshot_as_multiturn=self.o.fewshot_as_multiturn,
                          data_dir=self.data_dir)
        ii_tasks = [t for t in self.task_names if get_spec(t).kind == "ii"]
        skipped_settings = [s for s in self.prof.settings if s != "zero_shot"]
        if ii_tasks and skipped_settings and plan:
            self.echo(f"sweep: {len(ii_tasks)} Instruction Induction task(s) run zero-shot execution only; "
                      f"settings {', '.join(skipped_settings)} are not planned for them")
        zero_shot_only = [t for t in self.task_names if get_spec(t).kind in ("ii", "ni")]
        if self.task_names and not plan and zero_shot_only and "zero_shot" not in self.prof.settings:
            why = ("its header carries its examples" if get_spec(zero_shot_only[0]).kind == "ni"
                   else "the original protocol's execution accuracy")
            raise UserError(f"--settings {','.join(self.prof.settings)} plans no variant: {zero_shot_only[0]} is zero-shot "
                            f"only ({why}); add zero_shot to --settings")
        self.announce_ni(plan, skipped_settings)
        self.model_meta = {k: self.args_dict[k] for k in MODEL_ARG_KEYS if k in self.args_dict}
        self.run_fp = run_fingerprint(self.o.model, self.args_dict, self.task_names, self.data_dir)  # also: every data file exists
        self.plan_variants = [replace(v, metadata=self.job_metadata(v.protocol_metadata(
            self.prof, bank_dir=self.bank_dir, data_dir=self.data_dir, ni_prompt_format=self.o.ni_prompt_format),
            v.task)) for v in plan]
        self.stock_runs = self.plan_stock_runs()
        self.every_harness, self.harness_configs = self.plan_harness()

    def announce_ni(self, plan: list[Variant], skipped_settings: list[str]) -> None:
        """The plan line of the Natural Instructions tasks: their header encodings, zero-shot only."""
        ni_tasks = [t for t in self.task_names if get_spec(t).kind == "ni"]
        if not ni_tasks:
            return
        from .ni_variants import skipped_encodings

        headers = sum(1 for v in plan if v.task in ni_tasks and v.method == "ni_header")
        skipped = {t: skipped_encodings(t, self.data_dir) for t in ni_tasks}
        notes = "; ".join(f"{t}: {', '.join(e)}" for t, e in skipped.items() if e)
        self.echo(f"sweep: {len(ni_tasks)} Natural Instructions task(s), zero-shot only"
                  + (f" (settings {', '.join(skipped_settings)} not planned for them)" if skipped_settings else "")
                  + f": {headers} header encoding(s) (method ni_header) besides {', '.join(self.method_names)}"
                  + (f"; not planned, as they repeat an earlier encoding's text or the file lacks their parts: {notes}"
                     if notes else ""))

    def job_metadata(self, meta: dict[str, Any], task: str) -> dict[str, Any]:
        """A job's metadata: its protocol's, the model's keys, the run's fingerprint for ``task``."""
        truncation = {ALLOW_TRUNCATION_KEY: True} if self.o.allow_truncation else {}
        return {**meta, **self.model_meta, "model_label": self.label,
                RUN_FINGERPRINT_KEY: for_task(self.run_fp, task), **truncation}

    def plan_stock_runs(self) -> list:
        """``--leaderboard-tasks``: the stock runs (``""`` asks for every task that has a stock counterpart)."""
        o = self.o
        if o.leaderboard_tasks is None:
            return []
        from .leaderboard import plan_leaderboard

        truncation = {ALLOW_TRUNCATION_KEY: True} if o.allow_truncation else {}
        runs, notes = plan_leaderboard(o.leaderboard_tasks, o.leaderboard_map, self.task_names,
                                       test_sample=self.prof.test_sample, test_seed=self.prof.test_seed,
                                       data_dir=self.data_dir, model_meta={**self.model_meta, **truncation})
        for note in notes:
            self.echo(note)
        if o.executor != "local" or self.part:
            raise UserError(
                "--leaderboard-tasks runs the stock tasks on the sweep's own model, so it needs the local executor "
                "without --shard; run the stock tasks in a separate local run into the same --output"
            )
        for run in runs:  # stock results are checked on resume like the variants
            run.metadata[RUN_FINGERPRINT_KEY] = for_task(self.run_fp, run.counterpart.task)
        return runs

    def plan_harness(self) -> tuple[list, dict]:
        """``--harness-tasks``: the (harness task, instruction) variants and each task's stock config."""
        o = self.o
        if not o.harness_tasks:
            return [], {}
        from .harness_runs import plan_harness

        prof = self.prof
        harness, identities, configs = plan_harness(
            o.harness_tasks, self.method_names, self.bank, instructions_per_method=prof.instructions_per_method,
            bank_roots=[None] + self.bank_dir.split(os.pathsep) if self.bank_dir else None,
            instruction_seed=prof.instruction_seed, test_sample=prof.test_sample, test_seed=prof.test_seed,
            data_dir=self.data_dir, placements=self.placements, fewshot_as_multiturn=o.fewshot_as_multiturn,
            dry_run=o.dry_run, budget=self.budget, rows=o.harness_rows, echo=self.echo)
        self.run_fp["data"].update({f"harness:{name}": ident for name, ident in identities.items()})
        for variant in harness:
            variant.metadata.update(self.job_metadata({}, f"harness:{variant.task}"))
        return harness, configs

    # ------------------------------------------------------------------ preflight: the tasks, the budget

    def preflight(self) -> None:
        """Build the first variant of each (task, setting) before the model loads; deal the budget's cells."""
        import datasets

        datasets.disable_progress_bars()  # one sweep bar, not one "Map" bar per variant
        budget, plan = self.budget, self.plan_variants
        classes = preflight(plan, self.prof, classes=budget is not None)
        self.totals = apply_budget(plan, classes, budget) if budget is not None and plan else None
        if self.totals:
            totals = self.totals
            self.echo(f"budget {budget.fraction:g} (seed {budget.seed}, {budget.design} design): {totals['cells']:,} of "
                      f"{totals['grid_size']:,} (instruction, item) cells "
                      f"({totals['cells'] / max(totals['grid_size'], 1):.1%}) in {totals['grids']} "
                      f"(task, setting) grid(s); every instruction >= {_least_items(plan, budget)} "
                      f"items, every item >= 1 instruction; {_full_words(budget)}"
                      + _adaptive_words(budget, totals))
            if budget.extend_to is not None:
                self.echo(_extend_words(budget, totals))
        self.harness_totals = None
        if self.every_harness and budget is not None:
            totals = self.harness_totals = budget_totals(self.every_harness, budget)
            self.echo(f"budget {budget.fraction:g} (seed {budget.seed}, {budget.design} design), harness tasks: "
                      f"{totals['cells']:,} of {totals['grid_size']:,} (instruction, item) cells "
                      f"({totals['cells'] / max(totals['grid_size'], 1):.1%}) in {totals['grids']} (task, placement) "
                      f"grid(s); {_full_words(budget)}" + _adaptive_words(budget, totals))
            if budget.extend_to is not None:
                self.echo(_extend_words(budget, totals, what=", harness tasks"))

    # ------------------------------------------------------------------ index: store, fingerprints, record

    def index(self) -> None:
        """This shard's jobs, their fingerprints and protocols (named in a refusal), and ``sweep.json``."""
        part, plan = self.part, self.plan_variants
        # this shard's harness tasks: each is one chunk (one harness call), dealt like the plan's
        self.harness = part.select(self.every_harness) if self.every_harness and part else self.every_harness
        self.mine = part.select(plan) if part else plan  # this shard's variants (all without --shard)
        self.store = SweepStore(self.o.output, self.label)
        jobs = [*plan, *self.stock_runs, *self.harness]
        self.planned = {job.name: job.fingerprint for job in jobs}
        self.protocols = {v.name: protocol_fields(v.metadata, v.num_fewshot(self.prof)) for v in plan}
        self.protocols.update({job.name: protocol_fields(job.metadata) for job in [*self.harness, *self.stock_runs]})
        # the rounds after the design's cells; an extension smaller than one the folder holds is refused here
        self.schedule = (budget_rounds(self.budget, self.store.saved_extensions(), str(self.store.root))
                         if self.has_rounds else [])
        self.record = self.plan_record()

    def plan_record(self) -> dict[str, Any]:
        """``sweep.json``: what the sweep is (the report's ``plan``)."""
        o, plan = self.o, self.plan_variants
        return {
            "plugin_version": __version__,
            "model": o.model,
            "model_args": self.args_dict,
            "model_label": self.label,
            RUN_FINGERPRINT_KEY: self.run_fp,
            "profile": self.prof.as_dict(),
            "tasks": self.task_names,
            "methods": self.method_names,
            "data_dir": self.data_dir,
            "bank_dir": self.bank_dir,
            "instructions": sorted({(v.task, v.entry.method, v.entry.id, v.entry.sha, v.entry.text) for v in plan}),
            "variants": [v.name for v in plan],
            "leaderboard": [run.metadata["leaderboard"] for run in self.stock_runs],
            "harness": [{"name": v.name, **v.metadata["harness"]} for v in self.harness],
            BUDGET_KEY: self.totals,
            "harness_budget": self.harness_totals,
        }

    # ------------------------------------------------------------------ resume: what is saved already

    def resume(self) -> None:
        """The jobs still to run; refuses results of another model, data or protocol. A saved job whose
        samples file is missing or empty is run again when this run logs samples."""
        store, budget = self.store, self.budget
        store.check_run(self.run_fp)
        done = store.finished()
        store.check_conflicts(self.planned, done, budget=budget.as_dict() if budget is not None else None,
                              protocols=self.protocols)
        if self.o.log_samples:
            done = _logged_only(store, done, [job.name for job in [*self.mine, *self.harness, *self.stock_runs]],
                                self.echo)
        self.stock_pending = [run for run in self.stock_runs if run.name not in done]
        self.harness_pending = [v for v in self.harness if v.name not in done]
        self.pending = [v for v in self.mine if v.name not in done]
        self.report = SweepReport(store.root, planned=len(self.mine) + len(self.harness),
                                  skipped=len(self.mine) - len(self.pending) + len(self.harness) - len(self.harness_pending),
                                  plan=self.record)

    def announce(self, sweep: str) -> None:
        """The plan's lines: the nine tasks' variants (this shard's), the stock and harness tasks'."""
        part, plan, mine, root = self.part, self.plan_variants, self.mine, self.store.root
        if plan and part and not mine:
            self.echo(f"shard {part} of the {sweep}: none of the {len(plan)} variants of --tasks falls to this shard "
                      f"(their {len({v.chunk for v in plan})} chunk(s) are dealt round-robin over {part.count} shards) "
                      f"-> {root}")
        elif plan:
            what = f"shard {part} of the {sweep}: {len(mine)} of {len(plan)}" if part else f"{sweep}: {len(plan)}"
            self.echo(f"{what} variants planned, {len(mine) - len(self.pending)} already done, {len(self.pending)} to run "
                      f"-> {root}")
        if part and self.every_harness and not self.harness:
            tasks_here = len({v.task for v in self.every_harness})
            self.echo(f"shard {part}: none of the {tasks_here} harness task(s) falls to this shard (each is one chunk; "
                      f"the harness tasks are dealt round-robin over {part.count} shards) -> {root}")
        if self.stock_runs:
            self.echo(f"leaderboard: {len(self.stock_runs)} stock task(s), {len(self.stock_pending)} to run: "
                      + ", ".join(f"{r.name} ({r.counterpart.num_fewshot}-shot {r.counterpart.metric})"
                                  for r in self.stock_runs))
        if self.harness:
            shots: dict[str, Any] = {}
            for v in self.harness:
                shots.setdefault(v.task, v.num_fewshot)
            self.echo(f"harness tasks: {len(self.harness)} variant(s) of {len(shots)} task(s), "
                      f"{len(self.harness_pending)} to run: " + ", ".join(f"{name} ({shot}-shot)" for name, shot in shots.items()))

    def dry_run(self) -> SweepReport:
        """Reads the folder, writes nothing: the plan's lines and the rounds to come."""
        self.resume()
        self.announce("sweep (dry run)")
        if self.schedule:
            self.echo(f"then {_schedule_words(self.schedule)}: each round's cells are chosen from the scores saved "
                      f"before it, so they are not counted here")
        self.report.seconds = time.monotonic() - self.start
        return self.report

    # ------------------------------------------------------------------ evaluate, rounds

    def locked_run(self) -> None:
        """Under the folder's run lock: resume, write ``sweep.json``, evaluate, then the rounds.

        Shards write one folder at once: each holds its own run lock (a shard started twice is
        refused) and claims chunks one by one (``shards``); every write takes the short store lock.
        """
        store, part = self.store, self.part
        run_lock = RunLock(store.root, wait=self.o.lock_wait, echo=self.echo,
                           **({"name": shard_lock_name(part.index, part.count)} if part else {}))
        with run_lock:
            with store.updating():
                removed = store.clean_temp_files()
                if removed:
                    self.echo(f"removed {len(removed)} temporary file(s) left by an interrupted write in {store.root}")
                self.resume()
                store.write_plan(self.record)
            self.announce("sweep")
            self.idle = not self.pending and not self.stock_pending and not self.harness_pending and not self.has_rounds
            if self.idle:
                return
            self.evaluate()
            self.rounds()

    def evaluate(self) -> None:
        """The pending jobs: the model loaded (its chat template checked when a placement needs it), the
        stock runs scheduled as their task's variants are saved, the chunks evaluated and saved."""
        o, label = self.o, self.label
        self.spec = ModelSpec(o.model, o.model_args, label, batch_size=self.batch_size, max_batch_size=o.max_batch_size,
                              device=o.device)
        runner, spec = self.runner, self.spec
        chat = any(v.placement != "description" for v in [*self.harness_pending, *self.pending])
        if chat and runner.lm is None and o.executor == "local":
            runner.lm = spec.load()  # loaded now to check its chat template before anything runs
        if chat and runner.lm is not None:
            check_chat_template(runner.lm, label)
        stock = None
        if self.stock_pending:  # the local executor (checked in plan): the stock tasks share its model
            from .leaderboard import StockSchedule  # stock tasks run as soon as their task's variants are saved

            if runner.lm is None:
                runner.lm = spec.load()
            stock = StockSchedule(self.stock_pending, self.pending, lm=runner.lm, store=self.store, model=o.model,
                                  args_dict=self.args_dict, label=label, batch_size=self.batch_size,
                                  device=spec.resolved_device(), log_samples=o.log_samples, write=self.echo)
        if self.has_rounds and (self.pending or self.harness_pending):  # one model load for all rounds
            self.load_once()
        jobs = self.chunks(self.pending, self.harness_pending)
        if jobs or self.stock_pending:
            self.run_chunks(jobs, stock=stock)

    def rounds(self) -> None:
        """A budget's later rounds, for the nine tasks' variants, then the harness tasks'."""
        if not self.schedule:
            return
        if self.part:  # a round is chosen from every shard's cells, so each shard waits for them
            self.other_shards_cells()
        if self.plan_variants:
            self.budget_rounds(self.plan_variants, native_grid_cells, lambda variants: self.chunks(variants, []))
        if self.every_harness:
            from .harness_runs import harness_grid_cells

            self.budget_rounds(self.every_harness, harness_grid_cells(self.harness_configs),
                               lambda variants: self.chunks([], variants), what=" (harness tasks)")

    def budget_rounds(self, first: list, observe: Observe, chunks_of: Callable[[list], list], what: str = "") -> None:
        """The rounds of the schedule (an adaptive design's, then the extensions': ``budget.budget_rounds``),
        each once the earlier ones are saved: ``rounds.plan_round`` gives the round's jobs keyed by
        their first-slice job, their saved cells read by ``observe`` (``adaptive.native_grid_cells``,
        ``harness_runs.harness_grid_cells``)."""
        store, budget = self.store, self.budget
        earlier = {v.name: [v] for v in first}
        for budget_round in self.schedule:
            later = plan_round(budget_round, first, earlier, store, budget, observe)
            for name, variant in later.items():
                earlier[name].append(variant)
                self.planned[variant.name] = variant.fingerprint
            variants = list(later.values())
            done = store.finished()
            store.check_conflicts({v.name: self.planned[v.name] for v in variants}, done, budget=budget.as_dict())
            if self.o.log_samples:
                done = _logged_only(store, done, [v.name for v in variants], self.echo)
            pending = [v for v in variants if v.name not in done]
            cells = sum(len(v.metadata[BUDGET_KEY]["items"]) for v in variants)
            stage = (f"adaptive round {budget_round.step} of {ADAPTIVE_ROUNDS}" if budget_round.extend is None
                     else f"extension to {budget_round.extend:g}, round {budget_round.step} of {EXTEND_ROUNDS}")
            if variants and not pending:
                self.echo(f"{stage}{what}: {cells:,} more cells for {len(variants)} instruction(s), all {len(variants)} "
                          "variant(s) saved already, none to run")
            else:
                self.echo(f"{stage}{what}: {cells:,} more cells for {len(variants)} instruction(s), {len(pending)} "
                          "variant(s) to run")
            self.report.planned += len(variants)
            self.report.skipped += len(variants) - len(pending)
            if pending:
                self.load_once()
                self.run_chunks(chunks_of(pending))

    def other_shards_cells(self) -> None:
        """Before a sharded run's rounds: the other shards' first-slice jobs not saved yet, evaluated
        here unless another process holds them (then waited for: ``shards.ClaimingQueue``).

        Every shard then chooses the same rounds from the same saved cells, and the rounds' chunks go to
        whichever shard claims them first; a shard started after the others finds its part done.
        """
        done = self.store.finished(logged=self.o.log_samples)
        rest = [v for v in self.plan_variants if v.name not in done]
        rest_harness = [v for v in self.every_harness if v.name not in done]
        if not rest and not rest_harness:
            return
        self.echo(f"shard {self.part}: the rounds are chosen from every shard's cells; {len(rest) + len(rest_harness)} "
                  f"variant(s) of the other shards not saved yet, evaluated here unless another shard is evaluating "
                  f"them (then waited for)")
        self.report.planned += len(rest) + len(rest_harness)
        self.load_once()
        self.run_chunks(self.chunks(rest, rest_harness))

    def chunks(self, variants: list[Variant], harness: list) -> list:
        """The chunks of ``variants``, then those of lm-eval's own tasks, instructed (``harness``: one
        chunk per task), for the same executor."""
        jobs: list = chunk_jobs(variants)
        if harness:
            from .harness_runs import harness_jobs

            jobs += harness_jobs(harness, self.harness_configs, self.data_dir)
        return jobs

    def load_once(self) -> None:
        """Load the local executor's model once for all the rounds (a Ray executor's workers hold theirs)."""
        if self.runner.name == "local" and self.runner.lm is None:
            self.runner.lm = self.spec.load()

    def run_chunks(self, jobs: list, stock: Any = None) -> None:
        """Evaluate and save ``jobs`` (``Evaluation``)."""
        Evaluation(self.store, self.report, planned=self.planned, log_samples=self.o.log_samples,
                   progress=self.o.progress, echo=self.echo).run(self.runner, jobs, self.spec, self.prof, stock=stock)

    # ------------------------------------------------------------------ finish

    def finish(self) -> SweepReport:
        """The closing line: what was evaluated, or that everything was saved already."""
        report = self.report
        report.seconds = time.monotonic() - self.start
        if self.idle:  # nothing to run and no rounds: the plan's lines said so
            return report
        if not report.evaluated and report.planned and report.skipped >= report.planned:
            who = "another shard or an earlier run" if self.part else "an earlier run"
            self.echo(f"sweep finished: nothing evaluated here: the {report.planned} variant(s) planned were saved "
                      f"already (by {who}) -> {self.store.root}")
        else:
            self.echo(f"sweep finished: {report.evaluated} variants evaluated in {report.seconds:.0f} s -> {self.store.root}")
        return report


def _least_items(plan: list[Variant], budget: Budget) -> int:
    """The fewest items a budgeted instruction of the plan evaluates (now: an adaptive design's first slice)."""
    counts = [len(v.metadata[BUDGET_KEY]["items"]) for v in plan if v.method not in budget.full_methods]
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
