r"""Is the stock score above chance? The test every verdict asks first.

A score is only evidence about what a model knows where it beats the simplest strategy that needs no
knowledge: always giving the most frequent gold answer **of the same rows**. On ``n`` rows whose gold
answers (each row a set of acceptable answers; one for a label) contain the answer ``a`` on ``m_a``
rows, that strategy scores

    c = max_a m_a / n

and the stock score's ``k`` correct rows are tested against it by a one-sided exact binomial test,

    p = P(X >= k),  X ~ Binomial(n, c)

**above chance** at ``p < ABOVE_P`` (1%: the level the studies used). Otherwise the verdict reads ``at
chance``: an instruction effect on a model at chance changes which answer it repeats, not what it
knows. Where the gold answers are free-form (more than ``LABEL_SET`` distinct answers among the rows,
or none recorded) there is no chance rate; a score below ``FLOOR`` is then ``at a floor`` (the
model rarely produces the answer at all), anything above it is read as the score it is.

What the model does, where the per-row predictions are known (a two-label task, where a wrong answer
is the other label; or the caller's own predictions): its most frequent answer and on how many rows it
gives it, e.g. ``answers "no" on 40 of 40 rows``.

Example (40 BoolQ rows, 20 of each gold label; a model that says "no" on every row):
    >>> gold = ["no"] * 20 + ["yes"] * 20
    >>> y = np.array([1.0] * 20 + [0.0] * 20)
    >>> c = chance_of(y, gold)
    >>> c.state, round(c.rate, 2), round(c.p_value, 3)
    ('at chance', 0.5, 0.563)
    >>> c.clause()
    'at chance: answers "no" on 40 of 40 rows; always answering "no" scores 50.0 on these rows (binomial p = 0.563; above chance needs p < 0.01)'
    >>> chance_of(np.array([1.0] * 36 + [0.0] * 4), gold).state
    'above chance'
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
from scipy.stats import binom

ABOVE_P = 0.01  # "clearly above chance": the one-sided binomial p must fall below this
FLOOR = 0.10  # with no chance rate, a score (fraction) below this is at a floor
LABEL_SET = 20  # more distinct gold answers than this among the rows: free-form, no chance rate

ABOVE, AT_CHANCE, AT_FLOOR, NO_RATE = "above chance", "at chance", "at a floor", "no chance rate"


@dataclass(frozen=True)
class Chance:
    """The chance test of one stock score (module doc). ``rate`` NaN where there is no chance rate."""

    n: int
    correct: float  # rows the stock answered right (k)
    score: float  # the score tested against the floor (a fraction; the stock's own where no other is given)
    rate: float = math.nan
    answer: str | None = None  # the most frequent gold answer
    p_value: float = math.nan
    said: str | None = None  # the model's most frequent answer, where its answers are known
    said_rows: int = 0

    @property
    def state(self) -> str:
        if math.isnan(self.rate):
            return AT_FLOOR if self.score < FLOOR else NO_RATE
        return ABOVE if self.p_value < ABOVE_P else AT_CHANCE

    @property
    def below(self) -> bool:
        """Whether the score says nothing about what the model knows (at chance or at a floor)."""
        return self.state in (AT_CHANCE, AT_FLOOR)

    def behaviour(self) -> str:
        return f'answers "{self.said}" on {self.said_rows} of {self.n} rows' if self.said is not None else ""

    def clause(self) -> str:
        """The verdict's first clause for a score below chance or at a floor; "" above."""
        if self.state == AT_FLOOR:
            return f"at a floor: {100 * self.score:.1f} (below {100 * FLOOR:.0f}; free-form answers have no chance rate)"
        if self.state != AT_CHANCE:
            return ""
        does = self.behaviour()
        return (f"at chance: {does + '; ' if does else ''}always answering \"{self.answer}\" scores {100 * self.rate:.1f} "
                f"on these rows (binomial p = {self.p_value:.3f}; above chance needs p < {ABOVE_P})")

    def as_dict(self) -> dict:
        return {"state": self.state, "rate": None if math.isnan(self.rate) else 100 * self.rate,
                "answer": self.answer, "p": None if math.isnan(self.p_value) else self.p_value,
                "behaviour": self.behaviour() or None}


def binomial_tail(k: int, n: int, p: float) -> float:
    """``P(X >= k)`` for ``X ~ Binomial(n, p)``.

        >>> round(binomial_tail(7, 10, 0.5), 4)
        0.1719
    """
    if k <= 0:
        return 1.0
    return float(binom.sf(k - 1, n, p))


