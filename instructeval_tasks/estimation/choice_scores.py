"""The label-score model of a budgeted classification grid: estimates from the score the model gave
every label, not only from whether its answer was right.

A budgeted sweep's cell (instruction i, item j) of a classification task records, besides the answer,
the score of each of the K labels, ``z_ijk`` (the primary metric's: the log-likelihood per
continuation token for ``acc_per_token``, the log-likelihood for ``acc``; :func:`choice_grid` reads
them from the samples). The unobserved cells are predicted in two stages.

1. **Scores** (:func:`fit_scores`). Centred over the labels (a shift common to every label never
   changes the answer), ``c_ijk = z_ijk - mean_k z_ijk``, the observed cells are fitted by
   alternating ridge least squares (``SCORE_ROUNDS`` rounds, penalty ``RIDGE`` in cells):

       c_ijk ~ s_i a_jk + b_ik

   ``a_jk`` is item j's lean toward label k, ``b_ik`` instruction i's pull toward it (shrunk toward
   its method's mean pull), ``s_i`` how strongly the instruction follows the item (shrunk toward 1).
   Every cell's predicted margin of the gold label g(j) (:func:`gold_margins`):

       x_ij = c^_ij,g(j) - max_{k != g(j)} c^_ijk

2. **Correctness** (:func:`fit_choice_scores`). A logistic model calibrates the margins on the
   observed cells' answers:

       P(y_ij = 1) = sigmoid(alpha_m(i),g(j) + gamma_m(i) x_ij + u_i,g(j) + v_j)

   ``alpha`` one per method and gold label, ``gamma`` one per method, each with a
   ``N(0, CALIBRATION_PRIOR_SD^2)`` prior; instruction and item effects ``u_i,c ~ N(0, s_u^2)``,
   ``v_j ~ N(0, s_v^2)``. Their SDs start at ``START_SD`` and take at most ``EM_ROUNDS`` rounds of
   Laplace EM (after each fit, ``s^2 <- mean(mode^2 + posterior variance)``; it stops early when
   they change by less than ``EM_TOLERANCE``, relative); each fit's mode by L-BFGS. The rounds are a
   cap, not a convergence: the SDs are shrunk from ``START_SD`` toward the marginal likelihood's
   maximum. The reported SDs (``s_u``, ``s_v``) are the last fit's, the ones its mode and Hessian
   were computed under.

**Estimate** (:func:`choice_score_accuracy`). As the crossed model's: observed cells as scored, the
others predicted,

    acc_i = (sum_{j observed} y_ij + sum_{j not observed} p_ij) / n

**Uncertainty** (:func:`spread_draws`). A calibration fitted on the observed cells' margins, which the
score stage fitted to those very cells, and applied to the unobserved cells' margins, which it only
predicted, trusts the predictions too much. So the draws combine two calibrations:

- the estimates' calibration, on the fitted margins (above), with its Laplace draws of
  ``(alpha, gamma, u, v)`` and a Bernoulli outcome per unobserved cell (:func:`choice_score_draws`;
  the margins held at their fit);
- a calibration on held-out margins (``held_out_folds=HELD_OUT_FOLDS``, :func:`held_out_margins`:
  each observed cell's margin from a score fit without it), which knows how far a predicted margin
  lies from a scored one.

A draw takes each method's number of correct cells from the held-out calibration's draw (moved by the
estimates minus that calibration's estimates) and shares it among the method's instructions as the
estimates' calibration's draw places them (:func:`share_totals`): the method means spread as the
held-out calibration says, each instruction about its method's mean as the fitted one says, every
draw a count of correct cells within each instruction's bounds. An instruction's estimate is not
pulled toward its method's as the crossed model's is, so the quantiles across instructions are the
estimates' own (``ChoiceScoreGridFit.quantiles_from_draws``); the aggregation's ``estimate_grid``
gives them intervals spanning the draws' percentile interval and that interval moved by the
estimate minus the draws' mean.

What was measured before these choices, and the variants not kept:
``docs/validation/estimators-tried.md``.

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

import math
import random
from dataclasses import dataclass
from typing import ClassVar, Mapping, Sequence

import numpy as np

from .protocol import Cells, ChoiceGrid

# The estimator's name in a budgeted grid's records (``budget.allocation``, the aggregation's ``estimator``)
ESTIMATOR = "choice scores"
RIDGE = 1.0  # the score stage's penalty, in cells: an effect seen on one cell is halved
SCORE_ROUNDS = 40
CALIBRATION_PRIOR_SD = 2.0  # alpha, gamma: 2 logits, weak on margins of a few log-likelihood units
START_SD = 1.0  # u_i, v_j: the SDs the EM starts from
EM_ROUNDS = 30
EM_TOLERANCE = 1e-3  # relative change of the SDs' precisions
HELD_OUT_FOLDS = 10  # the folds of the intervals' calibration (``spread_draws``)
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
    s_u: float  # the instruction effects' SD (logits), after the EM's rounds (module doc)
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


def held_out_margins(c: np.ndarray, observed: np.ndarray, groups: np.ndarray, gold: np.ndarray,
                     folds: int) -> np.ndarray:
    """Every observed cell's gold margin as a score fit that did not see it predicts it: the
    observed cells dealt into ``folds`` folds (``random.Random("choice-scores|held-out")``), each
    fold's margins from a fit on the others; NaN where unobserved.

        >>> lean = np.array([1.0, 0.8, 1.2, -1.0, -0.8, -1.2])
        >>> z = np.zeros((2, 6, 2)); z[0, :, 0] = lean; z[1, :, 0] = lean + 1.5
        >>> x = held_out_margins(centred(z), np.ones((2, 6), dtype=bool), np.array([0, 0]), np.array([0, 0, 0, 1, 1, 1]), 3)
        >>> bool(np.isfinite(x).all()), bool((np.sign(x[1, :3]) > 0).all())
        (True, True)
    """
    rows, cols = np.nonzero(observed)
    order = list(range(rows.size))
    random.Random("choice-scores|held-out").shuffle(order)
    fold = np.empty(rows.size, dtype=int)
    fold[order] = np.arange(rows.size) % folds
    out = np.full(observed.shape, np.nan)
    for f in range(folds):
        held = fold == f
        seen = observed.copy()
        seen[rows[held], cols[held]] = False
        out[rows[held], cols[held]] = gold_margins(fit_scores(c, seen, groups), gold)[rows[held], cols[held]]
    return out


def fit_choice_scores(scores: np.ndarray, observed: np.ndarray, y: np.ndarray, gold: np.ndarray,
                      groups: np.ndarray, *, held_out_folds: int = 0) -> ChoiceScoreFit:
    """Both stages of the module doc on ``scores`` (``n_rows x n_cols x K``, read where ``observed``),
    the observed cells' correctness ``y`` (``n_rows x n_cols``, read where observed) and each item's
    gold label index ``gold``; ``groups[i]`` is instruction i's method index. ``held_out_folds``
    (> 1) calibrates on the observed cells' held-out margins (``held_out_margins``) instead of their
    fitted ones: the intervals' calibration (module doc). Deterministic."""
    from scipy.optimize import minimize

    groups = np.asarray(groups, dtype=int)
    m, n, _ = scores.shape
    c = centred(scores)
    x = gold_margins(fit_scores(c, observed, groups), gold)
    calibrated_on = held_out_margins(c, observed, groups, gold, held_out_folds) if held_out_folds > 1 else x
    design = _Calibration(groups, int(groups.max()) + 1, m, n, np.asarray(gold, dtype=int))
    rows, cols = np.nonzero(observed)
    xo, yo = calibrated_on[rows, cols], y[rows, cols]

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


