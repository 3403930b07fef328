"""Seeded sampling of a method's instructions (the paper evaluates 5 per method).

``sample_entries(entries, n, seed)`` draws ``n`` entries of one (method, task) bank with
``random.Random(f"instructeval-bank:{method}:{task}:{seed}")``:

* ``n >= len(entries)``: all entries, in bank order (nothing is drawn);
* otherwise ``rng.sample(range(len(entries)), n)``, returned **in bank order** (sorted positions).

The generator is keyed by the method and the task, so adding, removing or resizing another
method's bank never changes which entries a method gets, and Python's string seeding (SHA-512 of
the key) makes the draw identical across processes and platforms. The model is not part of the key:
for a model-specific bank the same positions are drawn for every model of the same size.

``sample_record`` returns what a results file should record about the draw (ids included).

Example:
    >>> from instructeval_banks import load_bank
    >>> entries = load_bank().entries("generic", "agnews")
    >>> [e.id for e in sample_entries(entries, 5, seed=0)] == [e.id for e in entries]
    True
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from .schema import BankEntry, BankError

RNG_KEY = "instructeval-bank:{method}:{task}:{seed}"


def _method_task(entries: Sequence[BankEntry]) -> tuple[str, str]:
    if not entries:
        raise BankError("sample_entries: no entries to sample from")
    pairs = {(e.method, e.task) for e in entries}
    if len(pairs) != 1:
        raise BankError(
            f"sample_entries: entries of one (method, task) bank expected, got {sorted(pairs)}"
        )
    return next(iter(pairs))


def rng_key(method: str, task: str, seed: int) -> str:
    """The string that seeds the draw of (method, task, seed)."""
    return RNG_KEY.format(method=method, task=task, seed=seed)


def sample_entries(entries: Sequence[BankEntry], n: int, seed: int) -> list[BankEntry]:
    """``n`` entries of one (method, task) bank drawn with ``seed``, in bank order (see module doc)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise BankError(f"sample_entries: n must be a positive integer, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise BankError(f"sample_entries: seed must be an integer, got {seed!r}")
    method, task = _method_task(entries)
    if n >= len(entries):
        return list(entries)
    rng = random.Random(rng_key(method, task, seed))
    positions = sorted(rng.sample(range(len(entries)), n))
    return [entries[p] for p in positions]


def sample_record(entries: Sequence[BankEntry], n: int, seed: int) -> dict[str, Any]:
    """The draw of ``sample_entries`` as a JSON-ready record: key, sizes, positions and ids."""
    chosen = sample_entries(entries, n, seed)
    method, task = _method_task(entries)
    models = sorted({e.model for e in entries if e.model})
    position = {id(e): i for i, e in enumerate(entries)}
    return {
        "method": method,
        "task": task,
        "model": models[0] if len(models) == 1 else None,
        "instructions_per_method": n,
        "instruction_seed": seed,
        "rng_key": rng_key(method, task, seed),
        "bank_size": len(entries),
        "positions": [position[id(e)] for e in chosen],
        "ids": [e.id for e in chosen],
    }
