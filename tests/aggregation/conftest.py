"""Fixtures of the aggregation tests."""

from __future__ import annotations

from typing import Callable

import pytest

from instructeval_aggregation import budget_validity
from instructeval_aggregation.draw_statistics import STATISTICS

STATISTIC_NAMES = (*STATISTICS, "instruction", "instruction_sd")


def validity_table(resolved: Callable[[str, str, float], bool]) -> dict:
    """A ``budget_validity.json`` ``resolved`` table for both estimators and every design at 5, 10
    and 25%: ``resolved(statistic, design, budget)`` says where a statistic is resolved."""
    return {estimator: {design: {str(b): {s: {"resolved": resolved(s, design, b)} for s in STATISTIC_NAMES}
                                 for b in (0.05, 0.1, 0.25)}
                        for design in ("uniform", "balanced", "adaptive")}
            for estimator in ("item-response", "choice scores")}


@pytest.fixture
def validated(monkeypatch) -> Callable[[Callable[[str, str, float], bool]], dict]:
    """Install a validity table (``validity_table``) in place of the shipped one; by default every
    statistic is resolved everywhere (the tests of what a resolved report prints)."""

    def install(resolved: Callable[[str, str, float], bool] = lambda s, d, b: True) -> dict:
        table = validity_table(resolved)
        monkeypatch.setattr(budget_validity, "_shipped", lambda: table)
        return table

    install()
    return install
