"""Marking the tables that hold item-response estimates of budgeted sweeps.

A table's column (a task, or a task type of the type averages) holds estimates when some model's
variants of that task, in the setting the table's metric reads, came from a budgeted sweep. Such a
column's title gets ``(est.)`` -- in Markdown, LaTeX, HTML and the plots, which all print
``Table.column_title`` -- its CSV gets an ``_estimated`` row, and the table a note. A table without
task columns (wins, ranges, significance) that draws on estimates gets the note only.

Which settings each metric reads (``per_instruction``): zero-shot accuracy the ``zero_shot``
variants; few-shot accuracy and selectional sensitivity the ``few_shot`` ones; perturbation and
worst-case accuracy the ``perturbed`` ones; permutational sensitivity the ``ordering`` ones.
"""

from __future__ import annotations

from typing import Iterable

from .catalog import TASK_KIND
from .tables import Table

METRIC_SETTINGS = {
    "zero_shot": ("zero_shot",),
    "few_shot": ("few_shot",),
    "perturbed": ("perturbed",),
    "worst_case": ("perturbed",),
    "selectional": ("few_shot",),
    "permutational": ("ordering",),
}
ESTIMATE_NOTE = ("(est.): estimates of a budgeted sweep (instructeval run --budget) on the full grid, not exact "
                 "accuracies; see Budgeted estimates for their intervals.")
TABLE_NOTE = "Draws on estimates of a budgeted sweep (instructeval run --budget); see Budgeted estimates."


def _metric_of(name: str) -> str | None:
    for metric in sorted(METRIC_SETTINGS, key=len, reverse=True):
        if metric in name:
            return metric
    return None


def estimated_columns(table: Table, estimated: Iterable[tuple[str, str]]) -> frozenset:
    """The column ids of ``table`` that hold estimates, given the estimated (task, setting) pairs."""
    metric = _metric_of(table.name)
    settings = METRIC_SETTINGS.get(metric, ()) if metric else ()
    tasks = {task for task, setting in estimated if setting in settings}
    types = {TASK_KIND.get(task) for task in tasks}
    return frozenset(c for c in table.frame.columns if c in tasks or c in types)


def mark_estimates(tables: dict[str, Table], estimated: set[tuple[str, str]]) -> None:
    """Set ``Table.estimated`` (and the note) on every table that draws on ``estimated`` pairs."""
    if not estimated:
        return
    for table in tables.values():
        columns = estimated_columns(table, estimated)
        if columns:
            table.estimated = columns
            table.note = " ".join(x for x in (table.note, ESTIMATE_NOTE) if x)
        elif _metric_of(table.name) is None or table.name.startswith(("wins", "variation_range", "significance")):
            table.note = " ".join(x for x in (table.note, TABLE_NOTE) if x)
