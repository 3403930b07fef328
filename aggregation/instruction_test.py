r"""Does any instruction matter? A within-item permutation test valid under designs fixed in advance, and its power.

**Hypothesis.** Under "no instruction matters" an item's outcome does not depend on which instruction
asked it: the scores of item j under the instructions that evaluated it are exchangeable. Where the
cells were chosen before any outcome was seen (every cell, a budget's uniform or gold-balanced share,
the stock instruction on every item), permuting each item's observed scores among the instructions
that scored it leaves their joint distribution unchanged, so the test has its nominal size
(``benchmarks/instruction_test_validation.py`` measures it). The adaptive design's later rounds
choose cells from the outcomes already seen, which this argument does not cover: there the test's
size is not established (the reports' verdicts say so).

**Statistic.** Each observed cell's residual from its item's mean over the instructions that scored
it, ``r_ij = y_ij - mean_{k in R_j} y_kj`` (item difficulty cancels: instructions dealt different items
are compared on what each item makes of them), summed per instruction and gold class ``c`` of the item
(``classes``; one class when none are given):

    T = sum_{i, c} (sum_{j in c, j in S_i} r_ij)^2 / |{j in c: j in S_i}|

An instruction that moves every answer toward one label raises its residuals on that label's items and
lowers them on the others'; on gold-balanced cells the two cancel in its accuracy, not in ``T``.

**p-value.** ``p = (1 + #{b: T_b >= T}) / (1 + B)`` over ``B`` within-item permutations (seeded).

**Power** (:func:`detectable_sd`). Grids are simulated on the same observed cells from the model
``P(y_ij = 1) = sigmoid(l + u_i + b_j)``, ``l`` the observed cells' mean logit, ``b_j`` drawn from the
fitted item distribution (the crossed item-response model's ``item_posterior``), ``u_i ~ N(0, tau^2)``; the
test is applied at level ``alpha``; the smallest instruction-effect SD (in accuracy points: the SD over
instructions of ``mean_j sigmoid(l + u_i + b_j)``) detected with probability ``power`` is interpolated
between the simulated ``tau``.

**Power for graded scores** (:func:`detectable_shift_sd`; ROUGE-L and other scores in [0, 1] that are
not 0/1). Null grids are the observed grid with each item's scores permuted among the instructions
(what "no instruction matters" makes exchangeable); an instruction effect is a shift ``u_i ~ N(0, tau^2)``
added to every score of instruction ``i``; the detectable SD (points, the SD over instructions of
``u_i``) is interpolated as above, over ``SHIFT_TAUS``. A shift is the effect the statistic is built to
see (item-centred residuals); an effect that moves only some items is detected later.

Example (the third instruction is right on every item, the others on half of them; then three
instructions that answer every item alike):
    >>> Y = np.tile([[1, 0], [0, 1], [1, 1.]], 8)  # 3 instructions x 16 items
    >>> permutation_test(Y, n_perm=199, seed="doc").p_value <= 0.05
    True
    >>> permutation_test(np.array([Y[0], Y[0], Y[0]]), n_perm=199, seed="doc").p_value
    1.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .bootstrap import rng_for

DEFAULT_PERMUTATIONS = 999
POWER_SIMULATIONS = 40
POWER_PERMUTATIONS = 99
POWER_TAUS = (0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)  # instruction-effect SDs tried, in logits


@dataclass(frozen=True)
class TestResult:
    __test__ = False  # (a result, not a pytest test class)

    """The statistic, its p-value and the number of permutations."""

    statistic: float
    p_value: float
    n_perm: int


def _layout(Y: np.ndarray, classes: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(residuals (NaN-free, 0 where unobserved), observed mask, class of each item, counts per instruction x class)``."""
    observed = np.isfinite(Y)
    values = np.where(observed, Y, 0.0)
    per_item = observed.sum(axis=0)
    mean = values.sum(axis=0) / np.maximum(per_item, 1)
    residual = np.where(observed, values - mean[None, :], 0.0)
    cls = np.zeros(Y.shape[1], dtype=int) if classes is None else np.asarray(classes, dtype=int)
    onehot = np.eye(int(cls.max()) + 1)[cls]  # items x classes
    counts = observed.astype(float) @ onehot  # instructions x classes
    return residual, observed, onehot, counts


