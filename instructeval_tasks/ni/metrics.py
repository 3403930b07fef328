"""Super-NaturalInstructions' scoring of one prediction: its ``eval/automatic/evaluation.py``, rule for rule.

Two values per instance, each the **maximum over the instance's acceptable outputs**:

- ``exact_match``: 1.0 if ``normalize_answer(prediction) == normalize_answer(output)`` for some output,
  else 0.0. ``normalize_answer`` lower-cases, deletes every ``string.punctuation`` character and
  collapses whitespace (SQuAD v1.1's rule without removing articles), in that order;
- ``rougeL``: the ROUGE-L F-measure of ``rouge_score.rouge_scorer.RougeScorer(['rougeL'],
  use_stemmer=True)`` (the benchmark's default, English, track), ``score(target=output, prediction=...)``.

The prediction is scored as given (the benchmark scores the decoded generation; both rules ignore
surrounding whitespace). A task's score is the mean over its instances; the benchmark reports it
times 100, the harness tasks report the fraction (``docs/natural-instructions.md``).

Example:
    >>> normalize_answer("  The Cat's  hat!")
    'the cats hat'
    >>> score(" the cats hat.", ["A dog", "The cat's hat"])  # ROUGE: [the cat hat] vs [the cat s hat]
    {'exact_match': 1.0, 'rougeL': 0.8571428571428571}
"""

from __future__ import annotations

import functools
from typing import Sequence

from .normalize import normalize_answer

METRICS = ("exact_match", "rougeL")


@functools.lru_cache(maxsize=1)
def _scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def exact_match(prediction: str, reference: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(reference))


def rouge_l(prediction: str, reference: str) -> float:
    """ROUGE-L F-measure, stemmed (Porter), of ``prediction`` against one ``reference``."""
    return float(_scorer().score(target=reference, prediction=prediction)["rougeL"].fmeasure)


def score(prediction: str, references: Sequence[str]) -> dict[str, float]:
    """``{"exact_match", "rougeL"}`` of one prediction: each the maximum over ``references`` (non-empty)."""
    if not references:
        raise ValueError("an instance needs at least one acceptable output")
    return {
        "exact_match": max(exact_match(prediction, ref) for ref in references),
        "rougeL": max(rouge_l(prediction, ref) for ref in references),
    }
