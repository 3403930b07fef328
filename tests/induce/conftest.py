"""Fixtures of the induce tests: one harness model over the tiny offline GPT-2, loaded once."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

POISON = "POISON-EVAL-ROW"


def poisoned(row: dict, number: int = 0) -> dict:
    """The same fields, every string (and every string in a list) replaced by a poison value, distinct
    per row ``number`` (an eval file may not repeat an item)."""
    out = {}
    for key, value in row.items():
        if isinstance(value, str):
            out[key] = f"{POISON} {key} row {number}"
        elif isinstance(value, list):
            out[key] = [f"{POISON} {key} {i} row {number}" if isinstance(v, str) else v for i, v in enumerate(value)]
        else:
            out[key] = value
    return out


@pytest.fixture(scope="session")
def poisoned_data(tmp_path_factory, tiny_rows) -> SimpleNamespace:
    """The tiny data with every EVAL row poisoned (``dir``), and the poison (``marker``): a request
    that contains the marker read the evaluation split."""
    data = tmp_path_factory.mktemp("poisoned_data")
    for local, splits in tiny_rows.items():
        (data / local).mkdir(parents=True)
        for split, rows in splits.items():
            rows = [poisoned(r, n) for n, r in enumerate(rows)] if split == "eval" else rows
            (data / local / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return SimpleNamespace(dir=data, marker=POISON)


@pytest.fixture(scope="session")
def tiny_model_args(tiny_model_dir: Path) -> str:
    return f"pretrained={tiny_model_dir},dtype=float32"


@pytest.fixture(scope="session")
def tiny_lm(tiny_model_args: str):
    """The harness ``hf`` model of ``tiny_model_dir`` on CPU (batch 64: few forward calls)."""
    from instructeval_tasks.sweep.chunk import load_model

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