def _statistic(residual: np.ndarray, onehot: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``T`` of a stack ``... x instructions x items`` of residuals (module doc)."""
    sums = residual @ onehot  # ... x instructions x classes
    return np.sum(np.where(counts > 0, sums**2 / np.maximum(counts, 1), 0.0), axis=(-2, -1))


def _permuted(residual: np.ndarray, observed: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` copies of ``residual`` with each item's observed values permuted among its observed rows."""
    m, j = residual.shape
    keys = np.where(observed[None], rng.random((n, m, j)), np.inf)
    source = np.argsort(keys, axis=1)  # observed rows first, in random order
    target = np.argsort(~observed, axis=0, kind="stable")  # observed rows first, in row order
    out = np.zeros((n, m, j))
    cols = np.arange(j)[None, None, :]
    moved = np.take_along_axis(np.broadcast_to(residual, (n, m, j)), source, axis=1)
    take = np.arange(m)[:, None] < observed.sum(axis=0)[None, :]  # slot s holds an observed value
    out[np.arange(n)[:, None, None], np.broadcast_to(target, (n, m, j)), cols] = np.where(take[None], moved, 0.0)
    return out


def permutation_test(Y: np.ndarray, classes: np.ndarray | None = None, *, n_perm: int = DEFAULT_PERMUTATIONS,
                     seed: str = "instructeval", key: Sequence[object] = (),
                     rng: np.random.Generator | None = None) -> TestResult:
    """The within-item permutation test of the module doc on ``Y`` (``instructions x items``, NaN
    where a cell was not evaluated); the generator is seeded from ``seed`` and ``key`` unless ``rng``."""
    Y = np.asarray(Y, dtype=np.float64)
    residual, observed, onehot, counts = _layout(Y, classes)
    observed_t = float(_statistic(residual, onehot, counts))
    rng = rng if rng is not None else rng_for(seed, "instruction-test", *key)
    exceed, batch = 0, max(1, 2_000_000 // max(1, Y.size))
    for start in range(0, n_perm, batch):
        size = min(batch, n_perm - start)
        exceed += int(np.sum(_statistic(_permuted(residual, observed, size, rng), onehot, counts) >= observed_t - 1e-12))
    return TestResult(observed_t, (1 + exceed) / (1 + n_perm), n_perm)


@dataclass(frozen=True)
class Power:
    """The smallest instruction-effect SD (points) the design detects with probability ``power`` at
    level ``alpha`` (``None`` where even the largest simulated effect is not: ``beyond`` says which),
    and the simulated (SD, power) pairs."""

    detectable_sd: float | None
    power: float
    alpha: float
    curve: tuple[tuple[float, float], ...]
    beyond: float | None = None


def detectable_sd(observed: np.ndarray, item_points: np.ndarray, item_weights: np.ndarray, level_logit: float, *,
                  classes: np.ndarray | None = None, alpha: float = 0.05, power: float = 0.8,
                  n_sim: int = POWER_SIMULATIONS, n_perm: int = POWER_PERMUTATIONS,
                  rng: np.random.Generator) -> Power:
    """The power analysis of the module doc: ``observed`` the design's mask (``instructions x items``),
    each item's effect drawn from ``item_weights`` over the logits ``item_points`` (one row per item:
    its posterior), ``level_logit`` the grid's mean logit. Simulated effects grow through
    ``POWER_TAUS`` until the power is reached."""
    m, n = observed.shape

    def simulate(tau: float) -> tuple[float, float]:
        u = rng.normal(0.0, tau, size=m)
        b = item_points[_draw_rows(item_weights, rng)]
        p = 1.0 / (1.0 + np.exp(-(level_logit + u[:, None] + b[None, :])))
        sd = 100.0 * float(np.std(p.mean(axis=1), ddof=1))
        Y = np.where(observed, (rng.random((m, n)) < p).astype(float), np.nan)
        return sd, permutation_test(Y, classes, n_perm=n_perm, rng=rng).p_value

    return _search_power(POWER_TAUS, simulate, alpha=alpha, power=power, n_sim=n_sim)


SHIFT_TAUS = (0.005, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3)  # shift SDs tried, in score units


def detectable_shift_sd(Y: np.ndarray, *, alpha: float = 0.05, power: float = 0.8, n_sim: int = POWER_SIMULATIONS,
                        n_perm: int = POWER_PERMUTATIONS, rng: np.random.Generator) -> Power:
    """The power analysis for graded scores of the module doc on the grid ``Y`` (``instructions x
    items``, NaN where a budget did not score a cell: the simulated grids keep the same cells): the
    smallest shift SD (points) the test detects with probability ``power``.

    Example (8 instructions x 60 items of scores spread over [0, 1]: a shift SD of a few points is
    detected, one far below the items' spread is not):
        >>> Y = np.random.default_rng(0).random((8, 60))
        >>> found = detectable_shift_sd(Y, n_sim=20, rng=np.random.default_rng(1))
        >>> 1.0 < found.detectable_sd < 30.0
        True
    """
    Y = np.asarray(Y, dtype=np.float64)
    m, _ = Y.shape
    observed = np.isfinite(Y)
    values = np.where(observed, Y, 0.0)

    def simulate(tau: float) -> tuple[float, float]:
        u = rng.normal(0.0, tau, size=m)
        null = _permuted(values, observed, 1, rng)[0]  # each item's scores shuffled among the instructions that scored it
        shifted = np.where(observed, null + u[:, None], np.nan)
        return 100.0 * float(np.std(u, ddof=1)), permutation_test(shifted, n_perm=n_perm, rng=rng).p_value

    return _search_power(SHIFT_TAUS, simulate, alpha=alpha, power=power, n_sim=n_sim)


def _search_power(taus: Sequence[float], simulate, *, alpha: float, power: float, n_sim: int) -> Power:
    """The search both power analyses share: for each simulated effect size ``tau`` in turn, ``n_sim``
    draws of ``simulate(tau) -> (realised effect SD in points, the test's p)``; stop at the first size
    rejected with probability ``power`` and interpolate the SD between it and the one before."""
    curve: list[tuple[float, float]] = []
    for tau in taus:
        rejected, sds = 0, []
        for _ in range(n_sim):
            sd, p_value = simulate(tau)
            sds.append(sd)
            rejected += p_value <= alpha
        curve.append((float(np.mean(sds)), rejected / n_sim))
        if rejected / n_sim >= power:
            break
    if curve[-1][1] < power:
        return Power(None, power, alpha, tuple(curve), beyond=curve[-1][0])
    if len(curve) == 1:
        return Power(curve[0][0], power, alpha, tuple(curve))
    (sd0, p0), (sd1, p1) = curve[-2], curve[-1]
    share = (power - p0) / (p1 - p0) if p1 > p0 else 1.0
    return Power(sd0 + share * (sd1 - sd0), power, alpha, tuple(curve))


def _draw_rows(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One column index per row of ``weights`` (rows: items' posteriors over the grid), by its weight."""
    cumulative = np.cumsum(weights, axis=1)
    u = rng.random((weights.shape[0], 1)) * cumulative[:, -1:]
    return np.minimum((u > cumulative).sum(axis=1), weights.shape[1] - 1)
