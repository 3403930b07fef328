"""Budgeted estimates of a classification grid from the model's score of every label, not only its answer.

A budgeted sweep's cell (instruction i, item j) of a classification task records, besides whether the
answer was right, the score the model gave each of the K labels (``z_ijk``: the primary metric's --
the log-likelihood per continuation token for ``acc_per_token``, the log-likelihood for ``acc``).
Those K numbers say much more than one bit about the instruction's pull toward each label and the
item's lean, so the unobserved cells are predicted from them in two stages:

1. **Scores.** Centred over the labels (a shift common to every label never changes the answer),
   ``c_ijk = z_ijk - mean_k z_ijk``, the observed cells are fitted by alternating ridge least squares:

       c_ijk ~ s_i a_jk + b_ik

   ``a_jk`` is item j's lean toward label k, ``b_ik`` instruction i's pull toward it (shrunk toward its
   method's mean pull), ``s_i`` how strongly the instruction follows the item (shrunk toward 1); each
   with a ridge penalty ``RIDGE`` (in cells). Every cell's predicted margin of the gold label g(j):

       x_ij = c^_ij,g(j) - max_{k != g(j)} c^_ijk

2. **Correctness.** A logistic model calibrates the margins on the observed cells' answers:

       P(y_ij = 1) = sigmoid(alpha_m(i),g(j) + gamma_m(i) x_ij + u_i,g(j) + v_j)

   ``alpha`` one per method and gold label, ``gamma`` one per method, each with a ``N(0, 2^2)``
   prior (what is left of a method's and an instruction's lean toward a label once the margins
   have it, as in the crossed model's class effects); instruction and item effects
   ``u_i,c ~ N(0, s_u^2)``, ``v_j ~ N(0, s_v^2)``, their SDs by marginal likelihood (Laplace EM: after
   each fit, ``s^2 <- mean(mode^2 + posterior variance)``, from 1 until they change by less than
   0.1%, at most 30 fits); each fit's mode by L-BFGS. The reported SDs are the last fit's, the
   ones its mode and Hessian (the draws' posterior) were computed under.

**Estimate.** As the crossed model's: observed cells as scored, the others predicted,

    acc_i = (sum_{j observed} y_ij + sum_{j not observed} p_ij) / n

**Uncertainty.** Each draw takes ``(alpha, gamma, u, v)`` from the Laplace approximation of their
posterior at the mode and a Bernoulli outcome for every unobserved cell. The margins are held at their
fit (their uncertainty is left to ``u`` and ``v``). An instruction's estimate is not pulled toward its
method's as the crossed model's is, so the quantiles across instructions are the estimates'
quantiles, their intervals the draws' percentile intervals moved by the estimate minus the draws'
mean (each draw's Bernoulli noise widens its spread of instructions).

Measured on SmolLM2's full grids at 10% (balanced design, 10 seeds; ``benchmarks/budget_validation.py``),
against the crossed item-response model on the same cells: see the README, *Budgeted sweeps*.

Example (two labels, items 0-2 of label 0, items 3-5 of label 1; instruction 1 pulls toward label 0
so hard that it answers 0 everywhere; each instruction's unseen items are predicted):
    >>> import numpy as np
    >>> lean = np.array([1.0, 0.8, 1.2, -1.0, -0.8, -1.2])  # label 0's score minus label 1's, per item
    >>> z = np.zeros((2, 6, 2)); z[0, :, 0] = lean; z[1, :, 0] = lean + 1.5
    >>> observed = np.array([[1, 1, 0, 1, 1, 0], [1, 0, 1, 1, 0, 1]], dtype=bool)
    >>> gold = np.array([0, 0, 0, 1, 1, 1]); y = (z.argmax(-1) == gold).astype(float)
    >>> fit = fit_choice_scores(z, observed, y, gold, np.array([0, 0]))
    >>> (fit.probabilities[:, [2, 5]] > 0.5).tolist(), (fit.probabilities[:, [1, 4]] > 0.5).tolist()
    ([[True, True], [True, False]], [[True, True], [True, False]])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RIDGE = 1.0  # the score stage's penalty, in cells: an effect seen on one cell is halved
SCORE_ROUNDS = 40
CALIBRATION_PRIOR_SD = 2.0  # alpha, gamma: 2 logits, weak on margins of a few log-likelihood units
START_SD = 1.0  # u_i, v_j: the SDs the EM starts from
EM_ROUNDS = 30
EM_TOLERANCE = 1e-3  # relative change of the SDs' precisions
MIN_VARIANCE = 1e-3


@dataclass(frozen=True)
class ChoiceScoreFit:
    """The two stages' fit: every cell's predicted margin and P(correct), and the calibration's mode
    ``theta = (alpha, gamma, u, v)`` with its posterior precision ``hessian``."""

    margins: np.ndarray  # n_rows x n_cols
    probabilities: np.ndarray  # n_rows x n_cols
    theta: np.ndarray
    hessian: np.ndarray
    design: "_Calibration"
    s_u: float  # the instruction effects' SD (logits), by marginal likelihood
    s_v: float  # the item effects'


def centred(scores: np.ndarray) -> np.ndarray:
    """``c_ijk = z_ijk - mean_k z_ijk`` (NaN cells stay NaN)."""
    return scores - scores.mean(axis=-1, keepdims=True)


def fit_scores(c: np.ndarray, observed: np.ndarray, groups: np.ndarray, *, ridge: float = RIDGE,
               rounds: int = SCORE_ROUNDS) -> np.ndarray:
    """Stage 1 of the module doc: ``s_i a_jk + b_ik`` for every cell (``n_rows x n_cols x K``)."""
    m, n, k = c.shape
    w = observed[:, :, None].astype(float)
    cw = np.where(observed[:, :, None], np.nan_to_num(c), 0.0)
    a = cw.sum(axis=0) / np.maximum(w.sum(axis=0), 1.0)
    s = np.ones(m)
    by_group = np.eye(int(groups.max()) + 1)[groups].T  # methods x rows
    for _ in range(rounds):
        rest = cw - s[:, None, None] * a[None] * w
        pull = by_group @ rest.sum(axis=1) / np.maximum(by_group @ w.sum(axis=(1, 2)), 1.0)[:, None]
        b = (rest.sum(axis=1) + ridge * pull[groups]) / (w.sum(axis=1) + ridge)
        rest = cw - b[:, None] * w
        s = ((rest * a[None]).sum(axis=(1, 2)) + ridge) / ((w * a[None] ** 2).sum(axis=(1, 2)) + ridge)
        a = (s[:, None, None] * rest).sum(axis=0) / ((w * s[:, None, None] ** 2).sum(axis=0) + ridge)
    return s[:, None, None] * a[None] + b[:, None]


def gold_margins(predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """``x_ij``: the gold label's predicted score minus the best other label's."""
    k = predicted.shape[-1]
    is_gold = np.arange(k)[None, None, :] == gold[None, :, None]
    mine = np.where(is_gold, predicted, -np.inf).max(axis=-1)
    other = np.where(is_gold, -np.inf, predicted).max(axis=-1)
    return mine - other


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


class _Calibration:
    """Stage 2's design: ``theta = (alpha, gamma, u, v)`` (``alpha`` one per method and gold label,
    ``gamma`` one per method, ``u`` one per instruction and gold label, ``v`` one per item) and its
    linear predictor on any cells."""

    def __init__(self, groups: np.ndarray, n_groups: int, n_rows: int, n_cols: int, classes: np.ndarray):
        self.groups, self.q, self.m, self.n = groups, n_groups, n_rows, n_cols
        self.classes = classes
        self.n_classes = int(classes.max()) + 1
        self.na, self.nu = n_groups * self.n_classes, n_rows * self.n_classes
        self.size = self.na + n_groups + self.nu + n_cols
        self.u_at = self.na + n_groups
        self.v_at = self.u_at + self.nu
        self.precision = np.concatenate([np.full(self.na + n_groups, CALIBRATION_PRIOR_SD ** -2),
                                         np.full(self.nu + n_cols, START_SD ** -2)])

    def _index(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        g, c = self.groups[rows], self.classes[cols]
        a = g * self.n_classes + c
        u = self.u_at + rows * self.n_classes + c
        return np.stack([a, self.na + g, u, self.v_at + cols], axis=1)

    def eta(self, theta: np.ndarray, rows: np.ndarray, cols: np.ndarray, x: np.ndarray) -> np.ndarray:
        index = self._index(rows, cols)
        return theta[index[:, 0]] + theta[index[:, 1]] * x + theta[index[:, 2]] + theta[index[:, 3]]

    def gradient_parts(self, rows: np.ndarray, cols: np.ndarray, x: np.ndarray, r: np.ndarray) -> np.ndarray:
        index = self._index(rows, cols)
        values = np.stack([r, r * x, r, r], axis=1)
        return np.bincount(index.ravel(), values.ravel(), self.size)

    def hessian(self, rows: np.ndarray, cols: np.ndarray, x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        index = self._index(rows, cols)
        value = np.stack([np.ones_like(x), x, np.ones_like(x), np.ones_like(x)], axis=1)
        h = np.zeros((self.size, self.size))
        for a in range(4):
            for b in range(4):
                np.add.at(h, (index[:, a], index[:, b]), weight * value[:, a] * value[:, b])
        return h + np.diag(self.precision)


def fit_choice_scores(scores: np.ndarray, observed: np.ndarray, y: np.ndarray, gold: np.ndarray,
                      groups: np.ndarray) -> ChoiceScoreFit:
    """Both stages of the module doc on ``scores`` (``n_rows x n_cols x K``, read where ``observed``),
    the observed cells' correctness ``y`` (``n_rows x n_cols``, read where observed) and each item's
    gold label index ``gold``; ``groups[i]`` is instruction i's method index. Deterministic."""
    from scipy.optimize import minimize

    groups = np.asarray(groups, dtype=int)
    m, n, _ = scores.shape
    x = gold_margins(fit_scores(centred(scores), observed, groups), gold)
    design = _Calibration(groups, int(groups.max()) + 1, m, n, np.asarray(gold, dtype=int))
    rows, cols = np.nonzero(observed)
    xo, yo = x[rows, cols], y[rows, cols]

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        eta = design.eta(theta, rows, cols, xo)
        loss = float(np.sum(np.logaddexp(0.0, eta) - yo * eta)) + 0.5 * float(np.sum(design.precision * theta ** 2))
        return loss, design.gradient_parts(rows, cols, xo, _sigmoid(eta) - yo) + design.precision * theta

    theta = np.zeros(design.size)
    theta[design.na:design.na + design.q] = 1.0
    first, last = design.u_at, design.v_at  # u is theta[first:last], v theta[last:]
    for em_round in range(EM_ROUNDS):
        theta = minimize(objective, theta, jac=True, method="L-BFGS-B").x
        p = _sigmoid(design.eta(theta, rows, cols, xo))
        hessian = design.hessian(rows, cols, xo, p * (1 - p))
        if em_round == EM_ROUNDS - 1:  # the mode and its Hessian stay those of the SDs they were fitted under
            break
        # Laplace EM: each effect's variance is the mean of its squared mode plus its posterior variance
        variance = np.diag(np.linalg.inv(hessian))
        before = design.precision.copy()
        for part in (slice(first, last), slice(last, None)):
            design.precision[part] = 1.0 / max(float(np.mean(theta[part] ** 2 + variance[part])), MIN_VARIANCE)
        if np.allclose(before, design.precision, rtol=EM_TOLERANCE):
            design.precision[:] = before  # the SDs the mode and its Hessian were fitted under
            break
    all_rows, all_cols = np.indices((m, n))
    probabilities = _sigmoid(design.eta(theta, all_rows.ravel(), all_cols.ravel(), x.ravel())).reshape(m, n)
    return ChoiceScoreFit(x, probabilities, theta, hessian, design,
                          s_u=float(design.precision[first] ** -0.5), s_v=float(design.precision[last] ** -0.5))


