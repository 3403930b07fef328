"""The budget rounds of every kind of job: one planner, and the budget's totals for the plan line.

A round (an adaptive design's, or an extension's: ``budget.budget_rounds``) takes each grid of the
first-slice jobs apart (a job's ``round_grid``: a nine-task variant's (task, setting) grid, a harness
variant's (task, n-shot, placement)), reads back the cells its jobs' earlier rounds saved (``observe``,
the kind's reader: ``adaptive.native_grid_cells``, ``harness_runs.harness_grid_cells``), and lets
``budget.next_round_cells`` choose where to add cells. Each job that gets cells becomes a job of its
own, ``job.in_round(round, metadata)``: the same instruction and protocol, its ``budget`` record
listing the new items and the round (``round_metadata``), its fingerprint derived from the first
slice's.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterable, Protocol, Sequence

from ..fingerprint import fingerprint
from .budget import BUDGET_KEY, Budget, BudgetRound, extended_cells, next_round_cells, round_record, round_target
from .job import Job

if TYPE_CHECKING:
    from ..estimation import ChoiceGrid
    from .store import SweepStore


class RoundJob(Job, Protocol):
    """A budgeted job: its method (the full methods get every item) and the grid it is a row of."""

    @property
    def method(self) -> str: ...

    @property
    def round_grid(self) -> Any: ...  # sortable; the jobs of one grid share their items

    def in_round(self, budget_round: int, metadata: dict[str, Any]) -> "RoundJob": ...


@dataclass
class GridCells:
    """What a grid's saved cells say: ``observed[name] = {item: score}``, each item's gold answer
    (``targets``; None: no classes), the label scores (``choice``) and the estimator the round's
    allocation fits, recorded in the round's records when given (``allocation``)."""

    observed: dict[str, dict[int, float]]
    targets: dict[int, str | None] | None = None
    choice: "ChoiceGrid | None" = None
    allocation: str | None = None


Observe = Callable[[list[Any], dict[str, list[Any]], "SweepStore"], GridCells]


def round_metadata(metadata: dict[str, Any], items: list[int], budget_round: BudgetRound,
                   allocation: str | None = None) -> dict[str, Any]:
    """A first-slice job's metadata for its cells ``items`` of ``budget_round``; its fingerprint
    covers the first slice's and the round's record.

        >>> meta = round_metadata({"budget": {"items": [0, 3], "round": 0}, "variant_fingerprint": "f"}, [1],
        ...                       BudgetRound(1, None, 1, 2))
        >>> meta["budget"], len(meta["variant_fingerprint"]) > 8
        ({'items': [1], 'round': 1}, True)
    """
    meta = copy.deepcopy(metadata)
    record = round_record(meta[BUDGET_KEY], items, budget_round)
    meta[BUDGET_KEY] = record if allocation is None else {**record, "allocation": allocation}
    meta["variant_fingerprint"] = fingerprint({"first": metadata["variant_fingerprint"], BUDGET_KEY: meta[BUDGET_KEY]})
    return meta


def plan_round(budget_round: BudgetRound, first: Sequence[RoundJob], earlier: dict[str, list[RoundJob]],
               store: "SweepStore", budget: Budget, observe: Observe) -> dict[str, RoundJob]:
    """The job of ``budget_round`` of each first-slice job (of ``first``, all budgeted) that gets
    cells, keyed by the first-slice job's name; ``earlier[name]`` are its earlier rounds' jobs
    (itself included), whose cells ``observe(grid's jobs, earlier, store)`` reads back."""
    grids: dict[Hashable, list[RoundJob]] = {}
    for job in first:
        grids.setdefault(job.round_grid, []).append(job)
    new: dict[str, RoundJob] = {}
    for _, jobs in sorted(grids.items()):
        record = jobs[0].metadata[BUDGET_KEY]
        seen = observe(jobs, earlier, store)
        methods = {job.name: job.method for job in jobs}
        target = round_target(budget, budget_round, list(methods.values()), record["n_items"], record)
        chosen = next_round_cells(seen.observed, methods, record["n_items"], target, budget_round.rounds_left,
                                  frozen=[job.name for job in jobs if job.method in budget.full_methods],
                                  targets=seen.targets, choice=seen.choice)
        for job in jobs:
            if chosen.get(job.name):
                meta = round_metadata(job.metadata, chosen[job.name], budget_round, seen.allocation)
                new[job.name] = job.in_round(budget_round.number, meta)
    return new


def budget_totals(jobs: Iterable[RoundJob], budget: Budget) -> dict[str, Any]:
    """The budgeted jobs' grids under ``budget`` (from their records): ``{**budget, "grids", "cells",
    "grid_size"}``, with ``first_cells`` (an adaptive design's first slice) and, with
    ``--budget-extend``, ``extend_to`` and ``extend_cells`` (the cells the extension brings them to)."""
    grids: dict[Hashable, tuple[int, int]] = {}
    methods: dict[Hashable, list[str]] = {}
    n_items: dict[Hashable, int] = {}
    first_cells = 0
    for job in jobs:
        record = job.metadata[BUDGET_KEY]
        grids[job.round_grid] = (record["grid_cells"], record["grid_size"])
        methods.setdefault(job.round_grid, []).append(job.method)
        n_items[job.round_grid] = record["n_items"]
        first_cells += len(record["items"])
    totals = {**budget.as_dict(), "grids": len(grids), "cells": sum(c for c, _ in grids.values()),
              "grid_size": sum(s for _, s in grids.values())}
    if budget.design == "adaptive":
        totals["first_cells"] = first_cells
    if budget.extend_to is not None:
        totals.update(extend_to=budget.extend_to, extend_cells=sum(
            max(cells, extended_cells(methods[key], n_items[key], budget, budget.extend_to))
            for key, (cells, _) in grids.items()))
    return totals
