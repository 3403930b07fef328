"""Scoring rules: HELM quasi-exact match (generation) and the original's per-token decision rule.

Metric names reported by the tasks:

- ``acc``: argmax of the summed log-likelihood of each choice (harness rule);
- ``acc_norm``: argmax of log-likelihood / characters of the choice (harness rule);
- ``acc_per_token``: argmax of log-likelihood / tokens of the choice, i.e. the choice with the
  lowest mean per-token negative log-likelihood -- the original InstructEval decision rule
  (``decoders/constrained_label_generation.py``); ties go to the first choice;
- ``quasi_exact_match``: HELM quasi-exact match of the generation against any gold answer.
"""

from __future__ import annotations

import re
import string
from typing import Any, Sequence

import numpy as np

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """HELM's normalisation: lower-case, drop punctuation, drop articles, collapse whitespace.

    The steps run in exactly this order (HELM ``metrics/basic_metrics.py``, copied by the original).

    Example:
        >>> normalize_answer("  The Eiffel-Tower, Paris! ")
        'eiffeltower paris'
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def quasi_exact_match(golds: Sequence[Any] | Any, prediction: str) -> float:
    """1.0 if ``normalize_answer(prediction)`` equals the normalised form of any gold, else 0.0.

    Example:
        >>> quasi_exact_match(["Paris", "City of Light"], " the city of light.")
        1.0
        >>> quasi_exact_match("Paris", "Paris, France")
        0.0
    """
    if isinstance(golds, (str, bytes)) or not isinstance(golds, Sequence):
        golds = [golds]
    predicted = normalize_answer(str(prediction))
    return 1.0 if any(normalize_answer(str(g)) == predicted for g in golds) else 0.0


def continuation_token_count(tokenizer: Any, context: str, continuation: str) -> int:
    """Tokens the harness scores for ``continuation`` after ``context``.

    Mirrors ``lm_eval.api.model.LM._encode_pair``: trailing spaces of the context move into the
    continuation, the pair is tokenised whole and split at the context's token length, so a
    continuation that merges with the context's last token is counted as the harness scores it.
    """
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces:
        continuation = context[-n_spaces:] + continuation
        context = context[:-n_spaces]
    whole = tokenizer(context + continuation, add_special_tokens=False)["input_ids"]
    prefix = tokenizer(context, add_special_tokens=False)["input_ids"]
    return max(len(whole) - len(prefix), 1)


def choice_predictions(
    loglikelihoods: Sequence[float], choices: Sequence[str], token_counts: Sequence[int] | None
) -> dict[str, int]:
    """Predicted choice index under each decision rule (first index wins ties, like ``argmax``).

    ``pred`` = argmax_i ll_i; ``pred_norm`` = argmax_i ll_i / len(choice_i);
    ``pred_per_token`` = argmax_i ll_i / n_tokens_i (absent without token counts).
    """
    lls = np.asarray(loglikelihoods, dtype=np.float64)
    out = {
        "pred": int(np.argmax(lls)),
        "pred_norm": int(np.argmax(lls / np.array([float(len(c)) for c in choices]))),
    }
    if token_counts is not None:
        out["pred_per_token"] = int(np.argmax(lls / np.asarray(token_counts, dtype=np.float64)))
    return out
