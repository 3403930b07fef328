"""Fixtures of the aggregation tests."""

from __future__ import annotations

import json
from typing import Callable

import pytest

from instructeval_aggregation.budget_validity import TABLE_ENV, table_of


@pytest.fixture
def validated(monkeypatch, tmp_path) -> Callable[[Callable[[str, str, float], bool]], dict]:
    """Install a validity table (``budget_validity.table_of``) in place of the shipped one, through
    ``$INSTRUCTEVAL_BUDGET_VALIDITY``; by default every statistic is resolved everywhere."""

    def install(resolved: Callable[[str, str, float], bool] = lambda s, d, b: True) -> dict:
        table = table_of(resolved)
        path = tmp_path / f"validity_{len(list(tmp_path.glob('validity_*')))}.json"
        path.write_text(json.dumps(table))
        monkeypatch.setenv(TABLE_ENV, str(path))
        return table["resolved"]

    install()
    return install
