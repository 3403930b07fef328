"""One interface for the budgeted grids' estimators (``instructeval_tasks.estimation``): the registry
picks a grid's estimator by what its cells carry, under the name the results record, and every
estimator gives the models' own estimates and draws (the models: tests/test_item_response.py,
tests/test_choice_scores.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from instructeval_tasks.estimation import (CHOICE_SCORES, ESTIMATORS, ITEM_RESPONSE, Cells, ChoiceGrid, Estimator,
                                           GridFit, estimator_for)
from instructeval_tasks.estimation.choice_scores import choice_score_accuracy, fit_choice_scores, spread_draws
from instructeval_tasks.estimation.item_response import fit_crossed, instruction_accuracy, predictive_draws


def _grid(seed: int = 0, m: int = 6, n: int = 24, share: float = 0.5) -> tuple[Cells, np.ndarray, np.ndarray]:
    """A two-label grid's observed cells, with every cell's label scores: ``(cells, z, y)``."""
    rng = np.random.default_rng(seed)
    gold = np.arange(n) % 2
    lean = rng.normal(0.8, 1.0, n)
    z = np.zeros((m, n, 2))
    z[:, :, 0] = np.where(gold == 0, lean, -lean)[None, :] + rng.normal(0, 0.6, (m, 1)) + rng.normal(0, 0.4, (m, n))
    y = (z.argmax(-1) == gold[None]).astype(float)
    observed = rng.random((m, n)) < share
    observed[:, 0] = observed[0] = True
    rows, cols = np.nonzero(observed)
    cells = Cells(rows, cols, y[rows, cols], m, n, np.array([0, 0, 0, 1, 1, 1]), gold)
    return cells, np.where(observed[..., None], z, np.nan), y


def test_the_registry_holds_each_estimator_under_the_name_the_results_record():
    assert list(ESTIMATORS) == [CHOICE_SCORES, ITEM_RESPONSE] == ["choice scores", "item-response"]
    for name, estimator in ESTIMATORS.items():
        assert isinstance(estimator, Estimator) and estimator.name == name


def test_a_grid_is_estimated_from_its_label_scores_where_its_cells_carry_them():
    cells, z, _ = _grid()
    assert estimator_for(cells).name == ITEM_RESPONSE
    scored = dataclasses.replace(cells, label_scores=ChoiceGrid(z, cells.classes, (" a", " b")))
    assert estimator_for(scored).name == CHOICE_SCORES
    with pytest.raises(ValueError, match="needs the cells' label scores"):
        ESTIMATORS[CHOICE_SCORES].fit(cells)


def test_each_fit_gives_its_model_s_estimates_and_draws():
    cells, z, _ = _grid(1)
    y, observed = cells.matrices()
    crossed = fit_crossed(cells)
    fit = ESTIMATORS[ITEM_RESPONSE].fit(cells)
    assert isinstance(fit, GridFit) and fit.name == ITEM_RESPONSE and fit.quantiles_from_draws
    assert np.array_equal(fit.estimates(), instruction_accuracy(crossed, cells))
    assert np.array_equal(fit.probabilities(), crossed.probabilities())
    assert (fit.s_instruction, fit.s_item) == (crossed.s_a, crossed.s_item)
    assert np.array_equal(fit.draws(30, np.random.default_rng(5)), predictive_draws(crossed, cells, 30, np.random.default_rng(5)))

    grid = ChoiceGrid(z, cells.classes, (" a", " b"))
    labelled = ESTIMATORS[CHOICE_SCORES].fit(dataclasses.replace(cells, label_scores=grid))
    direct = fit_choice_scores(z, observed, y, grid.gold, cells.group_index())
    assert isinstance(labelled, GridFit) and labelled.name == CHOICE_SCORES and not labelled.quantiles_from_draws
    assert np.array_equal(labelled.estimates(), choice_score_accuracy(direct, observed, y))
    assert np.array_equal(labelled.probabilities(), direct.probabilities)
    assert (labelled.s_instruction, labelled.s_item) == (direct.s_u, direct.s_v)
    assert np.array_equal(labelled.draws(20, np.random.default_rng(5)),
                          spread_draws(z, observed, y, grid.gold, cells.group_index(), 20, np.random.default_rng(5),
                                       fitted=direct))


@pytest.mark.parametrize("name", [ITEM_RESPONSE, CHOICE_SCORES])
def test_a_full_grid_gives_back_its_exact_accuracies(name):
    cells, z, y = _grid(2, share=1.1)  # every cell observed
    full = dataclasses.replace(cells, label_scores=ChoiceGrid(z, cells.classes, (" a", " b")))
    fit = ESTIMATORS[name].fit(full)
    assert np.allclose(fit.estimates(), y.mean(axis=1))
    draws = fit.draws(10, np.random.default_rng(0))
    assert draws.shape == (10, cells.n_rows) and np.allclose(draws, y.mean(axis=1))
