"""Instructions swept over lm-eval's own tasks (``instructeval run --harness-tasks NAME[:NSHOT],...``).

Each harness task (a task, group or tag of the installed lm-eval; ``harness.tasks``) gets one
variant per selected instruction of each method: the task-agnostic banks (null, generic) apply to
every task, the others' entries come from the harness banks written for the task
(``instruction_banks/harness/<method>/``, ``instructeval_banks.harness_banks``); variants are named
``<task>__<instruction id>``. The null variant is the stock task. All variants of
one harness task are evaluated in one harness call on the same items (``samples={name: ids}``) and
saved as one results file, committed like a sweep chunk; a resumed sweep skips a harness task whose
variants are all saved with the same fingerprint (task, n-shot, instruction, placement, items, data).

Before that call every variant's requests, built as the call will build them, are measured against
the model's window (``harness_window``): prompts the harness would cut from the left (the
instruction first) are refused as the nine tasks' are, or with ``--allow-truncation`` run and
recorded (``truncation`` in the variant's metadata); an answer longer than the window is refused
either way.

A ``--test-sample`` larger than a task's evaluation split is refused at planning, as the nine
tasks refuse it.

Each variant's ``configs[<name>].metadata.harness`` records the harness task, the n-shot, the
method, instruction id, sha and text, the placement, the items (``test_ids``: rows of the evaluation
split, as the samples log's ``doc_id``), the data source and a ``replay`` command: for the null
variant, ``lm_eval --tasks <task> --num_fewshot K --seed 0,1234,1234,1234 --samples '{...}'``
reproduces its requests on the same rows.

With ``--budget F`` each variant evaluates only its cells of the grid (harness task, n-shot) x
its items, drawn by ``budget.assign_cells`` as for the nine tasks (balanced over the gold answers
of a multiple-choice task; the null instruction on every item, so the stock score stays exact).
The grid's name has no placement in it: an instruction gets the same items in every placement and
for every model, so placements and models are compared on paired cells. The cells are recorded
under ``metadata.budget`` (``items``: positions in ``harness.test_ids``) and so in the variant's
fingerprint; the harness's ``samples`` argument gives each variant its own rows in the one harness
call: it builds every row's prompt (the demos are drawn row after row from one seeded generator)
and runs the requests of its cells only, so a cell's request is the full grid's.

``--budget-design adaptive`` deals that way only the first slice; its later rounds
(``rounds.plan_round``, as for the nine tasks, reading the cells with ``harness_grid_cells``) fit
the item-response model to the cells saved so far, one (task, placement) at a time, and add cells
where it is least sure: a round's cells of an instruction are a variant ``<name>__r<round>`` (one harness
call per task and round). Those later cells follow each model's and placement's own scores, so
only the first slice is paired across placements and models. ``--budget-extend`` adds its rounds
the same way, after the design's cells.

Example:
    >>> from instructeval_banks import load_bank
    >>> [e.id for e in task_agnostic_entries(load_bank(), "generic")][:2]
    ['generic-0', 'generic-1']
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from instructeval_banks.harness_banks import load_harness_banks

from ..errors import UserError
from ..harness.local_data import local_splits
from ..harness.tasks import (
    FEWSHOT_SEED,
    build_task,
    expand_refs,
    instructed_config,
    parse_harness_tasks,
    scored_ids,
    stock_task_config,
)
from instructeval_banks.schema import known_tasks
from ..estimation.item_response import target_text
from .adaptive import saved_rows
from .budget import BUDGET_KEY, Budget, budget_record, grid_cells_of
from .harness_window import check_harness_window, record_truncation
from .plan import fingerprint, sample_bank_entries
from .job import ChunkOfVariants
from .rounds import GridCells

DOC_IDS = "eval row"


def task_agnostic_entries(bank: Any, method: str) -> list | None:
    """The entries of ``method`` when its bank is the same for every InstructEval task (null, generic), else None."""
    seen = None
    for task in known_tasks():
        try:
            entries = bank.entries(method, task)
        except UserError:
            return None
        key = [(e.id, e.text) for e in entries]
        if seen is None:
            seen, first = key, entries
        elif key != seen:
            return None
    return first if seen is not None else None


@dataclass
class HarnessVariant:
    """One (harness task, instruction) to evaluate."""

    name: str
    task: str
    num_fewshot: int | None
    method: str
    entry: Any
    placement: str
    metadata: dict[str, Any]
    test_ids: list[int] | None = None  # the task's scored rows, known at plan time under a budget

    @property
    def fingerprint(self) -> str:
        return self.metadata["variant_fingerprint"]

    @property
    def chunk(self) -> str:
        """All variants of one harness task are one job (one harness call, one results file)."""
        return f"harness__{self.task}"

    @property
    def round_grid(self) -> tuple[str, int | None, str]:
        """The grid of its budget rounds (``rounds.plan_round``): (task, n-shot, placement). The
        budget record's grid has no placement (the first cells are the same in every placement), the
        rounds follow each placement's own scores."""
        return (self.task, self.num_fewshot, self.placement)

    def in_round(self, budget_round: int, metadata: dict[str, Any]) -> "HarnessVariant":
        """This variant's cells of a later budget round, named ``<name>__r<round>``.

            >>> v = HarnessVariant("boolq__generic-0", "boolq", 0, "generic", None, "description", {})
            >>> later = v.in_round(1, {"budget": {"items": [2], "round": 1}})
            >>> later.name, later.chunk
            ('boolq__generic-0__r1', 'harness__boolq')
        """
        return dataclasses.replace(self, name=f"{self.name}__r{budget_round}", metadata=metadata)


