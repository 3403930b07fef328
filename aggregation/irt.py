"""A logistic item-response model of (instruction, item) correctness, fitted to observed cells.

A budgeted sweep (``instructeval run --budget F``) evaluates each instruction on a share of the test
items. As in PromptEval (Polo et al., 2024), the unobserved cells are predicted by a model that
borrows strength across instructions and items:

    P(y_ij = 1) = sigmoid(mu + g_method(i) + a_i + b_j)

with instruction effects ``a_i ~ N(0, s_a^2)``, item effects ``b_j ~ N(0, s_b^2)``, optional method
effects ``g_k ~ N(0, s_g^2)`` and a flat ``mu``. (A method with one instruction -- null -- is then
shrunk toward the others like any instruction, rather than fitted alone from its few cells.)

**Fit.** Maximum a posteriori: the penalised log-likelihood is maximised with scipy's L-BFGS and an
analytic gradient. The prior scales come from the data (Laplace-approximate EM): after each fit,
``s^2 <- mean(theta_k^2 + 1 / H_kk)`` over the effects of one kind, with ``H_kk`` the penalised
log-likelihood's curvature in ``theta_k`` (``sum of p(1-p)`` over the effect's cells plus ``1/s^2``);
eight rounds, scales floored at 0.01.

**Estimate.** Instruction i's accuracy on the grid's n items keeps what was observed and predicts
the rest:

    acc_i = (sum_{j observed} y_ij + sum_{j not observed} sigmoid(eta_ij)) / n

so a full grid gives back its exact accuracies.

Example:
    >>> import numpy as np
    >>> cells = Cells(rows=np.array([0, 0, 1, 1]), cols=np.array([0, 1, 1, 2]), y=np.array([1., 0., 1., 1.]),
    ...               n_rows=2, n_cols=3)
    >>> fit = fit_irt(cells)
    >>> acc = instruction_accuracy(fit, cells)
    >>> acc.shape, bool(acc[1] > acc[0])
    ((2,), True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EM_ROUNDS = 8
MIN_VARIANCE = 1e-4


@dataclass(frozen=True)
class Cells:
    """The observed cells of one grid: instruction ``rows[k]`` on item ``cols[k]`` scored ``y[k]``.

    ``groups[i]`` (optional) is instruction i's method index, for the method covariate.
    """

    rows: np.ndarray
    cols: np.ndarray
    y: np.ndarray
    n_rows: int
    n_cols: int
    groups: np.ndarray | None = None

    @property
    def n_groups(self) -> int:
        return 0 if self.groups is None else int(self.groups.max()) + 1


@dataclass(frozen=True)
class IrtFit:
    """Fitted parameters: intercept, method, instruction and item effects, and the prior scales."""

    mu: float
    g: np.ndarray
    a: np.ndarray
    b: np.ndarray
    s_a: float
    s_b: float
    s_g: float = 1.0

    def eta(self, groups: np.ndarray | None) -> np.ndarray:
        """Logits of every (instruction, item) cell, ``n_rows x n_cols``."""
        row = self.mu + self.a + (self.g[groups] if groups is not None and self.g.size else 0.0)
        return row[:, None] + self.b[None, :]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _unpack(theta: np.ndarray, cells: Cells) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    k, m = cells.n_groups, cells.n_rows
    return float(theta[0]), theta[1:1 + k], theta[1 + k:1 + k + m], theta[1 + k + m:]


def _map_fit(cells: Cells, s_a: float, s_b: float, s_g: float, theta0: np.ndarray) -> np.ndarray:
    from scipy.optimize import minimize

    k = cells.n_groups
    groups = cells.groups

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        mu, g, a, b = _unpack(theta, cells)
        eta = mu + a[cells.rows] + b[cells.cols] + (g[groups[cells.rows]] if k else 0.0)
        nll = float(np.sum(np.logaddexp(0.0, eta) - cells.y * eta))
        nll += 0.5 * (a @ a / s_a**2 + b @ b / s_b**2 + (g @ g / s_g**2 if k else 0.0))
        r = _sigmoid(eta) - cells.y
        grad = np.empty_like(theta)
        grad[0] = r.sum()
        if k:
            grad[1:1 + k] = np.bincount(groups[cells.rows], r, minlength=k) + g / s_g**2
        grad[1 + k:1 + k + cells.n_rows] = np.bincount(cells.rows, r, minlength=cells.n_rows) + a / s_a**2
        grad[1 + k + cells.n_rows:] = np.bincount(cells.cols, r, minlength=cells.n_cols) + b / s_b**2
        return nll, grad

    result = minimize(objective, theta0, jac=True, method="L-BFGS-B", options={"maxiter": 500, "gtol": 1e-6})
    return result.x


def fit_irt(
    cells: Cells,
    *,
    s_a: float | None = None,
    s_b: float | None = None,
    s_g: float | None = None,
    start: IrtFit | None = None,
) -> IrtFit:
    """MAP fit; prior scales estimated by EM unless ``s_a``, ``s_b`` (and ``s_g`` with methods) are given.

    ``start`` warm-starts the optimiser (its item effects must match ``cells.n_cols``).
    """
    k, m, n = cells.n_groups, cells.n_rows, cells.n_cols
    if start is not None:
        theta = np.concatenate([[start.mu], start.g if k else [], start.a, start.b]).astype(float)
    else:
        mean = float(np.clip(cells.y.mean() if cells.y.size else 0.5, 0.02, 0.98))
        theta = np.zeros(1 + k + m + n)
        theta[0] = np.log(mean / (1 - mean))
    estimate_scales = s_a is None or s_b is None or (k > 0 and s_g is None)
    cur_a, cur_b, cur_g = (s_a or 1.0), (s_b or 1.0), (s_g or 1.0)
    for _ in range(EM_ROUNDS if estimate_scales else 1):
        theta = _map_fit(cells, cur_a, cur_b, cur_g, theta)
        if not estimate_scales:
            break
        mu, g, a, b = _unpack(theta, cells)
        eta = mu + a[cells.rows] + b[cells.cols] + (g[cells.groups[cells.rows]] if k else 0.0)
        w = _sigmoid(eta) * (1 - _sigmoid(eta))
        h_a = np.bincount(cells.rows, w, minlength=m) + 1 / cur_a**2
        h_b = np.bincount(cells.cols, w, minlength=n) + 1 / cur_b**2
        cur_a = float(np.sqrt(max(np.mean(a**2 + 1 / h_a), MIN_VARIANCE)))
        cur_b = float(np.sqrt(max(np.mean(b**2 + 1 / h_b), MIN_VARIANCE)))
        if k:
            h_g = np.bincount(cells.groups[cells.rows], w, minlength=k) + 1 / cur_g**2
            cur_g = float(np.sqrt(max(np.mean(g**2 + 1 / h_g), MIN_VARIANCE)))
    mu, g, a, b = _unpack(theta, cells)
    return IrtFit(mu=mu, g=np.array(g), a=np.array(a), b=np.array(b), s_a=cur_a, s_b=cur_b, s_g=cur_g)


def instruction_accuracy(fit: IrtFit, cells: Cells) -> np.ndarray:
    """``acc_i``: observed cells as scored, the others predicted (module doc), per instruction."""
    p = _sigmoid(fit.eta(cells.groups))
    observed = np.zeros((cells.n_rows, cells.n_cols), dtype=bool)
    observed[cells.rows, cells.cols] = True
    values = np.where(observed, 0.0, p)
    values[cells.rows, cells.cols] = cells.y
    return values.mean(axis=1)


def resample_items(cells: Cells, draw: np.ndarray) -> Cells:
    """The cells of a bootstrap replicate: column ``k`` of the replicate is original item ``draw[k]``."""
    by_col: dict[int, np.ndarray] = {}
    order = np.argsort(cells.cols, kind="stable")
    cols_sorted = cells.cols[order]
    for j in np.unique(draw):
        lo, hi = np.searchsorted(cols_sorted, j, "left"), np.searchsorted(cols_sorted, j, "right")
        by_col[int(j)] = order[lo:hi]
    picks = [by_col[int(j)] for j in draw]
    index = np.concatenate(picks) if picks else np.array([], dtype=int)
    new_cols = np.concatenate([np.full(len(p), k) for k, p in enumerate(picks)]) if picks else np.array([], dtype=int)
    return Cells(rows=cells.rows[index], cols=new_cols.astype(int), y=cells.y[index], n_rows=cells.n_rows,
                 n_cols=len(draw), groups=cells.groups)
