"""The choice-score estimator of a budgeted classification grid (instructeval_tasks.estimation.choice_scores)."""

from __future__ import annotations

import numpy as np

from instructeval_tasks.estimation.choice_scores import (centred, choice_score_accuracy, choice_score_draws, fit_choice_scores,
                                              fit_scores, gold_margins, held_out_margins, share_totals,
                                              spread_draws)


def _grid(seed: int, m: int = 12, n: int = 60, k: int = 3, noise: float = 0.3):
    rng = np.random.default_rng(seed)
    gold = np.arange(n) % k
    lean = rng.normal(0, 1, (n, k)) + 0.8 * (np.arange(k)[None] == gold[:, None])
    scale = 1 + rng.normal(0, 0.2, m)
    z = scale[:, None, None] * lean[None] + rng.normal(0, 0.8, (m, k))[:, None] + rng.normal(0, noise, (m, n, k))
    return z, gold, (z.argmax(-1) == gold[None]).astype(float)


def _observed(seed: int, shape: tuple[int, int], share: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    observed = rng.random(shape) < share
    observed[0] = True  # a fully observed "null" instruction, as the default budget has
    return observed


def test_gold_margins_are_the_gold_score_minus_the_best_other():
    predicted = np.array([[[2.0, 0.5, 1.0], [0.0, 3.0, -1.0]]])  # one instruction, two items
    assert gold_margins(predicted, np.array([0, 2])).tolist() == [[1.0, -4.0]]


def test_centring_leaves_the_answer_and_removes_what_all_labels_share():
    z = np.array([[[1.0, 2.0, 6.0]]])
    assert centred(z).tolist() == [[[-2.0, -1.0, 3.0]]]
    assert centred(z + 5).tolist() == centred(z).tolist()


def test_the_score_stage_predicts_unseen_cells_of_an_exact_model():
    z, _, _ = _grid(0, noise=0.0)
    observed = _observed(1, z.shape[:2], 0.3)
    predicted = fit_scores(centred(z), observed, np.zeros(z.shape[0], dtype=int))
    error = np.abs(predicted - centred(z))[~observed].mean()
    spread = np.abs(centred(z)).mean()
    assert error < 0.15 * spread  # the ridge penalty aside, the unseen scores are recovered (0.09 here)


def test_a_full_grid_gives_back_its_exact_accuracies():
    z, gold, y = _grid(2)
    observed = np.ones(y.shape, dtype=bool)
    fit = fit_choice_scores(z, observed, y, gold, np.zeros(y.shape[0], dtype=int))
    assert np.allclose(choice_score_accuracy(fit, observed, y), y.mean(axis=1))
    draws = choice_score_draws(fit, observed, y, 20, np.random.default_rng(0))
    assert np.allclose(draws, y.mean(axis=1)[None])


def test_the_estimates_track_the_instructions_and_the_draws_cover_them():
    errors, inside = [], []
    for seed in range(4):
        z, gold, y = _grid(10 + seed)
        observed = _observed(20 + seed, y.shape, 0.2)
        groups = np.array([0] + [1] * 5 + [2] * 6)
        fit = fit_choice_scores(z, observed, y, gold, groups)
        point = choice_score_accuracy(fit, observed, y)
        subset = np.array([y[i, observed[i]].mean() for i in range(y.shape[0])])
        errors.append((np.abs(point - y.mean(1))[1:].mean(), np.abs(subset - y.mean(1))[1:].mean()))
        draws = choice_score_draws(fit, observed, y, 200, np.random.default_rng(seed))
        lo, hi = np.quantile(draws, [0.025, 0.975], axis=0)
        inside += list(((lo <= y.mean(1)) & (y.mean(1) <= hi))[1:])
    model, subset = np.mean(errors, axis=0)
    assert model < 0.6 * subset  # closer than each instruction's own observed cells
    assert 0.85 <= np.mean(inside) <= 1.0


def test_draws_are_seeded():
    z, gold, y = _grid(3)
    observed = _observed(4, y.shape, 0.25)
    fit = fit_choice_scores(z, observed, y, gold, np.zeros(y.shape[0], dtype=int))
    one = choice_score_draws(fit, observed, y, 30, np.random.default_rng(7))
    assert np.array_equal(one, choice_score_draws(fit, observed, y, 30, np.random.default_rng(7)))
    assert np.allclose(one[:, 0], y[0].mean())  # a fully observed instruction is exact in every draw


def test_the_reported_sds_are_those_the_mode_and_its_hessian_were_fitted_under(monkeypatch):
    import instructeval_tasks.estimation.choice_scores as choice_scores

    z, gold, y = _grid(5)
    observed = _observed(6, y.shape, 0.3)
    groups = np.zeros(y.shape[0], dtype=int)
    monkeypatch.setattr(choice_scores, "EM_ROUNDS", 1)  # one fit: under the starting SDs, however far from the EM's
    one = fit_choice_scores(z, observed, y, gold, groups)
    assert (one.s_u, one.s_v) == (choice_scores.START_SD, choice_scores.START_SD)
    monkeypatch.setattr(choice_scores, "EM_ROUNDS", 30)
    converged = fit_choice_scores(z, observed, y, gold, groups)
    assert abs(converged.s_u - choice_scores.START_SD) > 0.05  # the EM moved them: the check above can tell
    u = converged.design.u_at
    prior = converged.hessian[u, u] - choice_scores._Calibration.hessian(
        converged.design, *np.nonzero(observed), converged.margins[observed],
        (lambda p: p * (1 - p))(converged.probabilities[observed]))[u, u] + converged.design.precision[u]
    assert np.isclose(prior, converged.s_u ** -2)


def test_held_out_margins_are_each_cells_margin_from_a_fit_without_it():
    z, gold, _ = _grid(2)
    observed = _observed(3, z.shape[:2], 0.3)
    groups = np.zeros(z.shape[0], dtype=int)
    c = centred(z)
    held = held_out_margins(c, observed, groups, gold, int(observed.sum()))  # one cell per fold: leave one out
    for i, j in np.argwhere(observed)[[0, 7, 100]]:
        seen = observed.copy()
        seen[i, j] = False
        assert np.isclose(held[i, j], gold_margins(fit_scores(c, seen, groups), gold)[i, j])
    assert np.isnan(held[~observed]).all() and np.isfinite(held[observed]).all()
    scored = gold_margins(c, gold)
    fitted = gold_margins(fit_scores(c, observed, groups), gold)
    # the fitted margins were fitted to these very scores; held out, they are as far off as an unseen cell's
    assert np.abs(held - scored)[observed].mean() > 1.2 * np.abs(fitted - scored)[observed].mean()


def test_a_calibration_on_held_out_margins_trusts_them_less():
    z, gold, y = _grid(4)
    observed = _observed(5, z.shape[:2], 0.2)
    groups = np.zeros(z.shape[0], dtype=int)
    fitted = fit_choice_scores(z, observed, y, gold, groups)
    held = fit_choice_scores(z, observed, y, gold, groups, held_out_folds=10)
    gamma = fitted.design.na  # theta[na] is the (one) method's slope on the margins
    assert held.theta[gamma] < fitted.theta[gamma]
    assert np.array_equal(held.margins, fitted.margins)  # the unobserved cells' margins are the same prediction


def test_spread_draws_take_the_held_out_calibrations_spread_centred_on_the_estimates():
    z, gold, y = _grid(7, noise=0.6)
    m, n = y.shape
    observed = _observed(8, (m, n), 0.2)  # instruction 0 observed on every item
    groups = np.zeros(m, dtype=int)
    point = choice_score_accuracy(fit_choice_scores(z, observed, y, gold, groups), observed, y)
    draws = spread_draws(z, observed, y, gold, groups, 400, np.random.default_rng(0))
    assert draws.shape == (400, m)
    assert np.allclose(draws * n, np.round(draws * n))  # counts of correct cells, as every draw of a grid is
    floor = np.where(observed, y, 0).sum(axis=1) / n
    assert (draws >= floor - 1e-12).all() and (draws <= floor + (~observed).sum(axis=1) / n + 1e-12).all()
    assert (draws[:, 0] == y[0].mean()).all()  # observed on every item: its one value
    assert np.abs(draws.mean(axis=0) - point).max() < 2.5 / n  # centred on the estimates, to a cell or so
    # the fitted margins' calibration draws the grid's mean narrower than the held-out one
    plain = choice_score_draws(fit_choice_scores(z, observed, y, gold, groups), observed, y, 400, np.random.default_rng(0))
    assert draws.mean(axis=1).std() > plain.mean(axis=1).std()


def test_spread_draws_take_each_methods_total_from_the_held_out_calibration_and_its_sharing_from_the_fitted_one():
    z, gold, y = _grid(8, m=13, noise=0.6)
    m, n = y.shape
    observed = _observed(9, (m, n), 0.2)
    groups = np.array([0] + [1] * 6 + [2] * 6)
    fitted = fit_choice_scores(z, observed, y, gold, groups)
    draws = spread_draws(z, observed, y, gold, groups, 400, np.random.default_rng(0), fitted=fitted)
    # the held-out calibration's draws come first from the same stream
    held = choice_score_draws(fit_choice_scores(z, observed, y, gold, groups, held_out_folds=10), observed, y, 400,
                              np.random.default_rng(0))
    floor = np.where(observed, y, 0).sum(axis=1) / n
    assert (draws >= floor - 1e-12).all() and (draws <= floor + (~observed).sum(axis=1) / n + 1e-12).all()
    for group in (1, 2):
        rows = groups == group
        moved = draws[:, rows].sum(axis=1) - held[:, rows].sum(axis=1)  # the estimates' shift, the same in every draw
        assert np.allclose(moved, moved[0])
        assert np.isclose(draws[:, rows].mean(axis=1).std(), held[:, rows].mean(axis=1).std())
        # an instruction about its method's mean: narrower than the held-out calibration's (0.042 vs 0.050 here)
        within = lambda d: (d[:, rows] - d[:, rows].mean(axis=1, keepdims=True)).std(axis=0).mean()  # noqa: E731
        assert within(draws) < 0.9 * within(held)


def test_share_totals_keeps_each_total_and_every_bound():
    rng = np.random.default_rng(3)
    low, high = np.array([0.0, 2.0, 1.0, 0.0]), np.array([3.0, 9.0, 4.0, 1.0])
    pattern = rng.normal(2, 2, (200, 4))
    totals = rng.integers(3, 17, 200).astype(float)
    shared = share_totals(totals, pattern, low, high)
    assert np.array_equal(shared.sum(axis=1), totals) and np.array_equal(shared, np.round(shared))
    assert (shared >= low).all() and (shared <= high).all()
    # no bound in the way: the pattern moved by one amount, up to rounding
    free = share_totals(np.array([10.0]), np.array([[1.0, 2.0, 3.0]]), np.zeros(3), np.full(3, 10.0))
    assert free.sum() == 10 and (np.abs(free - (np.array([1.0, 2.0, 3.0]) + 4 / 3)) < 1).all()