@dataclass
class HarnessJob(ChunkOfVariants):
    """The pending variants of one harness task, evaluated in one harness call: a job for any executor
    (the local loop, a Ray worker), claimed and saved like a chunk of the nine tasks.

    The progress line of each variant shows the harness call's time shared evenly among its variants
    (they are evaluated together, so no variant has a time of its own).
    """

    key: str
    variants: list[HarnessVariant]
    config: dict[str, Any]  # the stock task's config
    data_dir: str | None
    poolable = False  # one harness call already (``chunk.pool_key``)

    def restricted(self, variants: list[HarnessVariant]) -> "HarnessJob":
        """The same job for ``variants`` only (those still missing after another process saved some)."""
        return harness_jobs(variants, {self.variants[0].task: self.config}, self.data_dir)[0]

    def evaluate(self, lm: Any, spec: Any, profile: Any, bases: dict[str, dict[str, Any]], *, log_samples: bool,
                 on_variant: Callable[[Any, dict[str, Any], float], None] | None = None
                 ) -> tuple[dict[str, Any], dict[str, list[dict]]]:
        """``(results, samples)`` of the harness call (``chunk.evaluate_job`` adds the run's model settings)."""
        from .validate import check_chat_template

        if any(v.placement != "description" for v in self.variants):
            check_chat_template(lm, spec.label)
        started = time.monotonic()
        results, samples = evaluate_harness_task(lm, self.variants, self.config, data_dir=self.data_dir,
                                                 extra_metadata={}, log_samples=log_samples)
        if on_variant is not None:
            share = (time.monotonic() - started) / len(self.variants)
            for variant in self.variants:
                on_variant(variant, results, share)
        return results, samples


def harness_jobs(variants: list[HarnessVariant], configs: dict[str, dict], data_dir: str | None) -> list[HarnessJob]:
    """One job per harness task, in plan order; the key names the results file (``harness__<task>__<fp>``)."""
    by_task: dict[str, list[HarnessVariant]] = {}
    for variant in variants:
        by_task.setdefault(variant.task, []).append(variant)
    return [HarnessJob(f"harness__{task}__{fingerprint({'variants': sorted(v.fingerprint for v in members)})[:8]}",
                       members, configs[task], data_dir) for task, members in by_task.items()]


