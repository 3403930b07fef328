"""Step 1 of ``mild_mix``: lowercase the whole text (HELM ``LowerCasePerturbation``).

Port of HELM ``src/helm/benchmark/augmentations/lowercase_perturbation.py``
(Stanford CRFM, Apache-2.0).
"""

from __future__ import annotations

import random

__all__ = ["lowercase"]


def lowercase(text: str, rng: random.Random | None = None) -> str:
    """Return ``text.lower()``; deterministic, consumes no randomness.

    ``rng`` is accepted (and ignored) so that every step has the same
    ``(text, rng) -> str`` shape as HELM's ``perturb``.

    This is the dominant effect of ``mild_mix``: there is no *random*
    capitalisation anywhere in HELM's scheme.

    >>> lowercase("Hello World!\\nQuite a day, huh?")
    'hello world!\\nquite a day, huh?'
    """
    return text.lower()
