"""Bootstrap confidence intervals for mean-relative-gain cells and a paired test between methods.

What is resampled: the test items. For a task with items ``j = 1..n`` (its ``doc_id`` list), one
replicate ``b`` draws ``n`` items with replacement; the same draw is used for every instruction,
setting and demo seed of every model of that task whose item list is identical (paired across
methods, and across models, which share the test sample). Per replicate, every variant accuracy is
recomputed on the drawn items, then each instruction's metric, the baseline ``mu`` (null weighted
as for the point estimate), the gains, the per-model method means and the across-model cell -- the
full pipeline of ``relative_gain.py``. Instructions, demo sets and orderings are held fixed: the
intervals measure test-item sampling noise only.

- Confidence interval: percentile bootstrap, ``[q_{(1-level)/2}, q_{(1+level)/2}]`` of the
  replicate cells (``numpy.quantile``, linear interpolation), default ``level = 0.95``, ``B = 1000``.
- Paired test "method A beats method B" on one (metric, task) cell pair, the paired bootstrap of
  Koehn (2004) / Berg-Kirkpatrick et al. (2012): with ``d = cell_A - cell_B`` and replicate
  differences ``d_b`` (same resampled items for A and B), the one-sided p-value is
  ``p = (1 + #{b : d_b - d >= d}) / (B + 1)`` -- the replicate distribution re-centred at 0 stands
  in for the null hypothesis ``d <= 0``. ``d <= 0`` gives ``p >= 0.5``.

Seeding: every draw uses ``numpy.random.default_rng(int(sha256(f"{seed}|{task}|{n}|{docs}")[:16], 16))``
where ``seed`` is the recorded string seed (``--seed``) and ``docs`` the sha256 of the item list,
so a task's draws never depend on other tasks, on file order or on the models present.
A replicate whose baseline is 0 gives NaN for that model; it is left out of that replicate's
across-model mean (as the point estimate leaves the model out) and counted in ``n_degenerate``.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .issues import IssueLog
from .relative_gain import method_mean_gains
from .samples import ItemMatrix

CI_COLUMNS = ["metric", "task", "method", "value", "ci_low", "ci_high", "se", "n_boot", "n_degenerate", "status"]
TEST_COLUMNS = ["metric", "task", "method_a", "method_b", "diff", "ci_low", "ci_high", "p_value", "n_boot"]


def rng_for(seed: str, *parts: object) -> np.random.Generator:
    """A generator seeded from the string ``"seed|part|part..."`` (sha256, first 64 bits).

    Example:
        >>> int(rng_for("x", "agnews").integers(0, 1000)) == int(rng_for("x", "agnews").integers(0, 1000))
        True
    """
    text = "|".join([str(seed)] + [str(p) for p in parts])
    return np.random.default_rng(int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:16], 16))


def resample_counts(rng: np.random.Generator, n_items: int, n_boot: int) -> np.ndarray:
    """``n_boot x n_items`` multiplicities of a with-replacement draw of ``n_items`` items (rows sum to n)."""
    draws = rng.integers(0, n_items, size=(n_boot, n_items))
    counts = np.zeros((n_boot, n_items), dtype=np.float64)
    np.add.at(counts, (np.repeat(np.arange(n_boot), n_items), draws.ravel()), 1.0)
    return counts


def docs_signature(doc_ids: np.ndarray) -> str:
    return hashlib.sha256(np.asarray(doc_ids, dtype=np.int64).tobytes()).hexdigest()[:16]


def method_gain_replicates(
    matrix: ItemMatrix, metric: str, counts: np.ndarray, *, null_weight: float = 5.0
) -> dict[str, np.ndarray]:
    """``{method: replicate mean gains (length B)}`` of one (model, task) for one accuracy metric.

    ``counts`` (``B x n``) are item multiplicities; replicate accuracies are ``counts @ values.T / n``.
    """
    rows_by_instruction = matrix.metric_rows.get(metric) or {}
    if not rows_by_instruction:
        return {}
    keys = sorted(rows_by_instruction)
    n_items = matrix.values.shape[1]
    mapping = np.zeros((len(keys), matrix.values.shape[0]))
    for i, key in enumerate(keys):
        rows = rows_by_instruction[key]
        mapping[i, rows] = 1.0 / len(rows)
    accuracies = counts @ matrix.values.T / n_items  # B x rows
    x = accuracies @ mapping.T  # B x instructions
    return method_mean_gains(x, [method for method, _ in keys], null_weight)


def bootstrap_cells(
    matrices: Mapping[tuple[str, str], ItemMatrix],
    cells: pd.DataFrame,
    gains: pd.DataFrame,
    issues: IssueLog,
    *,
    metrics: Sequence[str],
    n_boot: int = 1000,
    level: float = 0.95,
    seed: str = "instructeval",
    null_weight: float = 5.0,
) -> tuple[pd.DataFrame, dict[tuple[str, str, str], np.ndarray]]:
    """``(ci_table, replicates)`` for every gain cell of ``metrics``.

    ``replicates[(metric, task, method)]`` holds the B replicate cell values (for the paired test).
    A cell gets no interval (status says why) when a model that contributes to its point estimate
    has no item matrix.
    """
    counts_cache: dict[tuple[str, int, str], np.ndarray] = {}
    per_model: dict[tuple[str, str, str], dict[str, np.ndarray]] = defaultdict(dict)
    for (model, task), matrix in sorted(matrices.items()):
        n = matrix.values.shape[1]
        key = (task, n, docs_signature(matrix.doc_ids))
        if key not in counts_cache:
            counts_cache[key] = resample_counts(rng_for(seed, *key), n, n_boot)
        for metric in metrics:
            for method, reps in method_gain_replicates(matrix, metric, counts_cache[key], null_weight=null_weight).items():
                per_model[(metric, task, method)][model] = reps
    contributors = (
        gains[~gains["gain"].isna()].groupby(["metric", "task", "method"])["model"].apply(lambda s: sorted(set(s))).to_dict()
        if not gains.empty
        else {}
    )
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2
    rows = []
    replicates: dict[tuple[str, str, str], np.ndarray] = {}
    for cell in cells[cells["metric"].isin(metrics)].itertuples(index=False):
        key = (cell.metric, cell.task, cell.method)
        models = contributors.get(key, [])
        have = per_model.get(key, {})
        lacking = [m for m in models if m not in have]
        base = {"metric": cell.metric, "task": cell.task, "method": cell.method, "value": cell.value}
        if not models:
            rows.append({**base, "ci_low": math.nan, "ci_high": math.nan, "se": math.nan, "n_boot": 0, "n_degenerate": 0, "status": "no value"})
            continue
        if lacking:
            rows.append(
                {**base, "ci_low": math.nan, "ci_high": math.nan, "se": math.nan, "n_boot": 0, "n_degenerate": 0,
                 "status": "no per-sample logs for " + ", ".join(lacking)}
            )
            continue
        stack = np.vstack([have[m] for m in models])  # models x B
        with np.errstate(invalid="ignore"):
            valid = ~np.isnan(stack)
            n_valid = valid.sum(axis=0)
            rep = np.where(n_valid > 0, np.nansum(stack, axis=0) / np.maximum(n_valid, 1), np.nan)
        degenerate = int((n_valid < len(models)).sum())
        good = rep[~np.isnan(rep)]
        replicates[key] = rep
        if len(good) < 2:
            rows.append({**base, "ci_low": math.nan, "ci_high": math.nan, "se": math.nan, "n_boot": int(len(good)), "n_degenerate": degenerate, "status": "too few valid replicates"})
            continue
        rows.append(
            {
                **base,
                "ci_low": float(np.quantile(good, lo_q)),
                "ci_high": float(np.quantile(good, hi_q)),
                "se": float(np.std(good, ddof=1)),
                "n_boot": int(len(good)),
                "n_degenerate": degenerate,
                "status": "ok",
            }
        )
    table = pd.DataFrame(rows, columns=CI_COLUMNS)
    degenerate = table[table["n_degenerate"] > 0]
    for task, part in degenerate.groupby("task", sort=True):
        worst = part.groupby("metric", sort=True)["n_degenerate"].max()
        detail = ", ".join(f"{metric} {int(n)}" for metric, n in worst.items())
        issues.warn(
            "bootstrap-degenerate",
            f"{task}: some replicates had a zero baseline mu for a model (that model is left out of those "
            f"replicates' cells); replicates affected of {n_boot}: {detail}",
        )
    return table, replicates


def paired_tests(
    cells: pd.DataFrame,
    replicates: Mapping[tuple[str, str, str], np.ndarray],
    *,
    level: float = 0.95,
) -> pd.DataFrame:
    """One row per (metric, task, ordered method pair A != B): diff, its CI, one-sided p for A > B."""
    point = {(c.metric, c.task, c.method): c.value for c in cells.itertuples(index=False)}
    by_cell: dict[tuple[str, str], list[str]] = defaultdict(list)
    for metric, task, method in sorted(replicates):
        by_cell[(metric, task)].append(method)
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2
    rows = []
    for (metric, task), methods in sorted(by_cell.items()):
        for a in methods:
            for b in methods:
                if a == b:
                    continue
                diff = point[(metric, task, a)] - point[(metric, task, b)]
                d = replicates[(metric, task, a)] - replicates[(metric, task, b)]
                d = d[~np.isnan(d)]
                if len(d) < 2 or not math.isfinite(diff):
                    continue
                p = (1 + int(np.sum(d - diff >= diff))) / (len(d) + 1)
                rows.append(
                    {
                        "metric": metric,
                        "task": task,
                        "method_a": a,
                        "method_b": b,
                        "diff": diff,
                        "ci_low": float(np.quantile(d, lo_q)),
                        "ci_high": float(np.quantile(d, hi_q)),
                        "p_value": p,
                        "n_boot": int(len(d)),
                    }
                )
    return pd.DataFrame(rows, columns=TEST_COLUMNS)
