"""Execution-accuracy scoring of one prediction: the original ``evaluate.py``, rule for rule.

``normalize_prediction`` (applied to prediction and answer alike), in this order: replace
``' and '`` by ``' '``; replace ``'Sentence 1:'`` and ``'Sentence 2:'`` by ``' '``; ``strip()``;
keep the text before the first ``"\\n"``, then before the first ``"."``; lower-case; replace ``-``
by a space; delete every character of ``string.punctuation``.

Per-task metric (``names.TASK_TO_METRIC``, ``em`` otherwise), over every correct answer:

- ``em``: 1 if the normalised prediction equals some normalised answer;
- ``es`` (exact set): 1 if the sets of whitespace tokens are equal for some answer;
- ``contains``: 1 if some normalised answer occurs in the normalised prediction as a whole-word
  match, ``re.search(r'\\b({answer})\\b', prediction)`` (the answer is not regex-escaped, as in the
  original; normalisation has removed every regex metacharacter of ``string.punctuation``);
- ``f1``: the maximum over answers of the token F1 (multiset overlap; 0 when nothing overlaps).

Example:
    >>> normalize_prediction(" Write-up and notes.\\nmore")
    'write up notes'
    >>> score("em", " Unfortunate.", ["unfortunate"])
    1
    >>> round(score("f1", "involve going up", ["involve vertical movement.", "involve going up."]), 3)
    1.0
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Sequence


def normalize_prediction(prediction: str, lowercase: bool = True) -> str:
    prediction = prediction.replace(" and ", " ")
    prediction = prediction.replace("Sentence 1:", " ")
    prediction = prediction.replace("Sentence 2:", " ")
    prediction = prediction.strip()
    prediction = prediction.split("\n")[0]
    prediction = prediction.split(".")[0]
    if lowercase:
        prediction = prediction.lower()
    prediction = prediction.replace("-", " ")
    prediction = prediction.translate(str.maketrans("", "", string.punctuation))
    return prediction


def f1_score(prediction: str, answer: str) -> float:
    """Token F1 of the normalised strings: ``2PR / (P + R)`` over the multiset overlap."""
    prediction_tokens = normalize_prediction(prediction).split()
    answer_tokens = normalize_prediction(answer).split()
    common = Counter(prediction_tokens) & Counter(answer_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(answer_tokens)
    return (2 * precision * recall) / (precision + recall)


def em_score(prediction: str, answer: str) -> bool:
    return normalize_prediction(prediction) == normalize_prediction(answer)


def exact_set_score(prediction: str, answer: str) -> int:
    return int(set(normalize_prediction(prediction).split()) == set(normalize_prediction(answer).split()))


def contains_score(prediction: str, answer: str) -> int:
    # The original returns None (not 0) when there is no match; only == 1 is ever tested.
    if re.search(r"\b({0})\b".format(normalize_prediction(answer)), normalize_prediction(prediction)):
        return 1
    return 0


def score(metric: str, prediction: str, answers: Sequence[str]) -> float:
    """The original's ``get_multi_answer_<metric>`` of ``prediction`` against ``answers``."""
    if not answers:
        raise ValueError("no correct answers to score against")
    if metric == "f1":
        return max(f1_score(prediction, a) for a in answers)
    rule = {"em": em_score, "es": exact_set_score, "contains": contains_score}.get(metric)
    if rule is None:
        raise ValueError(f"unknown Instruction Induction metric {metric!r}; known: em, es, contains, f1")
    return 1 if any(rule(prediction, a) == 1 for a in answers) else 0