def data_identity(task: str, cfg: dict[str, Any], data_dir: str | None, *, zero_shot: bool = False) -> dict[str, Any]:
    """What a harness task's rows are: the local files' sha256 (``--data-dir``) or the HF dataset named."""
    if data_dir:
        _, record = local_splits(task, cfg, data_dir, zero_shot=zero_shot)
        return {"source": "local", **record}
    return {"source": "hf", "dataset_path": cfg.get("dataset_path"), "dataset_name": cfg.get("dataset_name"),
            "revision": (cfg.get("dataset_kwargs") or {}).get("revision")}


def plan_harness(text: str, methods: list[str], bank: Any, *, instructions_per_method: int | None, instruction_seed: int,
                 bank_roots: list[str] | None = None,
                 test_sample: int | None, test_seed: int, data_dir: str | None, placements: tuple[str, ...] = ("description",),
                 fewshot_as_multiturn: bool | None = None, dry_run: bool = False, budget: Budget | None = None,
                 rows: str = "balanced", echo: Callable[[str], None] = lambda line: None) -> tuple[list[HarnessVariant], dict[str, dict[str, Any]], dict[str, dict]]:
    """``(variants, data identity per harness task, stock config per harness task)``.

    Every check that can fail on the user's input runs here, before the model loads: unknown tasks
    (did-you-mean), data not found offline, no instruction to run. With ``budget`` each variant's
    metadata gets its cells (module doc).
    """
    refs = expand_refs(parse_harness_tasks(text))
    entries_for = _entries_lookup(methods, bank, bank_roots, instructions_per_method, instruction_seed)
    _check_banks(refs, methods, entries_for, echo)
    variants: list[HarnessVariant] = []
    identities: dict[str, dict[str, Any]] = {}
    configs: dict[str, dict] = {}
    stock_tasks: dict[str, Any] = {}
    for ref in refs:
        cfg = stock_task_config(ref.name)
        configs[ref.name] = cfg
        shot = ref.num_fewshot if ref.num_fewshot is not None else int(cfg.get("num_fewshot") or 0)
        identities[ref.name] = data_identity(ref.name, cfg, data_dir, zero_shot=shot == 0)
        # the hub's dataset is loaded now, so that offline fails before the model loads; a budget needs the
        # rows, and so does a test sample (one larger than the eval split is refused now, as for the nine tasks)
        if budget is not None or (not data_dir and not dry_run) or (data_dir and test_sample is not None):
            stock_tasks[ref.name] = _planning_task(ref.name, cfg, data_dir, test_sample, test_seed, rows)
        for placement in placements:
            for method in methods:
                for entry in entries_for(method, ref.name):
                    variants.append(_harness_variant(ref.name, shot, method, entry, placement, identities[ref.name],
                                                     fewshot_as_multiturn=fewshot_as_multiturn,
                                                     test_sample=test_sample, test_seed=test_seed, rows=rows))
    if budget is not None:
        for ref in refs:
            _budget_cells([v for v in variants if v.task == ref.name], stock_tasks[ref.name], budget,
                          test_sample=test_sample, test_seed=test_seed, rows=rows)
    return variants, identities, configs


def _entries_lookup(methods: list[str], bank: Any, bank_roots: list[str] | None, instructions_per_method: int | None,
                    instruction_seed: int) -> Callable[[str, str], list]:
    """``entries_for(method, task)``: the selected entries of a method's bank for a harness task (the
    task-agnostic bank when the method has one, else the method's harness bank for the task)."""
    agnostic = {m: task_agnostic_entries(bank, m) for m in methods}
    harness_banks = load_harness_banks(bank_roots)

    def entries_for(method: str, task: str) -> list:
        entries = agnostic[method] if agnostic[method] is not None else harness_banks.entries(method, task)
        return sample_bank_entries(entries, instructions_per_method, instruction_seed) if instructions_per_method and entries else entries

    return entries_for


