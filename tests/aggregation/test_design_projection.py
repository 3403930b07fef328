"""The design projection: moment components, the random-effects F power, and the smallest resolving design."""

from __future__ import annotations

import numpy as np
import pytest

from instructeval_aggregation.design_projection import components, detectable, power, project


def test_components_recover_a_simulated_grids_instruction_and_residual_variance():
    rng = np.random.default_rng(0)
    m, n, tau, sigma = 40, 400, 0.05, 0.3
    Y = rng.normal(0.6, 0.1, n)[None, :] + rng.normal(0, tau, m)[:, None] + rng.normal(0, sigma, (m, n))
    c = components(Y, 0)
    assert c.instruction == pytest.approx(tau**2, rel=0.5) and c.residual == pytest.approx(sigma**2, rel=0.05)


@pytest.mark.parametrize("m, n", [(3, 40), (8, 200), (30, 1000)])
def test_the_detectable_sd_is_where_the_power_reaches_80_percent(m, n):
    d = detectable(m, n, 0.2)
    assert power(m, n, 0.2, d / 100) == pytest.approx(0.8, abs=1e-6)
    assert power(m, n, 0.2, 0.0) == pytest.approx(0.05, abs=1e-9)  # no effect: the test's level


def test_the_random_effects_power_matches_simulated_normal_grids():
    rng = np.random.default_rng(1)
    m, n, tau, sigma = 6, 60, 0.06, 0.4
    from scipy.stats import f

    crit, hits = f.ppf(0.95, m - 1, (m - 1) * (n - 1)), 0
    for _ in range(2000):
        Y = rng.normal(0, tau, m)[:, None] + rng.normal(0, sigma, (m, n))
        resid = Y - Y.mean(1, keepdims=True) - Y.mean(0, keepdims=True) + Y.mean()
        F = n * Y.mean(1).var(ddof=1) / (np.sum(resid**2) / ((m - 1) * (n - 1)))
        hits += F > crit
    assert hits / 2000 == pytest.approx(power(m, n, sigma**2, tau), abs=0.03)


def test_the_projection_looks_beyond_the_runs_design_and_costs_it():
    rng = np.random.default_rng(2)
    item = rng.normal(0, 1.0, 100)
    Y = (rng.random((3, 100)) < 1 / (1 + np.exp(-item))).astype(float)
    p = project(Y, 0, seconds_per_cell=0.5)
    assert p.instructions > 3 and p.rows >= 100 and p.detectable_sd <= p.stock_se
    assert detectable(p.instructions - 1, p.rows, components(Y, 0).residual) > p.stock_se or p.instructions == 4
    assert p.seconds == pytest.approx(p.instructions * p.rows * 0.5)
    assert p.text().startswith(f"resolving needs about {p.instructions} instructions x {p.rows} rows (about ")


def test_the_projection_starts_from_the_runs_own_detectable_sd():
    rng = np.random.default_rng(3)
    item = rng.normal(0, 1.0, 120)
    Y = (rng.random((5, 120)) < 1 / (1 + np.exp(-item))).astype(float)
    res = components(Y, 0).residual
    plain, anchored = project(Y, 0), project(Y, 0, anchor=1.5 * detectable(5, 120, res))
    assert anchored.instructions > plain.instructions  # a run that detects less than the F model needs more
    scale = 1.5
    assert anchored.detectable_sd == pytest.approx(scale * detectable(anchored.instructions, anchored.rows, res))
