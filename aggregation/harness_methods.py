r"""The instruction-type breakdown of a fully scored harness grid: each method's mean against the stock score.

For one (model, task, placement, n-shot) grid ``Y`` (instructions x items, every cell scored; the stock
row ``y_0`` the null instruction's) and a method ``M`` with instructions ``I_M`` (generic, ad hoc,
PromptSource, ...):

- the method's per-item score ``m_j = mean_{i in I_M} Y_ij`` and its score ``m = mean_j m_j``;
- its difference from the stock score, paired on the items: ``d_j = m_j - y_0j``, ``d = mean_j d_j``,
  ``SE_d = sd(d_j, ddof=1) / sqrt(n)``, interval ``d +- z SE_d`` (``z`` the normal quantile of the level);
- the **detectable difference**: ``(z_{1 - alpha/2} + z_{power}) SE_d`` with ``alpha = 0.05`` and 80%
  power, the smallest true difference the paired comparison finds with that power (a difference whose
  interval covers 0 says "no effect" only up to this size).

The intervals are over items for these instructions: a method's instructions are the ones the bank
holds, not a sample from all the method could write, so they say how sure the grid is of these
instructions' mean, not of the method's. A budgeted grid (a cell not scored) has no row: its
per-item scores are not all observed (its card and estimates are in the other tables).

Example (a method right on every item where the stock task is right on half):
    >>> Y = np.array([[1, 0, 1, 0, 1, 0], [1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1.]])
    >>> row = method_rows(Y, ["null", "adhoc", "adhoc"], level=0.95)[0]
    >>> row["method"], row["n_instructions"], row["score"], row["vs_stock"]
    ('adhoc', 2, 1.0, 0.5)
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any, Sequence

import numpy as np
import pandas as pd

ALPHA, POWER = 0.05, 0.8
# (z_{1 - alpha/2} + z_power): times a difference's SE, the difference found with that power
DETECTABLE_Z = NormalDist().inv_cdf(1 - ALPHA / 2) + NormalDist().inv_cdf(POWER)
METHOD_COLUMNS = ["model", "task", "placement", "num_fewshot", "method", "n_instructions", "n_items", "score", "ci_low",
                  "ci_high", "vs_stock", "vs_stock_low", "vs_stock_high", "detectable_difference"]


def method_rows(Y: np.ndarray, methods: Sequence[str], *, level: float) -> list[dict[str, Any]]:
    """One row per method other than ``null`` of the full grid ``Y`` (module doc; scores as fractions)."""
    methods = list(methods)
    if "null" not in methods or np.isnan(Y).any():
        return []
    stock = Y[methods.index("null")]
    n = Y.shape[1]
    z = NormalDist().inv_cdf(0.5 + level / 2)
    out = []
    for method in sorted(set(methods) - {"null"}):
        rows = [i for i, m in enumerate(methods) if m == method]
        per_item = Y[rows].mean(axis=0)
        diff = per_item - stock
        se_m = float(np.std(per_item, ddof=1)) / math.sqrt(n) if n > 1 else math.nan
        se_d = float(np.std(diff, ddof=1)) / math.sqrt(n) if n > 1 else math.nan
        score, d = float(per_item.mean()), float(diff.mean())
        out.append({"method": method, "n_instructions": len(rows), "n_items": n, "score": score,
                    "ci_low": score - z * se_m, "ci_high": score + z * se_m, "vs_stock": d,
                    "vs_stock_low": d - z * se_d, "vs_stock_high": d + z * se_d,
                    "detectable_difference": DETECTABLE_Z * se_d})
    return out


def harness_methods(effects, level: float) -> pd.DataFrame:
    """The breakdown of every fully scored grid of a ``harness_effects.HarnessEffects``."""
    scores = effects.scores
    out = []
    for (model, task, placement, shot), (_ids, instruction_ids, Y) in sorted(effects.items.items()):
        mine = scores[(scores["model"] == model) & (scores["task"] == task) & (scores["placement"] == placement)
                      & (scores["num_fewshot"] == shot)]
        method_of = dict(zip(mine["instruction"], mine["method"]))
        if any(i not in method_of for i in instruction_ids):
            continue
        for row in method_rows(np.asarray(Y, dtype=np.float64), [method_of[i] for i in instruction_ids], level=level):
            out.append({"model": model, "task": task, "placement": placement, "num_fewshot": shot, **row})
    return pd.DataFrame(out, columns=METHOD_COLUMNS)