def _check_banks(refs: list, methods: list[str], entries_for: Callable[[str, str], list], echo: Callable[[str], None]) -> None:
    """One line per method without a bank for some of the tasks; refused when no method has any."""
    missing = {m: [r.name for r in refs if not entries_for(m, r.name)] for m in methods}
    missing = {m: names for m, names in missing.items() if names}
    for method, names in missing.items():
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        echo(f"harness tasks: no {method} bank for {shown} (instruction_banks/harness/{method}/; "
             "the null and generic banks apply to every task)")
    if all(not entries_for(m, r.name) for m in methods for r in refs):
        raise UserError("--harness-tasks: none of --methods has instructions for these tasks; add null and/or generic")


def _planning_task(task: str, cfg: dict[str, Any], data_dir: str | None, test_sample: int | None, test_seed: int,
                   rows: str) -> Any:
    """The stock task built at plan time (its rows loaded); a test sample it cannot give is refused."""
    with quiet_harness():  # the evaluation's notes about the task's config are printed once, there
        built = build_task(instructed_config(cfg, name=f"{task}__plan", instruction="", num_fewshot=None, metadata={}),
                           data_dir=data_dir)
        scored_ids(built, test_sample, test_seed, task, rows)  # refuses a sample it cannot give
    return built


def _harness_variant(task: str, shot: int, method: str, entry: Any, placement: str, data: dict[str, Any], *,
                     fewshot_as_multiturn: bool | None, test_sample: int | None, test_seed: int,
                     rows: str = "balanced") -> HarnessVariant:
    """The variant of one instruction of ``task`` in one placement, with its ``harness`` record and fingerprint."""
    suffix = "" if placement == "description" else f"__{placement}"
    name = f"{task}__{entry.id}{suffix}"
    record = {
        "task": task,
        "num_fewshot": shot,
        "method": method,
        "instruction_id": entry.id,
        "instruction_sha": entry.sha,
        "instruction": entry.text,
        "placement": placement,
        # lm-eval's default with a chat template: demos as turns
        "fewshot_as_multiturn": (fewshot_as_multiturn is not False) if placement != "description" else None,
        "test_sample": test_sample,
        "test_seed": test_seed,
        "fewshot_seed": FEWSHOT_SEED,
        "doc_ids": DOC_IDS,
    }
    if rows != "balanced":  # recorded when not the original draw, so that folders begun before the option resume
        record["test_rows"] = rows
    identity = {**record, "data": data}
    meta = {"harness": record, "variant_fingerprint": fingerprint({"harness": identity})}
    return HarnessVariant(name, task, shot, method, entry, placement, meta)


def _budget_cells(variants: list[HarnessVariant], task: Any, budget: Budget, *, test_sample: int | None,
                  test_seed: int, rows: str = "balanced") -> None:
    """Record each variant's budget cells (module doc) in its metadata and fingerprint; ``task``: the
    stock task built at plan time (its rows)."""
    if not variants:
        return
    ids = scored_ids(task, test_sample, test_seed, variants[0].task, rows)
    ids = list(range(len(task.eval_docs))) if ids is None else ids
    if task.OUTPUT_TYPE == "multiple_choice":  # cells balanced over the gold answers, as for the nine tasks
        docs = task.eval_docs
        labels = [repr(task.doc_to_target(docs[i])) for i in ids]
    else:
        labels = [0] * len(ids)
    keys: dict[str, str] = {}  # instruction key (method/id) -> its row, the same in every placement
    for v in variants:
        keys.setdefault(f"{v.method}/{v.entry.id}", v.method)
    grid = f"harness:{variants[0].task}:{variants[0].num_fewshot}"
    full = [key for key, method in keys.items() if method in budget.full_methods]
    # adaptive: the first slice now, the grid's total at the end is what the uniform design deals.
    # The record counts one placement's grid: adding a placement to a run leaves the others' records
    # (and fingerprints) as they were, so it resumes.
    chosen, grid_cells = grid_cells_of(list(keys), labels, budget, grid, full=full, methods=list(keys.values()))
    grid_size = len(ids) * len(keys)
    for v in variants:
        record = budget_record(budget, chosen[f"{v.method}/{v.entry.id}"], len(ids), grid, grid_cells, grid_size)
        v.metadata[BUDGET_KEY] = record
        v.metadata["variant_fingerprint"] = fingerprint({"full": v.metadata["variant_fingerprint"], BUDGET_KEY: record})
        v.test_ids = ids


