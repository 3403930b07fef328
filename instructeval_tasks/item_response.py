"""A crossed item-response model of (instruction, item) correctness, for budgeted sweeps.

A budgeted sweep (``instructeval run --budget F``) evaluates each instruction on a share of the test
items. The cells it did not evaluate are predicted by a model that borrows strength across
instructions and items (as PromptEval, Polo et al. 2024, does):

    P(y_ij = 1) = sigmoid(beta_method(i) + a_i + b_j)

- ``beta_k``, one per selection method, are **fixed effects**: their only prior is a weak
  ``N(mean of the betas, 1)`` on each (1 logit is about 25 accuracy points around 50%), which keeps
  a method whose cells are nearly all on items every instruction gets right (or wrong) from running
  off to +-infinity (separation) without pulling it toward the other methods -- in particular not
  toward the fully observed null method. (A tighter prior trades bias for noise: on the validation
  grids at 10%, where methods differ by a few points, the method-mean error was 0.64 / 0.66 / 0.73
  points with an SD of 0.25 / 0.5 / 1 logit; with methods 1 logit either side of null, 0.5 pulls
  them 3.3 points toward it and 1 logit 0.7, ``tests/test_item_response.py``);
- instruction effects ``a_i ~ N(0, s_a^2)``, ``s_a`` by marginal likelihood (Laplace EM: after each
  step ``s_a^2 <- mean(a_i^2 + 1 / h_i)``, ``h_i`` the curvature in ``a_i``);
- item effects ``b_j`` from a **discrete distribution** on 33 logits from -8 to 8 whose weights are
  estimated (the nonparametric maximum likelihood of Kiefer and Wolfowitz). Most test items are
  answered correctly under every instruction or under none; a normal ``b`` cannot put them there,
  so it predicts coin flips on items whose outcome is known and spreads that noise over every
  unobserved cell.

**Fit.** EM, item effects integrated out: the E step weighs each item's 33 grid points by the
likelihood of its observed cells (``resp[j, g]``); the M step updates the weights (their mean),
then ``a`` and ``beta`` by Newton steps on the expected log-likelihood plus priors, then ``s_a``.
Until the objective changes by less than ``1e-9`` (relative) or 500 rounds.

**Estimate.** Instruction i's accuracy on the grid's n items keeps what was observed and predicts
the rest (a full grid gives back its exact accuracies):

    acc_i = (sum_{j observed} y_ij + sum_{j not observed} p_ij) / n,   p_ij = sum_g resp[j, g] sigmoid(beta_k(i) + a_i + b_g)

**Uncertainty** (``predictive_draws``). Each draw takes ``beta_k ~ N(beta_k, 1 / h_k)``,
``a_i ~ N(a_i, 1 / h_i)``, one grid point per item from ``resp[j]``, and a Bernoulli outcome for
every unobserved cell; the draw's accuracies are those of the finite grid. Intervals for an
instruction, a method's mean and a quantile across instructions are percentiles of the draws, and
the quantiles' point estimates are the draws' mean (the quantiles of the point estimates are too
narrow: every ``acc_i`` is pulled toward its method's).

Example:
    >>> import numpy as np
    >>> cells = Cells(rows=np.array([0, 0, 0, 1, 1, 1]), cols=np.array([0, 1, 2, 1, 2, 3]),
    ...               y=np.array([1., 0., 1., 1., 1., 1.]), n_rows=2, n_cols=4)
    >>> fit = fit_crossed(cells)
    >>> acc = instruction_accuracy(fit, cells)
    >>> acc.shape, bool(acc[1] > acc[0])
    ((2,), True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

ITEM_GRID = np.linspace(-8.0, 8.0, 33)
METHOD_PRIOR_SD = 1.0
MAX_ROUNDS = 500
TOLERANCE = 1e-9
MIN_VARIANCE = 1e-4
NEWTON_STEPS = 3


@dataclass(frozen=True)
class Cells:
    """The observed cells of one grid: instruction ``rows[k]`` on item ``cols[k]`` scored ``y[k]``.

    ``groups[i]`` (optional) is instruction i's method index; without it every instruction shares
    one effect.
    """

    rows: np.ndarray
    cols: np.ndarray
    y: np.ndarray
    n_rows: int
    n_cols: int
    groups: np.ndarray | None = None

    @property
    def n_groups(self) -> int:
        return 1 if self.groups is None else int(self.groups.max()) + 1

    def group_index(self) -> np.ndarray:
        return np.zeros(self.n_rows, dtype=int) if self.groups is None else np.asarray(self.groups, dtype=int)

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """``(Y, O)``: ``n_rows x n_cols`` scores (0 where unobserved) and the observed mask."""
        observed = np.zeros((self.n_rows, self.n_cols), dtype=bool)
        observed[self.rows, self.cols] = True
        scores = np.zeros((self.n_rows, self.n_cols))
        scores[self.rows, self.cols] = self.y
        return scores, observed


@dataclass(frozen=True)
class CrossedFit:
    """Fitted effects: methods ``beta``, instructions ``a``, the item distribution and each item's posterior."""

    beta: np.ndarray
    a: np.ndarray
    item_weights: np.ndarray  # over ITEM_GRID
    item_posterior: np.ndarray  # n_cols x len(ITEM_GRID)
    h_a: np.ndarray  # curvature in each a_i (its approximate posterior precision)
    h_beta: np.ndarray
    s_a: float
    groups: np.ndarray
    rounds: int

    @property
    def s_item(self) -> float:
        """Standard deviation of the fitted item-effect distribution (logits)."""
        mean = float(self.item_weights @ ITEM_GRID)
        return float(np.sqrt(max(self.item_weights @ (ITEM_GRID - mean) ** 2, 0.0)))

    def logits(self) -> np.ndarray:
        """``c_i = beta_k(i) + a_i``, one per instruction."""
        return self.beta[self.groups] + self.a

    def probabilities(self) -> np.ndarray:
        """``p_ij``: every cell's predicted probability of a correct answer, ``n_rows x n_cols``."""
        per_point = _sigmoid(self.logits()[:, None] + ITEM_GRID[None, :])  # rows x grid
        return per_point @ self.item_posterior.T


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def fit_crossed(cells: Cells, *, method_prior_sd: float = METHOD_PRIOR_SD) -> CrossedFit:
    """The EM fit of the module doc; deterministic (no random draws)."""
    m, k = cells.n_rows, cells.n_groups
    groups = cells.group_index()
    scores, observed = cells.matrices()
    right, wrong = observed * scores, observed * (1.0 - scores)
    weights = np.full(ITEM_GRID.size, 1.0 / ITEM_GRID.size)
    mean = float(np.clip(cells.y.mean() if cells.y.size else 0.5, 0.02, 0.98))
    beta = np.full(k, np.log(mean / (1 - mean)))
    a = np.zeros(m)
    s_a = 0.5
    prior_beta = 1.0 / method_prior_sd**2
    previous = -np.inf
    h_a = np.full(m, 1 / s_a**2)
    h_beta = np.full(k, prior_beta)
    rounds = 0
    for rounds in range(1, MAX_ROUNDS + 1):
        x = (beta[groups] + a)[:, None] + ITEM_GRID[None, :]  # rows x grid: a cell's logit is x[i, g(j)]
        loglik = right.T @ _log_sigmoid(x) + wrong.T @ _log_sigmoid(-x)  # items x grid
        joint = loglik + np.log(np.maximum(weights, 1e-300))[None, :]
        top = joint.max(axis=1, keepdims=True)
        resp = np.exp(joint - top)
        norm = resp.sum(axis=1, keepdims=True)
        resp /= norm
        objective = float(np.sum(top[:, 0] + np.log(norm[:, 0]))) - 0.5 * float(a @ a) / s_a**2 \
            - 0.5 * prior_beta * float(np.sum((beta - beta.mean()) ** 2))
        weights = resp.mean(axis=0)
        for _ in range(NEWTON_STEPS):
            for part in ("a", "beta"):
                s = _sigmoid((beta[groups] + a)[:, None] + ITEM_GRID[None, :])
                expected = observed * (s @ resp.T)
                curvature = (observed * ((s * (1 - s)) @ resp.T)).sum(axis=1)
                residual = (right - expected).sum(axis=1)
                if part == "a":
                    h_a = curvature + 1 / s_a**2
                    a = a + (residual - a / s_a**2) / h_a
                else:
                    h_beta = np.bincount(groups, curvature, minlength=k) + prior_beta
                    step = np.bincount(groups, residual, minlength=k) - prior_beta * (beta - beta.mean())
                    beta = beta + step / h_beta
        s_a = float(np.sqrt(max(np.mean(a**2 + 1 / h_a), MIN_VARIANCE)))
        if abs(objective - previous) <= TOLERANCE * max(1.0, abs(objective)):
            break
        previous = objective
    return CrossedFit(beta=beta, a=a, item_weights=weights, item_posterior=resp, h_a=h_a, h_beta=h_beta, s_a=s_a,
                      groups=groups, rounds=rounds)


