"""Every statistic of a budgeted grid from its estimator's draws, never from its point estimates.

A budgeted grid (``instructeval run --budget F``) knows its instructions' accuracies on the full grid
only through its estimator's predictive draws (``GridFit.draws``: ``D x m`` accuracies, one row per
draw of the whole grid). The point estimates are pulled toward their method's mean, so a statistic
*across* instructions computed from them (their minimum, their spread, the stock prompt's percentile
among them) is biased toward "every instruction alike": on a grid observed at 2% every estimate can
sit at one value. Here each statistic is computed draw by draw and summarised by

    estimate = median_d s(acc_d),    interval = the (1 - level) / 2 and (1 + level) / 2 quantiles of s(acc_d)

so its interval holds the unevaluated cells' uncertainty. ``STATISTICS`` names them (the names the
validation table and the reports use); ``stock`` is the row of the stock (null) instruction, which the
statistics over "the instructions" (``min``, ``median``, ``max``, ``stock_percentile``) leave out,
as the harness report's columns do; the sensitivity card's measures take every row.

=====================  ========================================================  =====================
name                   per draw ``d`` (``a = acc_d``, ``o``: ``a`` without stock)  reported in
=====================  ========================================================  =====================
min, median, max       ``min(o)``, ``median(o)``, ``max(o)``                      harness effects
stock_percentile       mid-rank percentile of ``a[stock]`` among ``o``            harness effects
avgp, maxp, minp       ``mean(a)``, ``max(a)``, ``min(a)``                        sensitivity card
spread, cps            ``max(a) - min(a)``, ``(1 - (max(a) - mean(a))) max(a)``   sensitivity card
q05 ... q95            ``np.quantile(a, q)``                                      sensitivity card
=====================  ========================================================  =====================

The instruction-effect SD needs every cell of a draw, not its accuracies: ``instruction_sd_draws``.

Example (two draws of three instructions, the first the stock one):
    >>> acc = np.array([[0.5, 0.4, 0.8], [0.5, 0.6, 0.7]])
    >>> STATISTICS["max"](acc, 0).tolist(), STATISTICS["stock_percentile"](acc, 0).tolist()
    ([0.8, 0.7], [50.0, 0.0])
    >>> s = summarize(STATISTICS["spread"](acc, 0), 0.5)
    >>> round(s.estimate, 3), round(s.low, 3), round(s.high, 3)
    (0.3, 0.25, 0.35)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .sensitivity_measures import QUANTILES, mean_square_components

Statistic = Callable[[np.ndarray, "int | None"], np.ndarray]


def _others(acc: np.ndarray, stock: int | None) -> np.ndarray:
    """The draws' accuracies without the stock row (every row when there is none)."""
    return acc if stock is None else np.delete(acc, stock, axis=1)


def stock_percentile(acc: np.ndarray, stock: int | None) -> np.ndarray:
    """Per draw, the stock score's mid-rank percentile among the other instructions
    (``leaderboard.percentile_of``: below + half of the ties, over their number)."""
    if stock is None or acc.shape[1] < 2:
        return np.full(acc.shape[0], np.nan)
    others, score = _others(acc, stock), acc[:, [stock]]
    below = (others < score - 1e-9).sum(axis=1)
    tied = (np.abs(others - score) <= 1e-9).sum(axis=1)
    return 100.0 * (below + 0.5 * tied) / others.shape[1]


def _cps(acc: np.ndarray) -> np.ndarray:
    best = acc.max(axis=1)
    return (1.0 - (best - acc.mean(axis=1))) * best


STATISTICS: dict[str, Statistic] = {
    "min": lambda acc, stock: _others(acc, stock).min(axis=1),
    "median": lambda acc, stock: np.median(_others(acc, stock), axis=1),
    "max": lambda acc, stock: _others(acc, stock).max(axis=1),
    "stock_percentile": stock_percentile,
    "avgp": lambda acc, stock: acc.mean(axis=1),
    "maxp": lambda acc, stock: acc.max(axis=1),
    "minp": lambda acc, stock: acc.min(axis=1),
    "spread": lambda acc, stock: acc.max(axis=1) - acc.min(axis=1),
    "cps": lambda acc, stock: _cps(acc),
    **{f"q{round(q * 100):02d}": (lambda acc, stock, q=q: np.quantile(acc, q, axis=1)) for q in QUANTILES},
}
# The statistics in points (x100 where reported); stock_percentile is a percentile already.
CARD_STATISTICS = ("avgp", "maxp", "minp", "spread", "cps", *(f"q{round(q * 100):02d}" for q in QUANTILES))
EFFECT_STATISTICS = ("min", "median", "max", "stock_percentile")


@dataclass(frozen=True)
class DrawSummary:
    """A statistic's estimate (the draws' median) and percentile interval."""

    estimate: float
    low: float
    high: float


def summarize(values: np.ndarray, level: float) -> DrawSummary:
    """The median and the central ``level`` percentile interval of one statistic's draws (NaN where
    a draw has none: all NaN gives NaN)."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if not values.size:
        return DrawSummary(math.nan, math.nan, math.nan)
    alpha = (1.0 - level) / 2.0
    low, mid, high = np.quantile(values, [alpha, 0.5, 1.0 - alpha])
    return DrawSummary(float(mid), float(low), float(high))


def statistic_draws(name: str, acc: np.ndarray, stock: int | None = None) -> np.ndarray:
    """``STATISTICS[name]`` of every draw of ``acc`` (``D x m``)."""
    return STATISTICS[name](np.asarray(acc, dtype=np.float64), stock)


def instruction_sd_draws(grids: np.ndarray) -> np.ndarray:
    """The instruction-effect SD (``sensitivity_measures.instruction_effect_sd``, a fraction) of every
    drawn grid (``D x m x n``)."""
    between, _ = mean_square_components(np.asarray(grids, dtype=np.float64))
    return np.sqrt(np.maximum(between, 0.0))


def pair_flip_draws(acc_a: np.ndarray, acc_b: np.ndarray, stock_a: int, stock_b: int) -> np.ndarray:
    """Per draw, the share of instructions (rows of the same instructions in both, stock left out)
    that order two models the other way than their stock scores do; NaN where the stock scores tie.

    ``acc_a`` and ``acc_b`` are the two models' draws (``D x m``, the same instruction in each
    column; independent fits, so draw d of one is paired with draw d of the other).

    Example (one draw; stock 0.6 vs 0.5; instruction 1 flips the order, instruction 2 keeps it):
        >>> pair_flip_draws(np.array([[0.6, 0.4, 0.7]]), np.array([[0.5, 0.5, 0.6]]), 0, 0).tolist()
        [0.5]
    """
    gap = acc_a[:, stock_a] - acc_b[:, stock_b]
    diff = _others(acc_a, stock_a) - _others(acc_b, stock_b)
    flipped = np.sign(diff) == -np.sign(gap)[:, None]
    return np.where(np.abs(gap) > 1e-9, flipped.mean(axis=1), np.nan)