def majority(gold: Sequence[Iterable[str] | str | None], prefer: str | None = None) -> tuple[str, int] | None:
    """The answer acceptable on most rows and on how many (ties: ``prefer`` where it is one of them, else
    the first in sorted order); None where a row has no gold answer or the rows hold more than
    ``LABEL_SET`` distinct answers."""
    sets = [_as_set(g) for g in gold]
    if not sets or any(not s for s in sets):
        return None
    counts = Counter(a for s in sets for a in s)
    if len(counts) > LABEL_SET:
        return None
    top = max(counts.values())
    tied = sorted(a for a, c in counts.items() if c == top)
    return (prefer if prefer in tied else tied[0]), top


def chance_of(y: np.ndarray, gold: Sequence[Iterable[str] | str | None] | None, *,
              predicted: Sequence[str | None] | None = None, floor_score: float | None = None) -> Chance:
    """The chance test of the stock's per-row correctness ``y`` (0/1) against its rows' ``gold`` answers
    (module doc). ``predicted``: the model's answer per row where the caller knows it (on a two-label
    task it is derived from ``y``); ``floor_score``: the score the floor applies to where it is not
    ``mean(y)`` (e.g. ROUGE-L beside an exact match)."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    k = float(np.sum(y))
    score = float(np.mean(y)) if floor_score is None and n else (floor_score if floor_score is not None else math.nan)
    said, said_rows = _said(y, gold, predicted) if gold is not None and n else (None, 0)
    found = majority(gold, prefer=said) if gold is not None and n else None
    if found is None:
        return Chance(n, k, score)
    answer, rows = found
    return Chance(n, k, score, rows / n, answer, binomial_tail(int(round(k)), n, rows / n), said, said_rows)


def _as_set(g: Iterable[str] | str | None) -> frozenset[str]:
    if g is None:
        return frozenset()
    if isinstance(g, str):
        return frozenset([g])
    return frozenset(str(a) for a in g)


def _said(y: np.ndarray, gold, predicted) -> tuple[str | None, int]:
    """The most frequent answer the model gave and on how many rows; on a two-label task a wrong answer
    is the other label. (None, 0) where the answers are not known."""
    if any(not _as_set(g) for g in gold):
        return None, 0
    if predicted is None:
        labels = sorted({a for g in gold for a in _as_set(g)})
        if len(labels) != 2 or any(len(_as_set(g)) != 1 for g in gold):
            return None, 0
        predicted = [next(iter(_as_set(g))) if v >= 0.5 else labels[1 - labels.index(next(iter(_as_set(g))))]
                     for v, g in zip(y, gold)]
    known = [p for p in predicted if p is not None]
    if len(known) != len(y) or not known:
        return None, 0
    counts = Counter(known)
    top = max(counts.values())
    return min(a for a, c in counts.items() if c == top), top


def choice_answers(scores, metric: str) -> tuple[list[str | None], list[str | None] | None]:
    """Each row's gold answer and, where ``metric``'s rule is known (``acc``: the highest log-likelihood;
    ``acc_norm``: the highest per character of the continuation), the model's answer, from a samples
    file's per-choice scores (``samples.read_choice_scores``). An answer is the choice's text where
    every row offers the same choices, else its position (``choice 2``: answers that differ per row,
    e.g. HellaSwag's endings)."""
    conts = [tuple(c) for c in scores.continuations]
    same = len(set(conts)) == 1 and all(isinstance(c, str) for c in conts[0])
    name = (lambda r, k: str(conts[r][k]).strip()) if same else (lambda r, k: f"choice {k + 1}")  # noqa: E731
    gold = [name(r, int(g)) if g >= 0 else None for r, g in enumerate(scores.gold)]
    rule = {"acc": lambda ll, c: ll, "acc_norm": lambda ll, c: ll / max(1, len(c or ""))}.get(metric.split(",")[0])
    if rule is None:
        return gold, None
    said: list[str | None] = []
    for r, ll in enumerate(scores.loglikelihoods):
        values = [rule(float(v), conts[r][k] if k < len(conts[r]) else None) for k, v in enumerate(ll)]
        said.append(name(r, int(np.argmax(values))) if values and all(math.isfinite(v) for v in values) else None)
    return gold, said