def instruction_accuracy(fit: CrossedFit, cells: Cells) -> np.ndarray:
    """``acc_i``: observed cells as scored, the others predicted (module doc), per instruction."""
    scores, observed = cells.matrices()
    return np.where(observed, scores, fit.probabilities()).mean(axis=1)


def predictive_grids(fit: CrossedFit, cells: Cells, n_draws: int, rng: np.random.Generator,
                     *, batch: int = 100) -> Iterator[np.ndarray]:
    """Draws of the whole grid, ``batch x n_rows x n_cols`` at a time (``n_draws`` in all): the
    observed cells as scored, every other cell a Bernoulli outcome drawn as the module doc says."""
    scores, observed = cells.matrices()
    m, n = scores.shape
    cumulative = np.cumsum(fit.item_posterior, axis=1)
    cumulative[:, -1] = 1.0
    for start in range(0, n_draws, batch):
        b = min(batch, n_draws - start)
        beta = fit.beta[None, :] + rng.standard_normal((b, fit.beta.size)) / np.sqrt(fit.h_beta)[None, :]
        logits = beta[:, fit.groups] + fit.a[None, :] + rng.standard_normal((b, m)) / np.sqrt(fit.h_a)[None, :]
        points = (rng.random((b, n, 1)) > cumulative[None, :, :]).sum(axis=2)
        p = _sigmoid(logits[:, :, None] + ITEM_GRID[points][:, None, :])
        simulated = rng.random((b, m, n)) < p
        yield np.where(observed[None], scores[None], simulated)