@contextlib.contextmanager
def quiet_harness() -> Iterator[None]:
    """lm-eval's warnings off for a while (as ``simple_evaluate(verbosity="ERROR")`` turns them off), and
    ``datasets``' progress bars (a task's ``process_docs`` maps its rows)."""
    from datasets.utils import logging as datasets_logging

    logger = logging.getLogger("lm_eval")
    level = logger.level
    bars = datasets_logging.is_progress_bar_enabled()
    logger.setLevel(logging.ERROR)
    datasets_logging.disable_progress_bar()
    try:
        yield
    finally:
        logger.setLevel(level)
        if bars:
            datasets_logging.enable_progress_bar()


def primary_sample_metric(config: dict[str, Any], row: dict[str, Any]) -> str | None:
    """The task's first metric of its ``metric_list`` that a samples row carries (what the report scores)."""
    names = [m.get("metric") for m in config.get("metric_list") or [] if isinstance(m, dict)]
    return next((name for name in names if isinstance(name, str) and name in row), None)


def saved_harness_cells(store: Any, variant: HarnessVariant, config: dict[str, Any],
                        targets: dict[int, str | None] | None = None) -> dict[int, float]:
    """``{item: score}`` of a saved harness variant (items: positions in its ``test_ids``), from its
    samples log under the task's first metric and first filter, as the report reads it; with
    ``targets``, each item's gold ``target`` (text) is added to it."""
    path, rows = saved_rows(store, variant.name)
    metric = primary_sample_metric(config, rows[0]) if rows else None
    if metric is None:
        raise UserError(f"{path}: no per-sample score of the task's metrics to fit the adaptive rounds to")
    filters = [f.get("name") for f in config.get("filter_list") or [] if isinstance(f, dict)] or ["none"]
    present = {row.get("filter", "none") for row in rows}
    first_filter = next((f for f in filters if f in present), None)
    position = {doc: k for k, doc in enumerate(variant.test_ids or [])}
    kept = [row for row in rows if row.get("filter", "none") == first_filter and int(row["doc_id"]) in position]
    cells = {position[int(row["doc_id"])]: float(row[metric]) for row in kept}
    if first_filter is None or len(cells) != len(variant.metadata[BUDGET_KEY]["items"]):
        raise UserError(f"{path}: its rows are not the cells {variant.name} was planned with; "
                        "remove the file and its results to evaluate it again")
    if targets is not None:
        targets.update({position[int(row["doc_id"])]: target_text(row.get("target")) for row in kept})
    return cells


def harness_grid_cells(configs: dict[str, dict]) -> Any:
    """The reader of a harness grid's saved cells for ``rounds.plan_round`` (``configs``: the stock
    config per harness task): every variant's cells of its earlier rounds (``saved_harness_cells``);
    on a multiple-choice task each item's gold answer too, so that the fit gives each its own
    instruction effects, as the report's fit does."""

    def observe(variants: list[HarnessVariant], earlier: dict[str, list[HarnessVariant]], store: Any) -> GridCells:
        config = configs[variants[0].task]
        targets: dict[int, str | None] | None = {} if config.get("output_type") == "multiple_choice" else None
        observed = {v.name: {item: score for part in earlier[v.name]
                             for item, score in saved_harness_cells(store, part, config, targets).items()}
                    for v in variants}
        return GridCells(observed, targets)

    return observe