def share_totals(totals: np.ndarray, pattern: np.ndarray, low: np.ndarray, high: np.ndarray,
                 *, steps: int = 60) -> np.ndarray:
    """Per draw, ``totals`` (draws) shared among a method's instructions as ``pattern`` (draws x k)
    places them: ``clip(pattern + t, low, high)`` with the shift ``t`` of each draw that makes the
    row sum to its total (bisection; the sum never falls as ``t`` grows), then rounded to whole
    cells by largest remainder, so that every row keeps its total and its bounds. ``low``, ``high``
    and ``totals`` are counts of correct cells; a total outside ``[sum(low), sum(high)]`` is clipped.

        >>> share_totals(np.array([5.0]), np.array([[3.0, 1.0, 1.0]]), np.zeros(3), np.array([2.0, 9.0, 9.0]))
        array([[2., 2., 1.]])

    (the first instruction's share is capped at 2, the shift that fills the total falls on the others)
    """
    totals = np.clip(totals, low.sum(), high.sum())
    lo_t = (low - pattern).min(axis=1) - 1.0
    hi_t = (high - pattern).max(axis=1) + 1.0
    for _ in range(steps):
        mid = (lo_t + hi_t) / 2
        over = np.clip(pattern + mid[:, None], low, high).sum(axis=1) > totals
        hi_t = np.where(over, mid, hi_t)
        lo_t = np.where(over, lo_t, mid)
    shared = np.clip(pattern + lo_t[:, None], low, high)
    whole = np.floor(shared + 1e-9)
    left = np.rint(totals - whole.sum(axis=1)).astype(int)  # cells still to give, one each
    order = np.argsort(-(shared - whole), axis=1, kind="stable")
    rank = np.argsort(order, axis=1)  # each instruction's place in its row's order
    return np.minimum(whole + (rank < left[:, None]), high)


