"""Tables built from the per-cell means: the paper's Tables 3-8 and the extra summaries.

- Main tables (method x task): mean relative gain per accuracy metric (higher is better),
  ``100 * SD`` per sensitivity (lower is better), AvgP / MaxP (mean / max accuracy over a method's
  instructions, in %, averaged over models; Mizrahi et al. 2024).
- Task-type averages: CLS / MCQ / GQA = unweighted mean of the task columns of that type present in
  the table; a method lacking one of those columns gets no average (not a partial one).
- Wins: for each main table and task column, the method(s) with the best value win that task; a
  tie (values within ``tie_tolerance``) is a shared win counted in full for every tied method, so
  the wins of one table may add up to more than its number of tasks. NaN cells never win.
- Variation range: per table and task, max - min over the methods with a value.
- Family and scale breakdowns: the same cell means restricted to the models of one family or one
  scale group (the per-(model, task) baselines are unchanged), with task-type averages.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from .catalog import METRIC_SHORT, METRIC_TITLES, TASK_KIND, TYPE_ORDER, method_title, order_methods, order_tasks
from .relative_gain import two_level_mean
from .tables import Table, best_rows


def wide(cells: pd.DataFrame, metric: str, field: str = "value") -> pd.DataFrame:
    """Method x task frame of one metric's cells, in the paper's orders."""
    part = cells[cells["metric"] == metric]
    if part.empty:
        return pd.DataFrame()
    frame = part.pivot(index="method", columns="task", values=field)
    frame = frame.reindex(index=order_methods(frame.index), columns=order_tasks(frame.columns))
    frame.index.name = "method"
    frame.columns.name = None
    return frame.astype(float)


def models_per_task(long: pd.DataFrame, metric: str) -> dict[str, int]:
    """Number of models with any row of ``metric`` per task (the dagger reference)."""
    part = long[long["metric"] == metric]
    return {task: int(n) for task, n in part.groupby("task")["model"].nunique().items()}


def type_averages(frame: pd.DataFrame, task_types: Mapping[str, str] | None = None) -> pd.DataFrame:
    """CLS/MCQ/GQA columns: unweighted mean of the type's task columns; NaN if a row lacks one."""
    task_types = dict(TASK_KIND, **(task_types or {}))
    out = pd.DataFrame(index=frame.index)
    for kind in TYPE_ORDER:
        cols = [c for c in frame.columns if task_types.get(c) == kind]
        if cols:
            out[kind] = frame[cols].mean(axis=1, skipna=False)
    return out


def main_table(
    name: str,
    title: str,
    cells: pd.DataFrame,
    long: pd.DataFrame,
    metric: str,
    *,
    best: str | None,
    decimals: int,
    tie_tolerance: float,
    note: str = "",
) -> Table | None:
    frame = wide(cells, metric)
    if frame.empty:
        return None
    return Table(
        name=name,
        title=title,
        frame=frame,
        best=best,
        decimals=decimals,
        counts=wide(cells, metric, "n_models"),
        full=models_per_task(long, metric),
        note=note,
        tie_tolerance=tie_tolerance,
    )


def table_label(name: str) -> str:
    """Short display label of a main table: ``gain_few_shot`` -> ``FS gain``."""
    kind, _, metric = name.partition("_")
    if metric in METRIC_SHORT:
        return f"{METRIC_SHORT[metric]} {'gain' if kind == 'gain' else 'SD'}"
    return name


def wins_table(tables: Sequence[Table], tie_tolerance: float) -> tuple[Table | None, pd.DataFrame]:
    """``(wins table, detail)``: per method and table, the number of task columns it (co-)wins."""
    detail_rows = []
    counts: dict[str, dict[str, int]] = {}
    columns = []
    for table in tables:
        label = table.name
        columns.append(label)
        for task in table.frame.columns:
            winners = best_rows(table.frame[task], table.best, tie_tolerance)
            if not winners:
                continue
            detail_rows.append(
                {
                    "table": label,
                    "task": task,
                    "winners": ";".join(winners),
                    "best_value": float(table.frame.loc[winners[0], task]),
                    "shared": len(winners) > 1,
                }
            )
            for method in winners:
                counts.setdefault(method, {}).setdefault(label, 0)
                counts[method][label] += 1
    detail = pd.DataFrame(detail_rows, columns=["table", "task", "winners", "best_value", "shared"])
    if not columns:
        return None, detail
    methods = order_methods(set().union(*[set(t.frame.index) for t in tables]))
    frame = pd.DataFrame(0, index=methods, columns=columns, dtype=float)
    for method, by_table in counts.items():
        for label, n in by_table.items():
            frame.loc[method, label] = n
    frame.index.name = "method"
    frame["total"] = frame.sum(axis=1)
    table = Table(
        name="wins",
        title="Number of wins: tasks on which a method has the best value (ties: a shared win counts for each)",
        frame=frame,
        best="max",
        decimals=0,
        integer=True,
        note="Columns: ZS/FS/Pert/WC gain = zero-shot/few-shot/perturbation/worst-case mean relative gain "
        "(highest wins); Sel/Perm SD = selectional/permutational sensitivity (lowest wins).",
        labels={**{c: table_label(c) for c in columns}, "total": "Total"},
    )
    return table, detail