def replay_command(task: str, num_fewshot: int, ids: list[int] | None, *, chat: bool = False, multiturn: bool | None = None) -> str:
    """The ``lm_eval`` arguments that score the same rows with the same demos (model and data flags aside).

        >>> replay_command("hellaswag", 10, [3, 7])
        'lm_eval --tasks hellaswag --num_fewshot 10 --seed 0,1234,1234,1234 --samples \\'{"hellaswag": [3, 7]}\\''
    """
    command = f"lm_eval --tasks {task} --num_fewshot {num_fewshot} --seed 0,1234,1234,{FEWSHOT_SEED}"
    if chat:  # lm_eval turns --fewshot_as_multiturn on with --apply_chat_template unless told "false"
        command += " --apply_chat_template" + ("" if multiturn is not False else " --fewshot_as_multiturn false")
    if ids is not None:
        command += f" --samples '{json.dumps({task: ids})}'"
    return command


def evaluate_harness_task(lm: Any, variants: list[HarnessVariant], stock_cfg: dict[str, Any], *, data_dir: str | None,
                          extra_metadata: dict[str, Any], log_samples: bool) -> tuple[dict[str, Any], dict[str, list[dict]]]:
    """Evaluate every variant of one harness task in one harness call on the same items: ``(results, samples)``."""
    import lm_eval

    from .. import object_task_manager

    placements = {v.placement for v in variants}
    if len(placements) > 1:  # one harness call per placement: the chat template is a call-wide switch
        return _evaluate_by_placement(lm, variants, stock_cfg, placements, data_dir=data_dir,
                                      extra_metadata=extra_metadata, log_samples=log_samples)
    placement = next(iter(placements))
    chat = placement != "description"
    multiturn = variants[0].metadata["harness"].get("fewshot_as_multiturn")
    tasks, ids = _variant_tasks(variants, stock_cfg, data_dir=data_dir, extra_metadata=extra_metadata,
                                placement=placement, multiturn=multiturn)
    samples = {t.config.task: ids for t in tasks} if ids is not None else None
    if samples is None and any(BUDGET_KEY in v.metadata for v in variants):  # cells are positions among the rows
        samples = {t.config.task: list(range(len(t.eval_docs))) for t in tasks}
    chat_args: dict[str, Any] = {}
    if chat:
        chat_args = {"apply_chat_template": True}
        if multiturn is not None:
            chat_args["fewshot_as_multiturn"] = multiturn
    for variant, task in zip(variants, tasks):  # prompts longer than the window: refused, or recorded (harness_window)
        record_truncation(task, check_harness_window(task, lm, variant, samples=(samples or {}).get(variant.name),
                                                     chat=chat_args, seed=FEWSHOT_SEED))
    started = time.monotonic()
    results = lm_eval.simple_evaluate(model=lm, tasks=tasks, log_samples=log_samples, verbosity="ERROR",
                                      task_manager=object_task_manager(), fewshot_random_seed=FEWSHOT_SEED, samples=samples,
                                      **chat_args)
    # as lm_eval's CLI records it: the report's cost per cell (aggregation.design_projection) reads it
    results.setdefault("total_evaluation_time_seconds", str(time.monotonic() - started))
    samples_out = results.pop("samples", {}) if log_samples else {}
    results.pop("samples", None)
    return results, samples_out


