"""One-process sweeps: every (task, method, instruction, setting) variant for one model.

Example:
    >>> from instructeval_tasks.sweep import run_sweep, PROFILES
    >>> sorted(PROFILES)
    ['original', 'paper', 'quick']
"""

from .identity import SCORING_VERSION, run_fingerprint
from .lock import RUN_LOCK, STORE_LOCK, OutputLocked, RunLock, shard_lock_name
from .plan import Variant, build_plan
from .profiles import PROFILES, SETTINGS, Profile, get_profile
from .runner import SweepReport, run_sweep

__all__ = [
    "PROFILES", "RUN_LOCK", "SCORING_VERSION", "SETTINGS", "STORE_LOCK", "OutputLocked", "Profile", "RunLock",
    "SweepReport", "Variant", "build_plan", "get_profile", "run_fingerprint", "run_sweep", "shard_lock_name",
]
