"""HELM's canonical robustness perturbation, ``mild_mix`` (``MildMixPerturbation``).

Port of HELM ``src/helm/benchmark/augmentations/mild_mix_perturbation.py``
(Stanford CRFM, Apache-2.0), the perturbation InstructEval's "perturbation
accuracy" applies (it imported it from ``crfm-helm==0.2.2``; 0.2.2 and 0.5.16
give identical outputs).
"""

from __future__ import annotations

import random
from typing import Final

from .contraction import contract
from .lowercase import lowercase
from .misspelling import misspell
from .space import space

__all__ = ["MILD_MIX_MAX_SPACES", "MILD_MIX_MISSPELLING_PROB", "mild_mix"]

MILD_MIX_MISSPELLING_PROB: Final[float] = 0.1
MILD_MIX_MAX_SPACES: Final[int] = 3


def mild_mix(text: str, rng: random.Random) -> str:
    """Apply HELM's ``mild_mix`` to ``text``, drawing all randomness from ``rng``.

    The four steps, in HELM's order, all sharing the one ``rng``:

    1. ``lowercase`` -- no randomness;
    2. ``contract`` -- no randomness;
    3. ``misspell`` with ``prob=0.1`` -- one ``random()`` per dictionary match,
       one ``choice()`` per hit;
    4. ``space`` with ``max_spaces=3`` -- one ``randint(1, 3)`` per space run.

    Only CPython's ``random.Random`` with exactly this call sequence
    reproduces HELM's outputs. Golden (the original InstructEval's ``Random(0)``):

    >>> mild_mix("Already, the new product is not available.", random.Random(0))
    "already,   the  new  product  isn't  available."
    """
    text = lowercase(text, rng)
    text = contract(text, rng)
    text = misspell(text, rng, prob=MILD_MIX_MISSPELLING_PROB)
    return space(text, rng, max_spaces=MILD_MIX_MAX_SPACES)
