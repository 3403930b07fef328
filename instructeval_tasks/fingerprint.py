"""The content hash that names a protocol: sweeps, stock runs and induced banks record it and a
resume compares it.

Example:
    >>> fingerprint({"b": 1, "a": [1, 2]}) == fingerprint({"a": [1, 2], "b": 1})
    True
    >>> len(fingerprint({}))
    16
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

# Bump when a change of the plugin alters any score a sweep writes (a metric, a prompt, a
# tokenisation); results saved under another value are refused on resume, and the aggregation
# refuses to compare results of different values.
SCORING_VERSION = "1"

# The metadata key of every variant (and the sweep.json key) that holds the run fingerprint.
RUN_FINGERPRINT_KEY = "run_fingerprint"


def fingerprint(payload: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of ``payload`` (sorted keys, ``str`` for other types), first 16 hex digits."""
    canonical = json.dumps(payload, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