def _evaluate_by_placement(lm: Any, variants: list[HarnessVariant], stock_cfg: dict[str, Any], placements: set[str], *,
                           data_dir: str | None, extra_metadata: dict[str, Any], log_samples: bool
                           ) -> tuple[dict[str, Any], dict[str, list[dict]]]:
    """One harness call per placement (description first), their results and samples merged."""
    results: dict[str, Any] = {}
    samples: dict[str, list[dict]] = {}
    for placement in sorted(placements, key=lambda p: (p != "description", p)):
        part = [v for v in variants if v.placement == placement]
        res, smp = evaluate_harness_task(lm, part, stock_cfg, data_dir=data_dir, extra_metadata=extra_metadata,
                                         log_samples=log_samples)
        if not results:
            results = res
        else:
            for key in ("results", "configs", "versions", "n-shot", "higher_is_better", "n-samples"):
                results.setdefault(key, {}).update(res.get(key) or {})
            results["total_evaluation_time_seconds"] = str(float(results.get("total_evaluation_time_seconds") or 0)
                                                           + float(res.get("total_evaluation_time_seconds") or 0))
        samples.update(smp)
    return results, samples


def _variant_tasks(variants: list[HarnessVariant], stock_cfg: dict[str, Any], *, data_dir: str | None,
                   extra_metadata: dict[str, Any], placement: str, multiturn: bool | None) -> tuple[list[Any], list[int] | None]:
    """``(tasks, ids)``: each variant's task (one placement), its ``harness`` record in the task's
    metadata, and the rows scored (None: all); the rows are read once, by the first variant's task."""
    chat = placement != "description"
    tasks: list[Any] = []
    ids = split = None
    for variant in variants:
        meta = {**extra_metadata, **variant.metadata}
        cfg = instructed_config(stock_cfg, name=variant.name, instruction=variant.entry.text,
                                num_fewshot=variant.num_fewshot, metadata=meta, placement=variant.placement)
        cells = variant.metadata[BUDGET_KEY]["items"] if BUDGET_KEY in variant.metadata else None
        with quiet_harness() if tasks else contextlib.nullcontext():  # its notes on the task's config: once, not per variant
            task = build_task(cfg, data_dir=data_dir, user_instruction=variant.entry.text if placement == "chat-user" else "",
                              dataset=tasks[0].dataset if tasks else None, cells=cells)  # the task's rows, read once
        if not tasks:
            ids, split = _scored_rows(task, variant), split_classes(task)
        record = {**variant.metadata["harness"], "test_ids": ids, "eval_size": len(task.eval_docs),
                  **({"split_classes": split} if split else {}),
                  "data_source": "local" if data_dir else "hf",
                  "replay": replay_command(variant.task, variant.num_fewshot, ids, chat=chat, multiturn=multiturn)
                  if not variant.entry.text else None}
        task.config.metadata = {**(task.config.metadata or {}), "harness": record}
        tasks.append(task)
    return tasks, ids


def split_classes(task: Any) -> dict[str, int] | None:
    """``{gold answer: rows}`` over a multiple-choice task's whole evaluation split (the class mix its
    leaderboard score is taken at: ``split_classes`` in the variants' ``harness`` record, read by the
    aggregation's per-class view); None for other tasks."""
    if task.OUTPUT_TYPE != "multiple_choice":
        return None
    counts: dict[str, int] = {}
    for doc in task.eval_docs:
        label = str(task.doc_to_target(doc)).strip()
        counts[label] = counts.get(label, 0) + 1
    return dict(sorted(counts.items()))


def _scored_rows(task: Any, variant: HarnessVariant) -> list[int] | None:
    """The rows of ``task`` to score (None: all); under a budget they must be those planned (its cells
    were drawn on them), or the run stops."""
    record = variant.metadata["harness"]
    ids = scored_ids(task, record["test_sample"], record["test_seed"], variant.task, record.get("test_rows", "balanced"))
    if variant.test_ids is not None:  # a budget: its cells were drawn on the rows planned
        planned_ids, ids = variant.test_ids, ids if ids is not None else list(range(len(task.eval_docs)))
        if ids != planned_ids:
            raise UserError(f"harness task {variant.task}: its rows changed between planning and evaluation "
                            "(the data files were modified during the run?); run the command again")
    return ids
