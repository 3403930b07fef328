"""The instruction-type breakdown of a fully scored harness grid (``harness_methods``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from instructeval_aggregation.harness_methods import method_rows


def test_each_method_is_its_instructions_mean_paired_with_the_stock_row_on_the_items():
    rng = np.random.default_rng(0)
    Y = (rng.random((5, 80)) < np.array([[0.5], [0.6], [0.7], [0.4], [0.5]])).astype(float)
    methods = ["null", "generic", "generic", "adhoc", "promptsource"]
    rows = {r["method"]: r for r in method_rows(Y, methods, level=0.95)}
    assert sorted(rows) == ["adhoc", "generic", "promptsource"]
    g = rows["generic"]
    per_item = Y[1:3].mean(axis=0)
    d = per_item - Y[0]
    se = np.std(d, ddof=1) / math.sqrt(80)
    assert g["n_instructions"] == 2 and g["n_items"] == 80
    assert g["score"] == pytest.approx(per_item.mean()) and g["vs_stock"] == pytest.approx(d.mean())
    assert (g["vs_stock_low"], g["vs_stock_high"]) == pytest.approx((d.mean() - 1.959964 * se, d.mean() + 1.959964 * se))
    assert g["detectable_difference"] == pytest.approx((1.959964 + 0.841621) * se, rel=1e-5)


def test_a_grid_with_an_unscored_cell_or_no_stock_row_has_no_breakdown():
    Y = np.ones((3, 10))
    Y[1, 4] = np.nan
    assert method_rows(Y, ["null", "generic", "generic"], level=0.95) == []
    assert method_rows(np.ones((2, 10)), ["generic", "adhoc"], level=0.95) == []
