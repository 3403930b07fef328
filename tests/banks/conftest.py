"""Fixtures of the bank tests: the original InstructEval banks in ``../shared`` (skip when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = REPO.parent / "shared" / "reference" / "upstream_banks"


@pytest.fixture(scope="session")
def upstream_dir() -> Path:
    """``../shared/reference/upstream_banks`` (the original ``instructions/`` folder), or skip."""
    if not UPSTREAM.is_dir():
        pytest.skip(f"original InstructEval banks not found at {UPSTREAM}")
    return UPSTREAM
