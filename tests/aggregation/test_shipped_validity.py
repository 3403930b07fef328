"""The shipped budget validation table, as the reports read it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from instructeval_aggregation import budget_validity
from instructeval_aggregation.draw_statistics import STATISTICS

from test_budget_statistics import _effects, _grid, _mask, _write_grid


@pytest.fixture
def shipped(monkeypatch):
    monkeypatch.delenv(budget_validity.TABLE_ENV, raising=False)
    return json.loads(budget_validity.TABLE_PATH.read_text(encoding="utf-8"))


def test_the_shipped_table_covers_every_statistic_design_and_budget_it_names(shipped):
    assert shipped["measured_at"] and shipped["rule"] == budget_validity.RULE
    table = shipped["resolved"]
    assert set(table) == {"item-response", "choice scores"}
    for estimator, designs in table.items():
        assert set(designs) >= {"uniform", "balanced", "adaptive"}
        for design, budgets in designs.items():
            assert {float(b) for b in budgets} >= {0.05, 0.1, 0.25}
            for budget, statistics in budgets.items():
                assert set(statistics) >= {*STATISTICS, "instruction"}
                for name, entry in statistics.items():  # what a report decides is what the table says
                    assert budget_validity.resolution(name, estimator, design, float(budget), 100).resolved == entry["resolved"]


def test_below_the_smallest_validated_budget_nothing_is_printed(shipped, tmp_path):
    rng = np.random.default_rng(1)
    grid = _grid(rng, [0.0] + list(rng.normal(0, 0.8, 20)), 200)
    _write_grid(tmp_path, "m", "hellaswag", grid, _mask(rng, grid.shape, 0.02), fraction=0.02)
    out, _ = _effects(tmp_path, n_power=0)
    row = out.effects.iloc[0]
    assert all(np.isnan(row[name]) for name in ("min", "median", "max", "stock_percentile"))
    assert "not resolved at --budget 0.02" in row["not_resolved"]
    assert out.scores.set_index("instruction")["score"].drop("null").isna().all()
