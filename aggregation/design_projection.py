r"""What to run when a verdict is not resolved: the smallest design that would resolve it, and its cost.

A full grid ``Y`` (``m`` instructions x ``n`` items, per-item scores) is decomposed by the two-way
analysis of variance without replication (method of moments):

    MS_inst = n sum_i (ybar_i. - ybar..)^2 / (m - 1)
    MS_res  = sum_ij (y_ij - ybar_i. - ybar_.j + ybar..)^2 / ((m - 1)(n - 1))

``sigma_res^2 = MS_res`` is the instruction x item variance (with the answer noise), the part an
instruction effect is seen against. The verdict's word is ``robust`` where an effect as large as the
stock score's own item noise would be detected with 80% power at 5%, and was not. For a design of
``m'`` instructions x ``n'`` items:

- the stock SE is ``SE(n') = 100 sd(y_stock) / sqrt(n')``;
- the test of "no instruction matters" is, to a normal approximation, the F test of the instruction
  effect with ``(m' - 1, (m' - 1)(n' - 1))`` degrees of freedom, the instructions a random draw of
  effects with SD ``tau`` (score units): its statistic is then ``(1 + n' tau^2 / sigma_res^2)`` times a
  central F, so the power is ``P(F > F_.95 / (1 + n' tau^2 / sigma_res^2))`` and the detectable SD
  ``d(m', n')`` solves it for 80%: ``n' d^2 / sigma_res^2 = F_.95 / F_.20 - 1`` (a fixed-effects,
  noncentral F promises more power than a few drawn instructions deliver, and was not kept).

The design **resolves** the verdict where ``d(m', n') <= SE(n')``. The run's own detectable SD, from
the verdict's power simulation, anchors the projection: ``d`` is scaled so that ``d(m, n)`` at the run's
design equals it. Both shrink as ``1 / sqrt(n')``, so the
number of instructions does most of the work (rows matter through the residual degrees of freedom):
the projection searches the instructions first (at the run's rows, at least as many as it has), then
the rows. The projection is validated on real grids by ``benchmarks/design_projection_validation.py``
(the power it promises against the share of subsampled designs in which the permutation test
rejects; ``docs/validation/design-projection.md``).

Example (a grid of 4 instructions x 60 items whose instructions barely differ):
    >>> rng = np.random.default_rng(0)
    >>> item = rng.normal(0, 1.5, 60)
    >>> Y = (rng.random((4, 60)) < 1 / (1 + np.exp(-item))).astype(float)
    >>> p = project(Y, stock=0)
    >>> p.instructions > 4, p.rows >= 60
    (True, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.stats import f as f_dist

ALPHA = 0.05
POWER = 0.8
MAX_INSTRUCTIONS = 400  # beyond this no bank has instructions to offer
MAX_ROWS = 20000


@dataclass(frozen=True)
class Components:
    """The grid's variance components (score units squared) and the stock row's SD."""

    instruction: float
    residual: float
    stock_sd: float


@dataclass(frozen=True)
class Projection:
    """The smallest design found that resolves the verdict (``instructions`` x ``rows``; 0 where none up
    to the search's limits does), its detectable SD and stock SE (points), and its cost."""

    instructions: int
    rows: int
    detectable_sd: float
    stock_se: float
    seconds: float = math.nan  # at the run's measured wall time per cell

    def text(self) -> str:
        if self.instructions == 0:
            return (f"no design up to {MAX_INSTRUCTIONS} instructions x {MAX_ROWS} rows resolves it (the instructions' "
                    "disagreement on single items outweighs the items' own noise)")
        cost = f" (about {_duration(self.seconds)} at this run's measured rate)" if math.isfinite(self.seconds) else ""
        return (f"resolving needs about {self.instructions} instructions x {self.rows} rows{cost}: there an SD of "
                f"{self.detectable_sd:.1f} points is detected (80% power), no more than the stock SE {self.stock_se:.1f}")


def components(Y: np.ndarray, stock: int | None) -> Components:
    """The moment estimates of the module doc (``Y`` complete)."""
    Y = np.asarray(Y, dtype=float)
    m, n = Y.shape
    grand = Y.mean()
    rows, cols = Y.mean(axis=1), Y.mean(axis=0)
    ms_inst = n * float(np.sum((rows - grand) ** 2)) / (m - 1)
    resid = Y - rows[:, None] - cols[None, :] + grand
    ms_res = float(np.sum(resid**2)) / ((m - 1) * (n - 1))
    y0 = Y[stock] if stock is not None else Y.mean(axis=0)
    return Components(max(0.0, (ms_inst - ms_res) / n), ms_res, float(np.std(y0, ddof=1)))


@lru_cache(maxsize=4096)
def _ratio_needed(df1: int, df2: int) -> float:
    """``n tau^2 / sigma_res^2`` at which the random-effects F test at ``ALPHA`` has power ``POWER``."""
    return float(f_dist.ppf(1 - ALPHA, df1, df2) / f_dist.ppf(1 - POWER, df1, df2) - 1.0)


def detectable(m: int, n: int, residual: float) -> float:
    """``d(m, n)`` of the module doc, in points."""
    return 100.0 * math.sqrt(_ratio_needed(m - 1, (m - 1) * (n - 1)) * residual / n)


def power(m: int, n: int, residual: float, tau: float) -> float:
    """The power at ``ALPHA`` to detect an instruction-effect SD ``tau`` (score units) with ``m`` instructions
    drawn at random: the random-effects F test, ``P(F > F_.95 / (1 + n tau^2 / residual))``."""
    df1, df2 = m - 1, (m - 1) * (n - 1)
    if residual <= 0:  # every item answered alike by every instruction: only an effect can be seen
        return 1.0 if tau > 0 else 0.0
    return float(f_dist.sf(f_dist.ppf(1 - ALPHA, df1, df2) / (1 + n * tau**2 / residual), df1, df2))


def project(Y: np.ndarray, stock: int | None, *, seconds_per_cell: float = math.nan,
            anchor: float = math.nan) -> Projection:
    """The smallest design (instructions first, then rows) that resolves the verdict of ``Y`` (module doc).
    ``anchor``: the detectable SD (points) the verdict's own power simulation found at the run's design;
    where given, every projected ``d`` is scaled by ``anchor / d(m, n)`` so that the projection starts
    from the run's own figure (the simulation draws answers from the item-response model, which the F
    approximation only approximates)."""
    m, n = np.asarray(Y).shape
    c = components(Y, stock)
    if c.residual <= 0 or c.stock_sd <= 0:
        return Projection(m, n, 0.0, 100.0 * c.stock_sd / math.sqrt(n))
    scale = anchor / detectable(m, n, c.residual) if math.isfinite(anchor) and anchor > 0 and m >= 2 else 1.0
    se = lambda rows: 100.0 * c.stock_sd / math.sqrt(rows)  # noqa: E731
    for rows in _grid(n, MAX_ROWS):
        # the run's own design is known not to resolve it (the verdict's simulation said so): look beyond it
        for k in _grid(max(m + 1 if rows == n else m, 3), MAX_INSTRUCTIONS):
            d = scale * detectable(k, rows, c.residual)
            if d <= se(rows):
                return Projection(k, rows, d, se(rows), k * rows * seconds_per_cell)
    return Projection(0, 0, math.nan, math.nan)


def _grid(start: int, stop: int) -> list[int]:
    """``start``, then steps of about 10% up to ``stop`` (a design is a rough figure, not an exact one)."""
    out, x = [start], float(start)
    while x < stop:
        x = max(x + 1, x * 1.1)
        out.append(min(stop, int(round(x))))
    return out


def _duration(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes:.0f} minutes" if minutes < 120 else f"{minutes / 60:.1f} hours"
