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


def fingerprint(payload: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of ``payload`` (sorted keys, ``str`` for other types), first 16 hex digits."""
    canonical = json.dumps(payload, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
