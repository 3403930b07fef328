"""Seeded item selection and truncation, as the original ``data/dataset.py::sample_instances``.

The original reseeds the *global* RNG with ``random.seed(seed)``; here each selection owns a
``random.Random(seed)``, which produces the same stream, so on the complete HF splits (in HF row
order) the selected indices equal the original's. Nothing touches global random state.
"""

from __future__ import annotations

import random
from typing import Any, Hashable, Mapping, Sequence


def balanced_counts(n: int, num_classes: int) -> list[int]:
    """Items per class for a balanced sample of ``n``, the extra items going to the last classes.

    Formula: ``[n//C] * (C - n%C) + [n//C + 1] * (n%C)``, paired with classes in ascending order.

    Example:
        >>> balanced_counts(6, 4)
        [1, 1, 2, 2]
        >>> balanced_counts(100, 3)
        [33, 33, 34]
    """
    base, extra = divmod(n, num_classes)
    return [base] * (num_classes - extra) + [base + 1] * extra


def balanced_indices(labels: Sequence[Hashable], n: int, seed: int) -> list[int]:
    """Class-balanced sample of ``n`` row indices, shuffled, from ``random.Random(seed)``.

    For each class in ascending order (``False`` before ``True``), draw ``count`` indices with
    ``rng.sample`` from that class's rows in split order; then ``rng.shuffle`` the concatenation.
    The result order is the demo order (or the test order).

    Example:
        >>> balanced_indices([0, 1, 0, 1, 0, 1], 2, seed=0)
        [3, 2]
    """
    rng = random.Random(seed)
    classes = sorted(set(labels))
    if not classes:
        raise ValueError("cannot sample from an empty split")
    rows_by_class: dict[Hashable, list[int]] = {c: [] for c in classes}
    for i, label in enumerate(labels):
        rows_by_class[label].append(i)
    chosen: list[int] = []
    for count, cls in zip(balanced_counts(n, len(classes)), classes):
        rows = rows_by_class[cls]
        if len(rows) < count:
            raise ValueError(
                f"class {cls!r} has {len(rows)} rows but a balanced sample of {n} needs {count}; "
                f"use a smaller sample or a larger split"
            )
        chosen += rng.sample(rows, count)
    rng.shuffle(chosen)
    return chosen


def uniform_indices(size: int, n: int, seed: int) -> list[int]:
    """``random.Random(seed).sample(range(size), n)``: the original's MCQ/GQA sampling."""
    if n > size:
        raise ValueError(f"cannot sample {n} items from a split of {size}")
    return random.Random(seed).sample(range(size), n)


def select_indices(labels: Sequence[Hashable] | None, size: int, n: int, seed: int) -> list[int]:
    """Balanced over ``labels`` when given (classification), uniform otherwise."""
    if labels is not None:
        return balanced_indices(labels, n, seed)
    return uniform_indices(size, n, seed)


def truncate_words(text: str, max_words: int) -> str:
    """Keep the first ``max_words`` space-separated words and append ``"..."`` (no space).

    Splits on the literal single space, as the original does, so runs of spaces count as
    empty words.

    Example:
        >>> truncate_words("a b c d", 2)
        'a b...'
        >>> truncate_words("a b", 2)
        'a b'
    """
    words = text.split(" ")
    if len(words) <= max_words:
        return text
    return " ".join(words[:max_words]) + "..."


def truncate_fields(doc: Mapping[str, Any], fields: Sequence[str], max_words: int | None) -> dict[str, Any]:
    """A copy of ``doc`` with each of ``fields`` truncated to ``max_words`` words (None: no-op)."""
    out = dict(doc)
    if max_words is None:
        return out
    for field in fields:
        out[field] = truncate_words(out[field], max_words)
    return out