def predictive_draws(fit: CrossedFit, cells: Cells, n_draws: int, rng: np.random.Generator,
                     *, batch: int = 100) -> np.ndarray:
    """``n_draws x n_rows`` accuracies on the full grid, drawn as the module doc says."""
    out = np.empty((n_draws, cells.n_rows))
    start = 0
    for grids in predictive_grids(fit, cells, n_draws, rng, batch=batch):
        out[start:start + len(grids)] = grids.mean(axis=2)
        start += len(grids)
    return out


def unobserved_variance(fit: CrossedFit, cells: Cells) -> np.ndarray:
    """``p_ij (1 - p_ij)`` of every unobserved cell, 0 where observed: what a cell would teach."""
    _, observed = cells.matrices()
    p = fit.probabilities()
    return np.where(observed, 0.0, p * (1 - p))


def allocate_cells(variance: np.ndarray, n_new: int, *, frozen_rows: np.ndarray | None = None) -> dict[int, list[int]]:
    """The next ``n_new`` cells to evaluate: where the unobserved outcomes are least certain.

    Instruction i gets a share of ``n_new`` proportional to ``sqrt(sum_j v_ij)`` (Neyman allocation:
    the standard deviation of its unobserved cells' total), largest remainders first, and within
    it the items with the largest ``v_ij`` (ties by item position). ``frozen_rows`` (e.g. the fully
    evaluated methods) get none. Deterministic.

    Example:
        >>> v = np.array([[0.25, 0.0, 0.2, 0.01], [0.0, 0.01, 0.0, 0.0]])
        >>> allocate_cells(v, 2)
        {0: [0, 2]}
    """
    v = np.where(variance > 0, variance, 0.0)
    if frozen_rows is not None:
        v[np.asarray(frozen_rows, dtype=bool)] = 0.0
    n_new = min(int(n_new), int(np.count_nonzero(v)))
    if n_new <= 0:
        return {}
    spread = np.sqrt(v.sum(axis=1))
    share = spread / spread.sum() * n_new
    quota = np.minimum(np.floor(share).astype(int), np.count_nonzero(v, axis=1))
    while quota.sum() < n_new:
        room = np.count_nonzero(v, axis=1) - quota
        remainder = np.where(room > 0, share - quota, -np.inf)
        quota[int(np.argmax(remainder))] += 1
    chosen: dict[int, list[int]] = {}
    for i in np.flatnonzero(quota):
        order = np.lexsort((np.arange(v.shape[1]), -v[i]))
        chosen[int(i)] = sorted(int(j) for j in order[: quota[i]])
    return chosen
