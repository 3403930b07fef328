"""Step 4 of ``mild_mix``: resize every run of spaces (HELM ``SpacePerturbation``).

Port of HELM ``src/helm/benchmark/augmentations/space_perturbation.py``
(Stanford CRFM, Apache-2.0).
"""

from __future__ import annotations

import random
import re

__all__ = ["space"]

_SPACE_RUN = re.compile(r" +")


def space(text: str, rng: random.Random, max_spaces: int = 3) -> str:
    """Replace each run of one or more ``" "`` by ``rng.randint(1, max_spaces)`` spaces.

    One ``randint`` per run, left to right. Only the ASCII space is touched;
    newlines and tabs are kept. HELM's class docstring says "0-max_spaces",
    but its code draws from ``1..max_spaces``, so words are never merged;
    this port follows the code.

    HELM's unit-test fixture (``max_spaces=3``, ``Random("id0")``):

    >>> space("Hello World!\\nQuite a day, huh?", random.Random("id0"))
    'Hello   World!\\nQuite a  day,   huh?'
    """
    return _SPACE_RUN.sub(lambda _run: " " * rng.randint(1, max_spaces), text)
