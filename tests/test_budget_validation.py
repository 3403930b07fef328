"""The budget benchmark's reference estimator ``known-b`` (item effects known exactly)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from budget_validation import Scores, allocation_gain, coverage_misses, known_items_estimate, score_estimates  # noqa: E402


def test_every_cell_observed_gives_the_exact_accuracies():
    rng = np.random.default_rng(0)
    y = (rng.random((6, 20)) < 0.6).astype(float)
    assert np.allclose(known_items_estimate(y, [list(range(20))] * 6), y.mean(axis=1))


def test_a_grid_without_interactions_is_recovered_from_any_cells():
    # y_ij = d_j + r_i exactly (no instruction x item interaction): the unseen cells are known
    d = np.linspace(0.2, 0.6, 10)
    r = np.array([-0.1, 0.0, 0.15, 0.3])
    y = d[None, :] + r[None, :].T
    y = y - y.mean(axis=0) + d  # item means over instructions equal d, as the estimator takes them
    chosen = [[0, 3], [1, 2, 9], [5], [4, 8]]
    assert np.allclose(known_items_estimate(y, chosen), y.mean(axis=1))


def test_an_interaction_in_unseen_cells_is_its_error():
    y = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])  # pure interaction: every item mean is 0.5
    est = known_items_estimate(y, [[0], [0]])  # each instruction seen on item 0 only
    assert np.allclose(est, [(1 + 3 * 1.0) / 4, (0 + 3 * 0.0) / 4])  # shifted by the one residual: off by 0.5
    assert np.allclose(np.abs(est - y.mean(axis=1)), 0.5)


def test_coverage_misses_name_each_grid_and_interval_outside_90_to_97_percent():
    def scores(instr, method, quant):
        return Scores(1.0, 0.5, 0.5, 0.5, 1.0, instr, method, quant, 0.1)

    results = {(0.1, "uniform", "a", "model"): [scores(0.88, 0.95, 0.80), scores(0.88, 0.95, 0.92)],
               (0.1, "uniform", "b", "model"): [scores(0.95, 0.97, 0.90)],
               (0.1, "uniform", "c", "model"): [scores(1.0, 0.9, 0.95)]}
    assert coverage_misses(results, ["a", "b", "c", "d"]) == ["a instructions 88.0%, quantiles 86.0%", "c instructions 100.0%"]


def test_errors_and_coverages_leave_out_the_fully_evaluated_methods():
    truth = np.array([0.5, 0.6, 0.7, 0.8])  # null (exact: every item evaluated), three generic instructions
    values = np.array([0.5, 0.6, 0.7, 0.9])
    method_of = np.array([0, 1, 1, 1])
    draws = np.tile(values, (40, 1))  # intervals of width 0: the null one covers, the 0.9 one misses
    s = score_estimates(values, np.quantile(values, [0.05, 0.25, 0.5, 0.75, 0.95]), truth, method_of, [1],
                        share=0.5, draws=draws)
    assert np.isclose(s.instr_mae, 10 / 3) and np.isclose(s.method_mae, 10 / 3)  # not 2.5 and 1.67 with null
    assert np.isclose(s.coverage, 2 / 3) and s.method_coverage == 0.0  # not 3/4 and 1/2
    everything = score_estimates(values, np.quantile(values, [0.05, 0.25, 0.5, 0.75, 0.95]), truth, method_of, [0, 1],
                                 share=0.5, draws=draws)
    assert np.isclose(everything.instr_mae, 2.5) and np.isclose(everything.method_coverage, 0.5)


def test_the_allocation_gain_is_one_when_every_item_varies_alike_and_grows_with_decided_items():
    rng = np.random.default_rng(0)
    even = (rng.random((40, 100)) < 0.5).astype(float)
    assert allocation_gain(even) == pytest.approx(1.0, abs=0.02)
    decided = even.copy()
    decided[:, :75] = 1.0  # three items in four answered right by every instruction
    assert allocation_gain(decided) == pytest.approx(4.0, rel=0.05)
