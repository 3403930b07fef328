"""Fixtures of the induce tests: one harness model over the tiny offline GPT-2, loaded once."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model_args(tiny_model_dir: Path) -> str:
    return f"pretrained={tiny_model_dir},dtype=float32"


@pytest.fixture(scope="session")
def tiny_lm(tiny_model_args: str):
    """The harness ``hf`` model of ``tiny_model_dir`` on CPU (batch 64: few forward calls)."""
    from instructeval_tasks.sweep.runner import load_model

    return load_model("hf", tiny_model_args, batch_size=64, max_batch_size=None, device="cpu")


@pytest.fixture
def recorded(tiny_lm, monkeypatch):
    """Every request string the tiny model receives during a test: ``[(request_type, args), ...]``."""
    seen: list[tuple[str, tuple]] = []
    for name in ("loglikelihood", "loglikelihood_rolling", "generate_until"):
        original = getattr(tiny_lm, name)

        def wrapper(requests, *args, _name=name, _original=original, **kwargs):
            seen.extend((_name, tuple(r.args)) for r in requests)
            return _original(requests, *args, **kwargs)

        monkeypatch.setattr(tiny_lm, name, wrapper)
    return seen
