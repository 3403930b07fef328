"""One-process sweeps: every (task, method, instruction, setting) variant for one model.

Example:
    >>> from instructeval_tasks.sweep import run_sweep, PROFILES
    >>> sorted(PROFILES)
    ['original', 'paper', 'quick']
"""

from .plan import Variant, build_plan
from .profiles import PROFILES, SETTINGS, Profile, get_profile
from .runner import SweepReport, run_sweep

__all__ = ["PROFILES", "SETTINGS", "Profile", "SweepReport", "Variant", "build_plan", "get_profile", "run_sweep"]
