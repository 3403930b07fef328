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


class MissingClassError(ValueError):
    """A class of the task has no rows in the split a class-balanced sample is drawn from."""


def balanced_indices(labels: Sequence[Hashable], n: int, seed: int, rng: random.Random | None = None,
                     classes: Sequence[Hashable] | None = None) -> list[int]:
    """Class-balanced sample of ``n`` row indices, shuffled, from ``random.Random(seed)``.

    For each class in ascending order (``False`` before ``True``), draw ``count`` indices with
    ``rng.sample`` from that class's rows in split order; then ``rng.shuffle`` the concatenation.
    The result order is the demo order (or the test order).

    Example:
        >>> balanced_indices([0, 1, 0, 1, 0, 1], 2, seed=0)
        [3, 2]

    ``rng`` (optional) is used instead of a fresh ``random.Random(seed)``, so a caller can keep
    drawing from the same stream afterwards, as the original's permutation metric does.

    ``classes`` (the task's declared classes): every one must have rows, else
    :class:`MissingClassError` names the missing ones -- a split that lacks a class cannot give a
    sample balanced over the task's classes.

        >>> balanced_indices([0, 0, 2, 2], 2, seed=0, classes=[0, 1, 2])
        Traceback (most recent call last):
        ...
        instructeval_tasks.sampling.MissingClassError: class 1 has no rows (the task's classes: 0, 1, 2); a class-balanced sample needs rows of every class
    """
    rng = rng if rng is not None else random.Random(seed)
    present = set(labels)
    if classes is not None:
        missing = [c for c in classes if c not in present]
        if missing:
            raise MissingClassError(
                f"class{'es' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
                f"{'have' if len(missing) > 1 else 'has'} no rows (the task's classes: {', '.join(map(repr, classes))}); "
                f"a class-balanced sample needs rows of every class"
            )
    classes = sorted(present)
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


def uniform_indices(size: int, n: int, seed: int, rng: random.Random | None = None) -> list[int]:
    """``random.Random(seed).sample(range(size), n)``: the original's MCQ/GQA sampling."""
    if n > size:
        raise ValueError(f"cannot sample {n} items from a split of {size}")
    return (rng if rng is not None else random.Random(seed)).sample(range(size), n)


def select_indices(
    labels: Sequence[Hashable] | None, size: int, n: int, seed: int, rng: random.Random | None = None,
    classes: Sequence[Hashable] | None = None,
) -> list[int]:
    """Balanced over ``labels`` when given (classification; every one of ``classes`` present), uniform
    otherwise (``classes`` unused)."""
    if labels is not None:
        return balanced_indices(labels, n, seed, rng, classes)
    return uniform_indices(size, n, seed, rng)


ORDER_MODES = ("seeded", "original")


def order_demos(ids: Sequence[int], *, demo_seed: int, order_seed: int, mode: str = "seeded",
                labels: Sequence[Hashable] | None = None, size: int | None = None) -> list[int]:
    """The demo set ``ids`` (drawn with ``demo_seed``) in the order named by ``order_seed``.

    ``seeded``: ``random.Random(f"instructeval-demo-order:{demo_seed}:{order_seed}").shuffle`` of the
    drawn order -- independent of every other draw.

    ``original`` (parity with the original's permutational metric): continue the selection's own
    ``random.Random(demo_seed)`` stream and shuffle the list in place ``order_seed`` times
    cumulatively (``order_seed >= 1``); the drawn order itself is ordering 0. Needs the ``labels``
    (or ``size``) the set was drawn from, to replay the stream.

    Example:
        >>> order_demos([4, 1, 7], demo_seed=0, order_seed=1) == order_demos([4, 1, 7], demo_seed=0, order_seed=1)
        True
        >>> sorted(order_demos([4, 1, 7], demo_seed=0, order_seed=1))
        [1, 4, 7]
    """
    if mode == "seeded":
        ordered = list(ids)
        random.Random(f"instructeval-demo-order:{demo_seed}:{order_seed}").shuffle(ordered)
        return ordered
    if mode != "original":
        raise ValueError(f"unknown order mode {mode!r}; expected one of {ORDER_MODES}")
    if order_seed < 0:
        raise ValueError("original-mode orderings are numbered from 1 (0 is the drawn order)")
    rng = random.Random(demo_seed)
    replay = select_indices(labels, size if size is not None else len(labels or ()), len(ids), demo_seed, rng)
    if replay != list(ids):
        raise ValueError("the demo ids were not drawn from these labels with this seed; cannot replay the stream")
    for _ in range(order_seed):
        rng.shuffle(replay)
    return replay


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