def spread_draws(scores: np.ndarray, observed: np.ndarray, y: np.ndarray, gold: np.ndarray, groups: np.ndarray,
                 n_draws: int, rng: np.random.Generator, *, fitted: ChoiceScoreFit | None = None) -> np.ndarray:
    """``n_draws x n_rows`` accuracies on the full grid, centred on the estimates (those of ``fitted``,
    the fitted margins' calibration, ``choice_score_accuracy``; fitted here when not given): the
    module doc's *Uncertainty*.

    A method's correct cells per draw are the calibration on held-out margins'
    (``held_out_folds=HELD_OUT_FOLDS``): its draws, each instruction moved by the estimate minus that
    calibration's estimate (rounded to whole cells) and kept within what its unobserved cells allow.
    How a draw shares them among the method's instructions is the fitted margins' calibration's:
    its own draw, moved to the estimates likewise, shifted by one amount per draw until the
    method's total is met (``share_totals``). So the method means spread as the held-out
    calibration says (the common error of predicted margins), an instruction about its method's as
    the fitted one says (the held-out calibration's independent cells overstate that part). Every
    draw is a count of correct cells within the instruction's bounds, and an instruction whose
    every cell is sure keeps its one value exactly.
    """
    n = observed.shape[1]
    fitted = fitted if fitted is not None else fit_choice_scores(scores, observed, y, gold, groups)
    point = choice_score_accuracy(fitted, observed, y)
    spread = fit_choice_scores(scores, observed, y, gold, groups, held_out_folds=HELD_OUT_FOLDS)
    low = np.where(observed, y, 0.0).sum(axis=1)
    high = low + (~observed).sum(axis=1)

    def counts(fit: ChoiceScoreFit) -> np.ndarray:
        shift = np.round((point - choice_score_accuracy(fit, observed, y)) * n)
        return np.clip(np.rint(choice_score_draws(fit, observed, y, n_draws, rng) * n) + shift, low, high)

    held, own = counts(spread), counts(fitted)
    out = np.empty_like(held)
    groups = np.asarray(groups)
    for group in np.unique(groups):
        rows = groups == group
        out[:, rows] = share_totals(held[:, rows].sum(axis=1), own[:, rows], low[rows], high[rows])
    return out / n


# --- the label scores of a samples file's log-likelihood lines (read by the aggregation and by an
# adaptive budget's rounds, which choose their cells from them)

def choice_pairs(record: dict) -> list | None:
    """The ``[ll, is_greedy]`` pair per choice of a log-likelihood line; ``None`` for a generation line."""
    resps = record.get("filtered_resps", record.get("resps"))
    if not isinstance(resps, list) or not resps:
        return None
    pairs = [r[0] if isinstance(r, list) and len(r) == 1 and isinstance(r[0], list) else r for r in resps]
    return pairs if all(isinstance(p, list) and len(p) == 2 for p in pairs) else None


def continuations(record: dict) -> list:
    """Each request's continuation (``arguments``' second argument), ``None`` where a line has none."""
    arguments = record.get("arguments")
    if isinstance(arguments, dict):
        return [a.get("arg_1") if isinstance(a, dict) else None for a in arguments.values()]
    if isinstance(arguments, list):
        return [a[1] if isinstance(a, list) and len(a) > 1 else None for a in arguments]
    return []