def choice_score_accuracy(fit: ChoiceScoreFit, observed: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``acc_i``: observed cells as scored, the others' P(correct)."""
    return np.where(observed, y, fit.probabilities).mean(axis=1)


def choice_score_draws(fit: ChoiceScoreFit, observed: np.ndarray, y: np.ndarray, n_draws: int,
                       rng: np.random.Generator, *, batch: int = 50) -> np.ndarray:
    """``n_draws x n_rows`` accuracies on the full grid (module doc: Laplace draws of the calibration,
    a Bernoulli outcome per unobserved cell)."""
    m, n = fit.probabilities.shape
    design = fit.design
    root = np.linalg.cholesky(np.linalg.inv(fit.hessian))
    all_rows, all_cols = np.indices((m, n))
    rows, cols, x = all_rows.ravel(), all_cols.ravel(), fit.margins.ravel()
    known = np.where(observed, y, 0.0)
    out = np.empty((n_draws, m))
    for start in range(0, n_draws, batch):
        b = min(batch, n_draws - start)
        thetas = fit.theta[None] + rng.standard_normal((b, design.size)) @ root.T
        for d in range(b):
            p = _sigmoid(design.eta(thetas[d], rows, cols, x)).reshape(m, n)
            drawn = rng.random((m, n)) < p
            out[start + d] = np.where(observed, known, drawn).mean(axis=1)
    return out
