"""One-process sweeps: every (task, method, instruction, setting) variant for one model.

The names below load their module on first use (``instructeval_tasks.lazy``), so that importing a
light submodule (the executor registry, the leaderboard map) does not import the whole sweep and
the harness.

Example:
    >>> from instructeval_tasks.sweep import run_sweep, PROFILES
    >>> sorted(PROFILES)
    ['original', 'paper', 'quick']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:  # read on first use (``instructeval_tasks.lazy``)
    from .identity import SCORING_VERSION, run_fingerprint
    from .lock import RUN_LOCK, STORE_LOCK, OutputLocked, RunLock, shard_lock_name
    from .plan import Variant, build_plan
    from .profiles import PROFILES, SETTINGS, Profile, get_profile
    from .runner import SweepReport, run_sweep
    from .sweep_options import SweepOptions

__all__ = ["PROFILES", "RUN_LOCK", "SCORING_VERSION", "SETTINGS", "STORE_LOCK", "OutputLocked", "Profile", "RunLock",
           "SweepOptions", "SweepReport", "Variant", "build_plan", "get_profile", "run_fingerprint", "run_sweep",
           "shard_lock_name"]

__getattr__, __dir__ = lazy_exports(__name__)