def gold_choice(record: dict, n_choices: int) -> int | None:
    """The gold choice's index of a log-likelihood line: ``target`` as an integer (or its digits) or
    its text matched against the continuations, stripped; ``None`` if neither names one choice."""
    target = record.get("target")
    index = None
    if isinstance(target, int) and not isinstance(target, bool):
        index = target
    elif isinstance(target, str) and target.strip().isdigit():
        index = int(target.strip())
    elif isinstance(target, str):
        matches = [k for k, c in enumerate(continuations(record)) if isinstance(c, str) and c.strip() == target.strip()]
        index = matches[0] if len(matches) == 1 else None
    return index if index is not None and 0 <= index < n_choices else None


def finite_float(value: object) -> float:
    """``value`` as a float; NaN if it is none or not finite."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return math.nan
    return number if math.isfinite(number) else math.nan


@dataclass(frozen=True)
class ChoiceScores:
    """The per-choice log-likelihoods of a samples file's log-likelihood lines, in ``doc_id`` order:
    ``loglikelihoods[r, k]`` (NaN where unreadable), ``continuations[r]`` and the gold choice ``gold[r]``
    (-1 where no choice is named)."""

    doc_ids: np.ndarray
    loglikelihoods: list[np.ndarray]
    continuations: list[tuple]
    gold: np.ndarray


def choice_line(record: dict) -> tuple[np.ndarray, tuple, int]:
    """One line's per-choice log-likelihoods, continuations and gold choice (-1: none)."""
    pairs = choice_pairs(record) or []
    index = gold_choice(record, len(pairs)) if pairs else None
    return (np.array([finite_float(p[0]) for p in pairs], dtype=np.float64), tuple(continuations(record)),
            -1 if index is None else index)


def choice_scores_of(records: Sequence[dict]) -> ChoiceScores:
    """:class:`ChoiceScores` of samples lines (one per ``doc_id``), in ``doc_id`` order.

        >>> line = lambda doc, target: {"doc_id": doc, "target": target, "filtered_resps": [["-1", "False"], ["-2", "False"]],
        ...                             "arguments": {"gen_args_0": {"arg_1": " yes"}, "gen_args_1": {"arg_1": " no"}}}
        >>> scores = choice_scores_of([line(3, "1"), line(1, "0")])
        >>> scores.doc_ids.tolist(), scores.gold.tolist(), scores.continuations[0]
        ([1, 3], [0, 1], (' yes', ' no'))
    """
    ordered = sorted(records, key=lambda record: int(record["doc_id"]))
    parsed = [choice_line(record) for record in ordered]
    return ChoiceScores(np.array([int(record["doc_id"]) for record in ordered], dtype=np.int64), [p[0] for p in parsed],
                        [p[1] for p in parsed], np.array([p[2] for p in parsed], dtype=np.int64))


