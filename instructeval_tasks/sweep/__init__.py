"""One-process sweeps: every (task, method, instruction, setting) variant for one model.

The names below load their module on first use, so that importing a light submodule (the
executor registry, the leaderboard map) does not import the whole sweep and the harness.

Example:
    >>> from instructeval_tasks.sweep import run_sweep, PROFILES
    >>> sorted(PROFILES)
    ['original', 'paper', 'quick']
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "SCORING_VERSION": "identity", "run_fingerprint": "identity",
    "RUN_LOCK": "lock", "STORE_LOCK": "lock", "OutputLocked": "lock", "RunLock": "lock", "shard_lock_name": "lock",
    "Variant": "plan", "build_plan": "plan",
    "PROFILES": "profiles", "SETTINGS": "profiles", "Profile": "profiles", "get_profile": "profiles",
    "SweepReport": "runner", "run_sweep": "runner", "SweepOptions": "sweep_options",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
