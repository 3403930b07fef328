"""Super-NaturalInstructions' answer normalisation (``eval/automatic/evaluation.py``'s ``normalize_answer``).

A fact of the benchmark, kept below the task plugin so that the aggregation (which reads results, not
tasks) compares answers as the scorer does, e.g. for the chance test's most frequent answer.

Example:
    >>> normalize_answer("  The Cat's  hat!")
    'the cats hat'
"""

from __future__ import annotations

import string

_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower-case, delete punctuation, collapse whitespace (articles are kept)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    return " ".join(text.split())
