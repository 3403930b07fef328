"""Relative gain of each instruction over its (model, task) baseline, and the per-cell means.

For one accuracy metric ``x`` (zero-shot, few-shot, perturbation, worst-case) and one
(model m, task t), over all instructions ``i`` of all methods that have a value:

    mu_{m,t}  = sum_i w_i x_i / sum_i w_i,   w_i = null_weight (5) for the null instruction, else 1
    gain_i    = 100 * (x_i - mu_{m,t}) / mu_{m,t}

The weight 5 reproduces the original notebook, which duplicated the null-instruction rows 4 more
times "for fair comparison" before taking the group mean (``--null-weight 1`` switches it off).

Table cell (method M, task t) -- the *mean relative gain*, every model weighted equally:

    cell(M, t) = mean_m [ mean_{i in M} gain_i(m, t) ]

(equal to the original's pooled mean over rows whenever every model has the same number of
instructions per method). ``mu_{m,t} = 0`` (every instruction scored 0) makes the gains undefined:
they are NaN, a ``mu-zero`` warning names the (model, task), and that model is left out of the
cell's mean (the cell's ``n_models`` shows it). Sensitivities are not normalised:
``cell = mean_m mean_{i in M} 100 * SD_i`` (lower is better).
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from .catalog import ACCURACY_METRICS, METRIC_TITLES, SENSITIVITY_METRICS
from .issues import IssueLog

GAIN_COLUMNS = ["metric", "model", "task", "task_type", "method", "instruction", "value", "gain"]
CELL_KEYS = ["metric", "task", "method"]


def weighted_baseline(values: Sequence[float], methods: Sequence[str], null_weight: float = 5.0) -> float:
    """``mu = sum w_i x_i / sum w_i`` with ``w = null_weight`` for method ``null``, else 1.

    Example (null 0.5, three others 0.6, 0.4, 0.7; (5*0.5 + 1.7) / 8 = 0.525):
        >>> weighted_baseline([0.5, 0.6, 0.4, 0.7], ["null", "generic", "generic", "ape"])
        0.525
    """
    weights = [null_weight if m == "null" else 1.0 for m in methods]
    total = math.fsum(weights)
    if total <= 0:
        return math.nan
    return math.fsum(w * x for w, x in zip(weights, values)) / total


def method_mean_gains(accuracy: np.ndarray, methods: Sequence[str], null_weight: float = 5.0) -> dict[str, np.ndarray]:
    """``{method: mean_{i in method} gain_i}`` from instruction accuracies ``accuracy`` (``(..., m)``:
    one set of accuracies, or one row per replicate or draw), ``methods[i]`` instruction i's method;
    ``mu`` and ``gain_i`` as in the module doc, NaN where ``mu = 0``.

    Example (the :func:`weighted_baseline` example, mu = 0.525):
        >>> {m: round(float(g), 2) for m, g in method_mean_gains(np.array([0.5, 0.6, 0.4, 0.7]),
        ...                                                       ["null", "generic", "generic", "ape"]).items()}
        {'ape': 33.33, 'generic': -4.76, 'null': -4.76}
    """
    x = np.asarray(accuracy, dtype=float)
    weights = np.array([null_weight if m == "null" else 1.0 for m in methods])
    mu = np.asarray(x @ weights / weights.sum())[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        gains = np.where(mu == 0, np.nan, 100.0 * (x - mu) / mu)
    names = np.asarray(methods)
    return {m: gains[..., names == m].mean(axis=-1) for m in sorted(set(methods))}


def relative_gains(
    instructions: pd.DataFrame,
    issues: IssueLog,
    *,
    null_weight: float = 5.0,
    metrics: Iterable[str] = ACCURACY_METRICS,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(gains, baselines)``: one gain row per instruction and metric; one mu per (model, task, metric)."""
    gain_rows = []
    base_rows = []
    for metric in metrics:
        if metric not in instructions:
            continue
        have = instructions[~instructions[metric].isna()]
        for (model, task), group in have.groupby(["model", "task"], sort=True):
            mu = weighted_baseline(group[metric].tolist(), group["method"].tolist(), null_weight)
            status = "ok"
            if mu == 0:
                status = "mu=0"
                issues.warn(
                    "mu-zero",
                    f"{model}/{task}: the {METRIC_TITLES[metric].lower()} baseline mu is 0 (every instruction scored 0); "
                    f"relative gains are undefined (NaN) and this model is left out of the {task} gain cells",
                )
            base_rows.append(
                {
                    "metric": metric,
                    "model": model,
                    "task": task,
                    "mu": mu,
                    "n_instructions": len(group),
                    "n_null": int((group["method"] == "null").sum()),
                    "null_weight": null_weight,
                    "status": status,
                }
            )
            for row in group.itertuples(index=False):
                value = getattr(row, metric)
                gain = math.nan if status != "ok" else 100.0 * (value - mu) / mu
                gain_rows.append(
                    {
                        "metric": metric,
                        "model": model,
                        "task": task,
                        "task_type": row.task_type,
                        "method": row.method,
                        "instruction": row.instruction,
                        "value": value,
                        "gain": gain,
                    }
                )
    gains = pd.DataFrame(gain_rows, columns=GAIN_COLUMNS)
    baselines = pd.DataFrame(
        base_rows, columns=["metric", "model", "task", "mu", "n_instructions", "n_null", "null_weight", "status"]
    )
    return gains, baselines


