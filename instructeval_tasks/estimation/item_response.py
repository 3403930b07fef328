"""The crossed item-response model of a budgeted grid (as PromptEval, Polo et al. 2024, uses one).

**Model.** Instruction i, of selection method k(i), answers item j of gold class c(j) correctly with

    P(y_ij = 1) = sigmoid(beta_{k(i), c(j)} + u_{i, c(j)} + b_j)

``c(j)`` is item j's gold class (``Cells.classes``, from :func:`item_classes`: the label of a
classification item, the gold choice's position of a multiple-choice one; a single class for open
answers, or when any item's is unknown).

- ``beta_kc``, one per method and class, are fixed effects. Their only prior,
  ``N(mean_k' beta_k'c, METHOD_PRIOR_SD^2)``, keeps a method whose observed cells are all right (or
  all wrong) finite (separation) and centres on the methods' mean, so it pulls no method toward
  another one, the fully observed null method included.
- Each class's **level** ``l_c = mean_k beta_kc`` has the Jeffreys prior of a rate,
  ``(log r + log(1 - r)) / 2`` with ``r = sum_g w_g sigmoid(l_c + b_g)``: an average instruction's
  accuracy on an item drawn from the item distribution, worth half a correct and half a wrong
  answer. A grid with no correct observed cell then predicts its unobserved cells about as a rate
  after 0 successes in n, ``Beta(1/2, n + 1/2)``, instead of exactly 0.
- Instruction effects ``u_i = (u_i1 .. u_iC) ~ N(0, Sigma)``, one per class (an instruction moves
  the answers toward some labels and away from others), ``Sigma`` (C x C) by marginal likelihood.
  With C = 1 this is one effect per instruction, ``a_i ~ N(0, s_a^2)``.
- Item effects ``b_j`` from a discrete distribution on the logits ``ITEM_GRID`` with weights ``w_g``
  estimated by nonparametric maximum likelihood (Kiefer and Wolfowitz), not smoothed: most test
  items are answered alike by every instruction, which a normal ``b`` cannot represent.

**Fit** (:func:`fit_crossed`). EM with the item effects integrated out: the E step weighs each item's
grid points by the likelihood of its observed cells (``resp[j, g]``); the M step sets the weights to
the mean of ``resp``, then updates ``u`` and ``beta`` by ``NEWTON_STEPS`` Newton steps on the expected
log-likelihood plus the priors, then ``Sigma <- mean_i(u_i u_i' + H_i^-1)`` (``H_i`` the curvature in
``u_i``; Laplace EM). It stops when the objective changes by less than ``TOLERANCE`` (relative) or
after ``MAX_ROUNDS`` rounds. Deterministic.

**Estimate** (:func:`instruction_accuracy`). Instruction i's accuracy on the grid's n items keeps what
was observed and predicts the rest, so a full grid gives back its exact accuracies:

    acc_i = (sum_{j observed} y_ij + sum_{j not observed} p_ij) / n,
    p_ij = sum_g resp[j, g] sigmoid(beta_{k(i), c(j)} + u_{i, c(j)} + b_g)

**Uncertainty** (:func:`predictive_draws`). Each draw takes every ``beta_kc`` and ``u_i`` from its
posterior given the other effects at the fit (:func:`effect_draws`), the item distribution's weights
from a weighted likelihood bootstrap (:func:`item_weight_draws`), one grid point per item from its
posterior under those weights (:func:`item_point_draws`), and a Bernoulli outcome for every
unobserved cell; the draw's accuracies are those of the finite grid. Intervals for an instruction,
a method's mean and a quantile across instructions are the draws' percentiles. The estimates are
pulled toward their method's, so the quantiles across instructions are taken from the draws
(``ItemResponseGridFit.quantiles_from_draws``; the aggregation's ``estimate_grid``).

What was measured before these choices, and the variants not kept:
``docs/validation/estimators-tried.md``.

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
from typing import ClassVar, Iterator, Mapping

import numpy as np

from .protocol import Cells

ITEM_GRID = np.linspace(-8.0, 8.0, 33)  # the logits the item effects take (their distribution's support)
METHOD_PRIOR_SD = 1.0
MAX_ROUNDS = 500
TOLERANCE = 1e-9
MIN_VARIANCE = 1e-4
NEWTON_STEPS = 3
# The estimator's name in a budgeted grid's records (``budget.allocation``, the aggregation's ``estimator``)
ESTIMATOR = "item-response"
MAX_CLASSES = 10  # the most gold classes given their own effects (the nine tasks have at most 6)


def target_text(target: object) -> str | None:
    """A per-sample log line's gold ``target`` as a class name (an integer and its digits alike,
    stripped); ``None`` for none or for a list of answers (open QA).

        >>> target_text(3), target_text(" 3"), target_text(["Paris", "paris"])
        ('3', '3', None)
    """
    if target is None or isinstance(target, (list, dict)):
        return None
    return str(target).strip()


def item_classes(targets: Mapping[int, str | None], n_items: int) -> np.ndarray | None:
    """Each item's gold class index (classes in sorted order) for the model's instruction x class
    effects; ``None`` (one effect per instruction) when an item's gold answer is unknown (no
    instruction evaluated it, or its samples have no ``target``), every item has the same one, or
    there are more than ``MAX_CLASSES`` (answers, not labels: a free-form target).

    Example:
        >>> item_classes({0: "1", 1: "0", 2: "1"}, 3).tolist()
        [1, 0, 1]
    """
    labels = [targets.get(j) for j in range(n_items)]
    if any(label is None for label in labels):
        return None
    names = sorted(set(labels))
    if not 2 <= len(names) <= MAX_CLASSES:
        return None
    return np.array([names.index(label) for label in labels], dtype=int)


@dataclass(frozen=True)
class CrossedFit:
    """Fitted effects: methods ``beta``, instruction-by-class effects ``u``, the item distribution
    and each item's posterior."""

    beta: np.ndarray
    u: np.ndarray  # n_rows x n_classes
    item_weights: np.ndarray  # over ITEM_GRID
    item_posterior: np.ndarray  # n_cols x len(ITEM_GRID)
    item_loglik: np.ndarray  # n_cols x len(ITEM_GRID): each item's observed cells' log-likelihood at each point
    h_u: np.ndarray  # n_rows x n_classes x n_classes: each u_i's approximate posterior precision
    h_beta: np.ndarray
    sigma: np.ndarray  # n_classes x n_classes: the covariance of u_i
    groups: np.ndarray
    classes: np.ndarray  # n_cols
    rounds: int
    method_prior_sd: float = METHOD_PRIOR_SD

    @property
    def class_shares(self) -> np.ndarray:
        return np.bincount(self.classes, minlength=self.u.shape[1]) / max(self.classes.size, 1)

    @property
    def a(self) -> np.ndarray:
        """Each instruction's effect averaged over the items' classes (its ``u_i`` with one class)."""
        return self.u @ self.class_shares

    @property
    def s_a(self) -> float:
        """Standard deviation of ``a_i`` under the fitted covariance (logits)."""
        w = self.class_shares
        return float(np.sqrt(max(w @ self.sigma @ w, 0.0)))

    @property
    def s_item(self) -> float:
        """Standard deviation of the fitted item-effect distribution (logits)."""
        mean = float(self.item_weights @ ITEM_GRID)
        return float(np.sqrt(max(self.item_weights @ (ITEM_GRID - mean) ** 2, 0.0)))

    def logits(self) -> np.ndarray:
        """``c_il = beta_k(i) + u_il``, ``n_rows x n_classes``."""
        return self.beta[self.groups] + self.u

    def probabilities(self) -> np.ndarray:
        """``p_ij``: every cell's predicted probability of a correct answer, ``n_rows x n_cols``."""
        out = np.empty((self.u.shape[0], self.classes.size))
        logits = self.logits()
        for c in range(self.u.shape[1]):
            items = self.classes == c
            per_point = _sigmoid(logits[:, c][:, None] + ITEM_GRID[None, :])  # rows x grid
            out[:, items] = per_point @ self.item_posterior[items].T
        return out


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def _level_rate(level: np.ndarray, item_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``r`` and ``dr/dlevel``: an average instruction's accuracy at a class's ``level`` on an item
    drawn from the item distribution, ``r = sum_g w_g sigmoid(level + b_g)``."""
    s = _sigmoid(np.asarray(level)[..., None] + ITEM_GRID)
    return s @ item_weights, (s * (1 - s)) @ item_weights


def _log_level_prior(level: np.ndarray, item_weights: np.ndarray) -> np.ndarray:
    """The log density, up to a constant, of a class's level (the mean of its method effects): the
    Jeffreys prior of the rate ``r`` (``_level_rate``) in logits, ``(log r + log(1 - r)) / 2``."""
    r, _ = _level_rate(level, item_weights)
    return 0.5 * (np.log(np.maximum(r, 1e-300)) + np.log(np.maximum(1 - r, 1e-300)))


def _level_gradient(level: np.ndarray, item_weights: np.ndarray) -> np.ndarray:
    r, slope = _level_rate(level, item_weights)
    return 0.5 * slope * (1 / np.maximum(r, 1e-300) - 1 / np.maximum(1 - r, 1e-300))


def fit_crossed(cells: Cells, *, method_prior_sd: float = METHOD_PRIOR_SD) -> CrossedFit:
    """The EM fit of the module doc; deterministic (no random draws)."""
    m, k, n_cls = cells.n_rows, cells.n_groups, cells.n_classes
    groups, classes = cells.group_index(), cells.class_index()
    members = [classes == c for c in range(n_cls)]
    scores, observed = cells.matrices()
    right, wrong = observed * scores, observed * (1.0 - scores)
    weights = np.full(ITEM_GRID.size, 1.0 / ITEM_GRID.size)
    mean = float(np.clip(cells.y.mean() if cells.y.size else 0.5, 0.02, 0.98))
    beta = np.full((k, n_cls), np.log(mean / (1 - mean)))  # a method's effect on each class's items
    u = np.zeros((m, n_cls))
    sigma = np.eye(n_cls) * 0.25
    precision = np.linalg.inv(sigma)
    prior_beta = 1.0 / method_prior_sd**2
    previous = -np.inf
    h_u = np.broadcast_to(precision, (m, n_cls, n_cls)).copy()
    h_beta = np.full((k, n_cls), prior_beta)
    by_group = np.eye(k)[groups].T  # methods x rows: sums a row quantity over each method's instructions
    rounds = 0
    for rounds in range(1, MAX_ROUNDS + 1):
        eta = beta[groups] + u  # rows x classes
        loglik = np.empty((cells.n_cols, ITEM_GRID.size))
        for c, items in enumerate(members):
            x = eta[:, c][:, None] + ITEM_GRID[None, :]  # rows x grid
            loglik[items] = right[:, items].T @ _log_sigmoid(x) + wrong[:, items].T @ _log_sigmoid(-x)
        joint = loglik + np.log(np.maximum(weights, 1e-300))[None, :]
        top = joint.max(axis=1, keepdims=True)
        resp = np.exp(joint - top)
        norm = resp.sum(axis=1, keepdims=True)
        resp /= norm
        objective = float(np.sum(top[:, 0] + np.log(norm[:, 0]))) \
            - 0.5 * float(np.einsum("ic,cd,id->", u, precision, u)) \
            - 0.5 * prior_beta * float(np.sum((beta - beta.mean(axis=0)) ** 2)) \
            + float(np.sum(_log_level_prior(beta.mean(axis=0), weights)))
        weights = resp.mean(axis=0)
        for _ in range(NEWTON_STEPS):
            for part in ("u", "beta"):
                residual, curvature = np.empty((m, n_cls)), np.empty((m, n_cls))
                for c, items in enumerate(members):
                    s = _sigmoid((beta[groups, c] + u[:, c])[:, None] + ITEM_GRID[None, :])
                    seen = observed[:, items]
                    residual[:, c] = (right[:, items] - seen * (s @ resp[items].T)).sum(axis=1)
                    curvature[:, c] = (seen * ((s * (1 - s)) @ resp[items].T)).sum(axis=1)
                if part == "u":
                    h_u = precision[None] + curvature[:, :, None] * np.eye(n_cls)[None]
                    gradient = residual - u @ precision
                    u = u + np.linalg.solve(h_u, gradient[:, :, None])[:, :, 0]
                else:
                    h_beta = by_group @ curvature + prior_beta
                    level = beta.mean(axis=0)
                    beta = beta + (by_group @ residual - prior_beta * (beta - level)
                                   + _level_gradient(level, weights)[None, :] / k) / h_beta
        sigma = (u.T @ u + np.linalg.inv(h_u).sum(axis=0)) / m
        sigma[np.diag_indices(n_cls)] = np.maximum(np.diag(sigma), MIN_VARIANCE)
        precision = np.linalg.inv(sigma)
        if abs(objective - previous) <= TOLERANCE * max(1.0, abs(objective)):
            break
        previous = objective
    return CrossedFit(beta=beta, u=u, item_weights=weights, item_posterior=resp, item_loglik=loglik, h_u=h_u,
                      h_beta=h_beta, sigma=sigma,
                      groups=groups, classes=classes, rounds=rounds, method_prior_sd=method_prior_sd)


def instruction_accuracy(fit: CrossedFit, cells: Cells) -> np.ndarray:
    """``acc_i``: observed cells as scored, the others predicted (module doc), per instruction."""
    scores, observed = cells.matrices()
    return np.where(observed, scores, fit.probabilities()).mean(axis=1)


ETA_GRID = np.linspace(-24.0, 24.0, 961)  # logits (step 0.05) at which the effects' log-likelihoods are tabulated
ETA_STEP = ETA_GRID[1] - ETA_GRID[0]
PROPOSALS = 4  # proposals per draw of each u_i with one class (sampling-importance-resampling)
PROPOSAL_GROWTH = 1.2  # the proposals per draw grow by this factor per class beyond the first
PROPOSAL_SCALE = 1.5  # the proposal's spread, times the Laplace approximation's: its tails must cover the posterior's
ITEM_WEIGHT_STEPS = 200  # EM steps of each reweighted item distribution (item_weight_draws)
ITEM_PRIOR_MASS = 1.0  # the item distribution's Dirichlet-process prior in its draws, in items (item_weight_draws)


def _loglik_tables(fit: CrossedFit, cells: Cells) -> np.ndarray:
    """``L[i, c, e]``: instruction i's expected log-likelihood on its observed class-c cells (item
    effects weighed by their posteriors, as in the fit's M step) at the logit ``ETA_GRID[e]``."""
    scores, observed = cells.matrices()
    right, wrong = observed * scores, observed * (1.0 - scores)
    x = ETA_GRID[:, None] + ITEM_GRID[None, :]
    log_right, log_wrong = _log_sigmoid(x), _log_sigmoid(-x)  # eta x item grid
    tables = np.empty((cells.n_rows, fit.u.shape[1], ETA_GRID.size))
    for c in range(fit.u.shape[1]):
        items = fit.classes == c
        tables[:, c] = (right[:, items] @ fit.item_posterior[items]) @ log_right.T \
            + (wrong[:, items] @ fit.item_posterior[items]) @ log_wrong.T
    return tables


def _at(tables: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """``tables`` (``rows x len(ETA_GRID)``) linearly interpolated, row by row, at the logits ``eta``
    (``rows x L``; clipped to the grid's range): ``rows x L``."""
    position = np.clip((eta - ETA_GRID[0]) / ETA_STEP, 0.0, ETA_GRID.size - 1.000001)
    low = np.floor(position).astype(int)
    weight = position - low
    return (1.0 - weight) * np.take_along_axis(tables, low, axis=-1) + weight * np.take_along_axis(tables, low + 1, axis=-1)


def effect_draws(fit: CrossedFit, cells: Cells, n_draws: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draws of the method effects (``n_draws x methods x classes``) and the instruction effects
    (``n_draws x rows x classes``) from their posteriors, each given the others at the fit.

    The draws follow the conditional posteriors themselves, not a normal approximation at the mode,
    which is poor where accuracies saturate (a class every instruction gets wrong: the log-likelihood
    is flat downward and falls exponentially upward); the item effects are weighed by their
    posteriors as in the fit:

    - a shift ``delta_c`` of every method's effect on class c (the level's own uncertainty, which
      draws of one method given the others at the fit leave out: where no observed cell is correct
      it is most of the uncertainty there is): exactly, on ``ETA_GRID``, from
      ``sum_i L_ic(beta_k(i)c + delta + u_ic)`` plus the level's log prior at ``level_c + delta``;
    - ``beta_kc`` (one logit): exactly, on ``ETA_GRID``, from
      ``sum_{i in k} L_ic(beta + u_ic) - prior_beta (1 - 1/K) (beta - centre)^2 / 2`` plus the
      level's log prior (the fit's priors as functions of one method's effect), ``centre`` the mean
      of the other methods' effects shifted by the draw's ``delta_c``;
    - ``u_i`` (one logit per class): by sampling-importance-resampling, proposals from
      ``N(u_i, PROPOSAL_SCALE^2 H_i^-1)``, ``PROPOSALS * round(PROPOSAL_GROWTH^(C-1))`` per draw for
      ``C`` classes (a widened proposal's effective share falls with the classes), weighted by
      ``sum_c L_ic(beta_k(i)c + u_c) - u' Sigma^-1 u / 2`` over the proposal's density.

    ``L_ic`` is ``_loglik_tables``. Deterministic given ``rng``.
    """
    tables = _loglik_tables(fit, cells)
    m, n_cls = fit.u.shape
    k = fit.beta.shape[0]
    prior = 1.0 / fit.method_prior_sd**2
    beta = np.empty((n_draws, k, n_cls))
    level_prior = _log_level_prior(ETA_GRID, fit.item_weights)
    for c in range(n_cls):
        # the class's level: every method's effect shifted by one delta, drawn first
        level = fit.beta[:, c].mean()
        if k > 1:
            at_fit = (fit.beta[fit.groups, c] + fit.u[:, c])[:, None]
            log_post = _at(tables[:, c], ETA_GRID[None, :] + at_fit).sum(axis=0) + np.interp(level + ETA_GRID, ETA_GRID, level_prior)
            delta = _grid_draws(log_post, n_draws, rng)
        else:
            delta = np.zeros(n_draws)
        for g in range(k):
            members = np.flatnonzero(fit.groups == g)
            shifted = ETA_GRID[None, :] + fit.u[members, c][:, None]  # members x candidates
            log_lik = _at(tables[members, c], shifted).sum(axis=0)
            others = fit.beta[:, c].sum() - fit.beta[g, c] + (k - 1) * delta[:, None]  # draws x 1
            log_post = log_lik[None, :] + np.interp((ETA_GRID[None, :] + others) / k, ETA_GRID, level_prior)
            if k > 1:
                log_post = log_post - 0.5 * prior * (1 - 1 / k) * (ETA_GRID[None, :] - others / (k - 1)) ** 2
            beta[:, g, c] = _grid_draws(log_post, n_draws, rng)
    precision = np.linalg.inv(fit.sigma)
    root = np.linalg.cholesky(np.linalg.inv(fit.h_u)).transpose(0, 2, 1) * PROPOSAL_SCALE
    per_draw = PROPOSALS * max(1, round(PROPOSAL_GROWTH ** (n_cls - 1)))
    proposals = fit.u[:, None, :] + np.einsum("mlc,mcd->mld", rng.standard_normal((m, per_draw * n_draws, n_cls)), root)
    logits = fit.beta[fit.groups][:, None, :] + proposals  # rows x proposals x classes
    log_lik = sum(_at(tables[:, c], logits[:, :, c]) for c in range(n_cls))
    log_prior = -0.5 * np.einsum("mlc,cd,mld->ml", proposals, precision, proposals)
    offset = proposals - fit.u[:, None, :]
    log_proposal = -0.5 * np.einsum("mlc,mcd,mld->ml", offset, fit.h_u, offset) / PROPOSAL_SCALE**2
    log_weight = log_lik + log_prior - log_proposal
    u = np.empty((n_draws, m, n_cls))
    for i in range(m):
        w = np.exp(log_weight[i] - log_weight[i].max())
        u[:, i] = proposals[i, rng.choice(w.size, size=n_draws, p=w / w.sum())]
    return beta, u


def _categorical(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One index along the last axis of ``weights`` (non-negative, unnormalised, some positive) for
    every position of the others, each by its weight: the inverse CDF of one uniform each."""
    cumulative = np.cumsum(weights, axis=-1)
    uniforms = rng.random(cumulative.shape[:-1] + (1,))
    return np.minimum((uniforms * cumulative[..., -1:] > cumulative).sum(axis=-1), weights.shape[-1] - 1)


def _grid_draws(log_post: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``n_draws`` logits from a log density tabulated on ``ETA_GRID``: one table for every draw, or
    one per draw (``n_draws x len(ETA_GRID)``); each draw a grid point by its weight, jittered
    uniformly within its step."""
    table = np.broadcast_to(log_post, (n_draws, ETA_GRID.size))
    picks = _categorical(np.exp(table - table.max(axis=1, keepdims=True)), rng)
    return ETA_GRID[picks] + (rng.random(n_draws) - 0.5) * ETA_STEP


def item_points(fit: CrossedFit, rng: np.random.Generator, n_draws: int) -> np.ndarray:
    """``n_draws x n_cols`` indices into ``ITEM_GRID``: each draw takes every item's effect from its
    posterior (``resp[j]``)."""
    return _categorical(np.broadcast_to(fit.item_posterior, (n_draws, *fit.item_posterior.shape)), rng)


def item_weight_draws(fit: CrossedFit, rng: np.random.Generator, n_draws: int) -> np.ndarray:
    """``n_draws x len(ITEM_GRID)`` draws of the item distribution's weights: a weighted likelihood
    bootstrap (Newton and Raftery 1994) under a Dirichlet-process prior of mass
    ``ITEM_PRIOR_MASS`` (one item's worth) spread uniformly over the grid. Each draw weighs item j's
    likelihood by its own ``g_j ~ Exp(1)``, the prior by ``g_0 ~ Gamma(ITEM_PRIOR_MASS)`` on points
    ``pi ~ Dirichlet(ITEM_PRIOR_MASS / len(ITEM_GRID))``, and refits the weights, the effects held at
    the fit:

        w <- (sum_j g_j resp_w[j] + g_0 pi) / (sum_j g_j + g_0),   resp_w[j, g] ~ w_g L_j(g),

    ``ITEM_WEIGHT_STEPS`` EM steps from the fitted weights.

    This matters where a few items decide the grid (every correct answer on a handful of items):
    reweighting the items moves the items seen a few times, all wrong, together, and the prior
    puts weight where no observed item sits, so no draw is sure that such items' unobserved cells
    hold no correct answer.

    Example (an item seen right 3 times in 3 among items seen wrong: its point's weight varies):
        >>> cells = Cells(np.repeat(np.arange(3), 4), np.tile(np.arange(4), 3),
        ...               np.array([1., 0, 0, 0] * 3), 3, 4)
        >>> w = item_weight_draws(fit_crossed(cells), np.random.default_rng(0), 500)
        >>> bool(np.allclose(w.sum(axis=1), 1.0)), bool(w[:, ITEM_GRID > 0].sum(axis=1).std() > 0.05)
        (True, True)
    """
    likelihood = _item_likelihood(fit)
    points = ITEM_GRID.size
    scale = rng.standard_exponential((n_draws, likelihood.shape[0]))
    prior_scale = rng.gamma(ITEM_PRIOR_MASS, size=n_draws)
    prior = rng.gamma(ITEM_PRIOR_MASS / points, size=(n_draws, points))
    total = scale.sum(axis=1) + prior_scale
    scale /= total[:, None]
    prior = prior / np.maximum(prior.sum(axis=1, keepdims=True), 1e-300) * (prior_scale / total)[:, None]
    weights = fit.item_weights[None, :] * (1 - prior.sum(axis=1, keepdims=True)) + prior
    for _ in range(ITEM_WEIGHT_STEPS):
        resp = weights[:, None, :] * likelihood[None]  # draws x items x grid
        resp /= np.maximum(resp.sum(axis=2, keepdims=True), 1e-300)
        weights = np.einsum("dj,djg->dg", scale, resp) + prior
    return weights


def _item_likelihood(fit: CrossedFit) -> np.ndarray:
    """``L_j(g)`` of every item's observed cells at each grid point, each row scaled to a maximum of 1."""
    return np.exp(fit.item_loglik - fit.item_loglik.max(axis=1, keepdims=True))


def item_point_draws(fit: CrossedFit, rng: np.random.Generator, n_draws: int) -> np.ndarray:
    """As ``item_points``, with the item distribution's weights drawn too (``item_weight_draws``):
    every item's point from its posterior under the draw's weights, ``resp_w[j, g] ~ w_g L_j(g)``."""
    posterior = item_weight_draws(fit, rng, n_draws)[:, None, :] * _item_likelihood(fit)[None]  # draws x items x grid
    # (an item whose every point drew a weight of 0: its fitted posterior)
    return _categorical(np.where(posterior.sum(axis=2, keepdims=True) > 0, posterior, fit.item_posterior[None]), rng)


def predictive_grids(fit: CrossedFit, cells: Cells, n_draws: int, rng: np.random.Generator,
                     *, batch: int = 100) -> Iterator[np.ndarray]:
    """Draws of the whole grid, ``batch x n_rows x n_cols`` at a time (``n_draws`` in all): the
    observed cells as scored, every other cell a Bernoulli outcome drawn as the module doc says."""
    scores, observed = cells.matrices()
    m, n = scores.shape
    beta_draws, u_draws = effect_draws(fit, cells, n_draws, rng)
    for start in range(0, n_draws, batch):
        b = min(batch, n_draws - start)
        logits = beta_draws[start:start + b][:, fit.groups] + u_draws[start:start + b]  # draws x rows x classes
        points = item_point_draws(fit, rng, b)
        p = _sigmoid(logits[:, :, fit.classes] + ITEM_GRID[points][:, None, :])
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


def unobserved_variance(probabilities: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """``p_ij (1 - p_ij)`` of every unobserved cell, 0 where observed: what a cell would teach
    (``probabilities``: any fit's P(correct) per cell, the crossed model's or the label scores')."""
    return np.where(observed, 0.0, probabilities * (1 - probabilities))


def allocate_cells(variance: np.ndarray, n_new: int, *, frozen_rows: np.ndarray | None = None,
                   row_weights: np.ndarray | None = None) -> dict[int, list[int]]:
    """The next ``n_new`` cells to evaluate: where the unobserved outcomes are least certain.

    Instruction i gets a share of ``n_new`` proportional to ``w_i sqrt(sum_j v_ij)`` (Neyman
    allocation: the standard deviation of its unobserved cells' total, weighted by ``row_weights``,
    default 1), largest remainders first, and within it the items with the largest ``v_ij`` (ties by
    item position). ``frozen_rows`` (e.g. the fully evaluated methods) get none. Deterministic.

    Example (the second row's weight 4 outweighs its smaller variance):
        >>> v = np.array([[0.25, 0.0, 0.2, 0.01], [0.0, 0.01, 0.0, 0.0]])
        >>> allocate_cells(v, 2)
        {0: [0, 2]}
        >>> allocate_cells(v, 2, row_weights=np.array([1.0, 4.0]))
        {0: [0], 1: [1]}
    """
    v = np.where(variance > 0, variance, 0.0)
    if frozen_rows is not None:
        v[np.asarray(frozen_rows, dtype=bool)] = 0.0
    n_new = min(int(n_new), int(np.count_nonzero(v)))
    if n_new <= 0:
        return {}
    spread = np.sqrt(v.sum(axis=1))
    if row_weights is not None:
        spread = spread * np.asarray(row_weights, dtype=float)
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


@dataclass(frozen=True)
class ItemResponseGridFit:
    """:class:`~.protocol.GridFit` of the crossed model: ``crossed`` fitted to ``cells``."""

    name: ClassVar[str] = ESTIMATOR
    quantiles_from_draws: ClassVar[bool] = True  # every acc_i is pulled toward its method's (module doc)

    crossed: CrossedFit
    cells: Cells

    @property
    def s_instruction(self) -> float:
        return self.crossed.s_a

    @property
    def s_item(self) -> float:
        return self.crossed.s_item

    def probabilities(self) -> np.ndarray:
        return self.crossed.probabilities()

    def estimates(self) -> np.ndarray:
        return instruction_accuracy(self.crossed, self.cells)

    def draws(self, n_draws: int, rng: np.random.Generator) -> np.ndarray:
        return predictive_draws(self.crossed, self.cells, n_draws, rng)


class ItemResponseEstimator:
    """:class:`~.protocol.Estimator` of the crossed item-response model (module doc): fits any grid."""

    name: ClassVar[str] = ESTIMATOR

    def applies(self, cells: Cells) -> bool:
        return True

    def fit(self, cells: Cells) -> ItemResponseGridFit:
        return ItemResponseGridFit(fit_crossed(cells), cells)