def choice_grid(cells: Cells, scored: Sequence[tuple[int, ChoiceScores]], metric: str,
                token_counts: Sequence[object]) -> ChoiceGrid | str:
    """The label scores ``z_ijk`` of every observed cell under ``metric``'s rule (``acc``: the
    log-likelihood; ``acc_per_token``: per continuation token, the counts from the results'
    ``choice_token_counts``), or why there are none. They must reproduce every observed cell's
    ``metric`` (an exact tie aside): scores that disagree with the answers are not used.

        >>> cells = Cells(rows=np.array([0, 0]), cols=np.array([0, 1]), y=np.array([1.0, 1.0]), n_rows=1, n_cols=2)
        >>> line = lambda lls, gold: ChoiceScores(np.array([0, 1]), [np.array(x) for x in lls], [(" A", " B c")] * 2, np.array(gold))
        >>> lines = [(0, line([[-1.0, -3.0], [-1.0, -1.5]], [0, 1]))]
        >>> grid = choice_grid(cells, lines, "acc_per_token", [{" A": 1, " B c": 2}])
        >>> grid.scores[0].tolist(), grid.gold.tolist()
        ([[-1.0, -1.5], [-1.0, -0.75]], [0, 1])
        >>> choice_grid(cells, lines, "acc", [None])  # by log-likelihood item 1's answer is A: not what was scored
        'the label scores give another answer than acc on 1 cells'
        >>> choice_grid(cells, lines, "acc_per_token", [None])
        "acc_per_token needs the labels' token counts and the results record no choice_token_counts (rerun the variants to record them)"
    """
    labels: tuple | None = None
    per_label: np.ndarray | None = None
    if metric == "acc_per_token":
        recorded = {str(sorted(c.items())) if isinstance(c, Mapping) else None for c in token_counts}
        if None in recorded or len(recorded) != 1:
            return ("acc_per_token needs the labels' token counts and the results record no choice_token_counts "
                    "(rerun the variants to record them)" if None in recorded
                    else "the variants record different choice_token_counts")
        counts = next(c for c in token_counts if isinstance(c, Mapping))
    scores = np.full((cells.n_rows, cells.n_cols, 0), np.nan)
    gold = np.full(cells.n_cols, -1)
    for row, lines in scored:
        for doc_id, lls, continuations, g in zip(lines.doc_ids, lines.loglikelihoods, lines.continuations, lines.gold):
            if labels is None:
                labels = continuations
                if len(labels) < 2 or not all(isinstance(c, str) for c in labels):
                    return "its samples name fewer than two labels"
                if metric == "acc_per_token":
                    if not all(isinstance(counts.get(c), int) and counts[c] > 0 for c in labels):
                        return f"choice_token_counts has no count for some of the labels {list(labels)}"
                    per_label = np.array([float(counts[c]) for c in labels])
                else:
                    per_label = np.ones(len(labels))
                scores = np.full((cells.n_rows, cells.n_cols, len(labels)), np.nan)
            if continuations != labels:
                return f"item {int(doc_id)}'s labels {list(continuations)} differ from {list(labels)}: not one verbalizer"
            if lls.shape != (len(labels),) or not np.isfinite(lls).all() or g < 0:
                return f"item {int(doc_id)} has no score of every label or no gold label in its samples"
            if gold[doc_id] not in (-1, g):
                return f"item {int(doc_id)} has two gold labels"
            gold[doc_id] = g
            scores[row, doc_id] = lls / per_label
    if labels is None:
        return "its samples have no label scores"
    y = np.full((cells.n_rows, cells.n_cols), np.nan)
    y[cells.rows, cells.cols] = cells.y
    observed = ~np.isnan(scores[..., 0])
    if not np.array_equal(observed, ~np.isnan(y)) or (gold < 0).any():
        return "the samples do not give every observed cell's label scores and every item's gold label"
    z = scores[observed]
    top = np.sort(z, axis=1)
    right = z.argmax(axis=1) == gold[np.nonzero(observed)[1]]
    tied = top[:, -1] == top[:, -2]
    wrong = int(np.sum((right != (y[observed] > 0.5)) & ~tied))
    if wrong:
        return f"the label scores give another answer than {metric} on {wrong} cells"
    return ChoiceGrid(scores, gold, labels)


@dataclass(frozen=True)
class ChoiceScoreGridFit:
    """:class:`~.protocol.GridFit` of the label-score model: ``fitted`` on ``cells`` (and their label scores)."""

    name: ClassVar[str] = ESTIMATOR
    quantiles_from_draws: ClassVar[bool] = False  # the estimates are not pulled toward their method's (module doc)

    fitted: ChoiceScoreFit
    cells: Cells

    @property
    def s_instruction(self) -> float:
        return self.fitted.s_u

    @property
    def s_item(self) -> float:
        return self.fitted.s_v

    def probabilities(self) -> np.ndarray:
        return self.fitted.probabilities

    def estimates(self) -> np.ndarray:
        y, observed = self.cells.matrices()
        return choice_score_accuracy(self.fitted, observed, y)

    def draws(self, n_draws: int, rng: np.random.Generator) -> np.ndarray:
        """``spread_draws``: the method means' spread from the held-out calibration (module doc)."""
        y, observed = self.cells.matrices()
        grid = self.cells.label_scores
        return spread_draws(grid.scores, observed, y, grid.gold, self.cells.group_index(), n_draws, rng, fitted=self.fitted)


class ChoiceScoreEstimator:
    """:class:`~.protocol.Estimator` of the label-score model (module doc): fits a grid whose cells
    carry their label scores (``Cells.label_scores``, from :func:`choice_grid`)."""

    name: ClassVar[str] = ESTIMATOR

    def applies(self, cells: Cells) -> bool:
        return cells.label_scores is not None

    def fit(self, cells: Cells) -> ChoiceScoreGridFit:
        if cells.label_scores is None:
            raise ValueError(f"the {ESTIMATOR} estimator needs the cells' label scores (Cells.label_scores)")
        y, observed = cells.matrices()
        grid = cells.label_scores
        return ChoiceScoreGridFit(fit_choice_scores(grid.scores, observed, y, grid.gold, cells.group_index()), cells)