def two_level_mean(frame: pd.DataFrame, value: str, by: Sequence[str] = CELL_KEYS, how: str = "mean") -> pd.DataFrame:
    """Cells ``by`` -> mean over models of the per-model ``how`` (mean or max) over instructions.

    NaN values are left out (each is covered by a warning); ``n_models`` counts the models that
    contribute and ``n_instructions`` the instructions behind the cell.
    """
    columns = list(by) + ["value", "n_models", "n_instructions"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    valid = frame[~frame[value].isna()]
    per_model = valid.groupby(list(by) + ["model"], sort=True)[value].agg([how, "count"]).reset_index()
    cells = (
        per_model.groupby(list(by), sort=True)
        .agg(value=(how, "mean"), n_models=(how, "count"), n_instructions=("count", "sum"))
        .reset_index()
    )
    # Cells whose every model is NaN still appear, as NaN with 0 models.
    every = frame[list(by)].drop_duplicates()
    cells = every.merge(cells, on=list(by), how="left")
    cells["n_models"] = cells["n_models"].fillna(0).astype("int64")
    cells["n_instructions"] = cells["n_instructions"].fillna(0).astype("int64")
    return cells[columns].sort_values(list(by), kind="mergesort").reset_index(drop=True)


def gain_cells(gains: pd.DataFrame) -> pd.DataFrame:
    """Mean relative gain per (metric, task, method)."""
    return two_level_mean(gains, "gain")


def sensitivity_long(instructions: pd.DataFrame) -> pd.DataFrame:
    """Long frame of ``100 * SD`` per instruction, metric in {selectional, permutational}."""
    parts = []
    for metric in SENSITIVITY_METRICS:
        part = instructions[["model", "task", "task_type", "method", "instruction"]].copy()
        part["metric"] = metric
        part["value"] = 100.0 * instructions[metric].astype(float)
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=["metric", "model", "task", "task_type", "method", "instruction", "value"])
    out = pd.concat(parts, ignore_index=True)
    # A (model, task) without any value of a sensitivity contributes nothing (not NaN cells).
    has = out.groupby(["metric", "model", "task"])["value"].transform(lambda s: s.notna().any())
    return out[has.astype(bool)].reset_index(drop=True)


def accuracy_long(instructions: pd.DataFrame) -> pd.DataFrame:
    """Long frame of ``100 * accuracy`` per instruction for every accuracy metric with data."""
    parts = []
    for metric in ACCURACY_METRICS:
        if metric not in instructions or instructions[metric].isna().all():
            continue
        part = instructions[["model", "task", "task_type", "method", "instruction"]].copy()
        part["metric"] = metric
        part["value"] = 100.0 * instructions[metric].astype(float)
        parts.append(part[~part["value"].isna()])
    if not parts:
        return pd.DataFrame(columns=["metric", "model", "task", "task_type", "method", "instruction", "value"])
    return pd.concat(parts, ignore_index=True)