def range_table(tables: Sequence[Table], decimals: int) -> Table | None:
    """Variation range (max - min over methods) per table and task."""
    rows = {}
    for table in tables:
        finite = table.frame.astype(float)
        counts = finite.notna().sum(axis=0)
        rng = finite.max(axis=0) - finite.min(axis=0)
        rows[table.name] = rng.where(counts >= 2)
    if not rows:
        return None
    frame = pd.DataFrame(rows).T
    frame = frame.reindex(columns=order_tasks(frame.columns))
    frame.index.name = "table"
    return Table(
        name="variation_range",
        title="Variation range across methods (max - min of the table's column)",
        frame=frame,
        decimals=decimals,
        row_header=("Table",),
        labels={name: table_label(name) for name in rows},
    )


def grouped_cells(long: pd.DataFrame, value: str, groups: Mapping[str, str], how: str = "mean") -> pd.DataFrame:
    """Cell means per (metric, group, task, method) over the models of each group."""
    if long.empty:
        return pd.DataFrame(columns=["metric", "group", "task", "method", "value", "n_models", "n_instructions"])
    frame = long.copy()
    frame["group"] = frame["model"].map(groups).fillna("unknown")
    return two_level_mean(frame, value, by=["metric", "group", "task", "method"], how=how)


def grouped_table(
    name: str,
    title: str,
    cells: pd.DataFrame,
    long: pd.DataFrame,
    groups: Mapping[str, str],
    metric: str,
    group_order: Sequence[str],
    group_header: str,
    *,
    best: str | None,
    decimals: int,
    tie_tolerance: float,
) -> Table | None:
    """(group, method) x (tasks + CLS/MCQ/GQA) table of one metric."""
    part = cells[cells["metric"] == metric]
    if part.empty:
        return None
    frames, counts = [], []
    present = [g for g in group_order if g in set(part["group"])]
    for group in present:
        sub = part[part["group"] == group]
        frame = wide(sub, metric)
        frame = pd.concat([frame, type_averages(frame)], axis=1)
        count = wide(sub, metric, "n_models").reindex(columns=frame.columns)
        frame.index = pd.MultiIndex.from_tuples([(group, m) for m in frame.index], names=[group_header.lower(), "method"])
        count.index = frame.index
        frames.append(frame)
        counts.append(count)
    frame = pd.concat(frames)
    frame = frame.reindex(columns=order_tasks([c for c in frame.columns if c not in TYPE_ORDER]) + [c for c in TYPE_ORDER if c in frame.columns])
    count = pd.concat(counts).reindex(columns=frame.columns)
    sub_long = long[long["metric"] == metric].copy()
    sub_long["group"] = sub_long["model"].map(groups).fillna("unknown")
    per = sub_long.groupby(["group", "task"])["model"].nunique().to_dict()
    return Table(
        name=name,
        title=title,
        frame=frame,
        best=best,
        decimals=decimals,
        counts=count,
        full={key: int(n) for key, n in per.items()},
        tie_tolerance=tie_tolerance,
        row_header=(group_header, "Method"),
    )


def significance_table(tests: pd.DataFrame, metric: str, alpha: float) -> Table | None:
    """Method A (rows) x method B (columns): tasks where A beats B with one-sided p < alpha."""
    part = tests[tests["metric"] == metric]
    if part.empty:
        return None
    methods = order_methods(set(part["method_a"]) | set(part["method_b"]))
    frame = pd.DataFrame(0.0, index=methods, columns=methods)
    for row in part.itertuples(index=False):
        if row.p_value < alpha:
            frame.loc[row.method_a, row.method_b] += 1
    for m in methods:
        frame.loc[m, m] = float("nan")
    frame.index.name = "method"
    return Table(
        name=f"significance_{metric}",
        title=f"{METRIC_TITLES[metric]}: number of tasks where the row method beats the column method "
        f"(paired bootstrap, one-sided p < {alpha:g})",
        frame=frame,
        decimals=0,
        integer=True,
    )


def metric_label(kind: str, metric: str) -> str:
    return f"{METRIC_SHORT[metric]} {kind}"


__all__ = [
    "grouped_cells",
    "grouped_table",
    "main_table",
    "method_title",
    "range_table",
    "significance_table",
    "type_averages",
    "wide",
    "wins_table",
]
