r"""Scoring rules: HELM quasi-exact match (generation) and the original's per-token decision rule.

Metric names reported by the tasks:

- ``acc``: argmax of the summed log-likelihood of each choice (harness rule);
- ``acc_norm``: argmax of log-likelihood / characters of the choice (harness rule);
- ``acc_per_token``: argmax of log-likelihood / tokens of the choice, i.e. the choice with the
  lowest mean per-token negative log-likelihood -- the original InstructEval decision rule
  (``decoders/constrained_label_generation.py``); an exact tie goes to the choice the original
  scores first (its ``label_map`` order, ``TaskSpec.original_choice_order``), as its ``np.argmin``;
- ``quasi_exact_match``: HELM quasi-exact match of the generation's first line against any gold
  answer. The line ends where the original's ``str.splitlines()`` ends it (``\n``, ``\r``,
  ``\x0b``, ``\x0c``, ``\x1c``-``\x1e``, ``\x85``, ``\u2028``, ``\u2029``), not only at the
  harness's ``until: ["\n"]``. An empty prediction matches a gold that normalises to the empty
  string (the original's rule; HELM itself scores an empty prediction 0).
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


def first_line(text: str) -> str:
    r"""The text up to its first line boundary, as the original's ``text.splitlines()[0]``.

    Every boundary of ``str.splitlines`` counts; an empty text gives ``""`` (where the original's
    ``[0]`` would fail).

    Example:
        >>> first_line(" Paris\u2028France"), first_line("Paris\r\nFrance"), first_line("\nParis"), first_line("")
        (' Paris', 'Paris', '', '')
    """
    lines = text.splitlines()
    return lines[0] if lines else ""


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
    return continuation_token_counts(tokenizer, context, [continuation])[0]


def continuation_token_counts(tokenizer: Any, context: str, continuations: Sequence[str]) -> list[int]:
    """``continuation_token_count`` of each continuation after one ``context``, which is tokenised
    once for all of them (a classification item's labels share their prompt, often hundreds of
    tokens of instruction and demos).

    Example (``tok`` splits on spaces):
        >>> tok = lambda text, add_special_tokens=False: {"input_ids": text.split(" ")}
        >>> continuation_token_counts(tok, "Category: ", ["World", "Sci Tech"])
        [1, 2]
    """
    stripped = context.rstrip()
    prefix = len(tokenizer(stripped, add_special_tokens=False)["input_ids"])
    # context + continuation is the trailing spaces moved into the continuation, joined back
    return [max(len(tokenizer(context + c, add_special_tokens=False)["input_ids"]) - prefix, 1) for c in continuations]


def argmax_in_order(scores: Sequence[float], order: Sequence[int] | None = None) -> int:
    """Index of the highest score; an exact tie goes to the index that comes first in ``order``.

    ``order`` lists every index once (default: ``0, 1, ...``, i.e. ``np.argmax``).

    Example:
        >>> argmax_in_order([-1.0, -1.0]), argmax_in_order([-1.0, -1.0], order=(1, 0))
        (0, 1)
    """
    values = np.asarray(scores, dtype=np.float64)
    if order is None:
        return int(np.argmax(values))
    if sorted(order) != list(range(len(values))):
        raise ValueError(f"order {tuple(order)} is not a permutation of the {len(values)} choice indices")
    best = values.max()
    return next(i for i in order if values[i] == best)


def choice_predictions(
    loglikelihoods: Sequence[float],
    choices: Sequence[str],
    token_counts: Sequence[int] | None,
    original_order: Sequence[int] | None = None,
) -> dict[str, int]:
    """Predicted choice index under each decision rule.

    ``pred`` = argmax_i ll_i; ``pred_norm`` = argmax_i ll_i / len(choice_i) (the harness's rules:
    the first index wins ties); ``pred_per_token`` = argmax_i ll_i / n_tokens_i (absent without
    token counts; the original's rule, so a tie goes to the first index of ``original_order``,
    the order in which the original scores the choices).
    """
    lls = np.asarray(loglikelihoods, dtype=np.float64)
    out = {
        "pred": int(np.argmax(lls)),
        "pred_norm": int(np.argmax(lls / np.array([float(len(c)) for c in choices]))),
    }
    if token_counts is not None:
        out["pred_per_token"] = argmax_in_order(lls / np.asarray(token_counts, dtype=np.float64), original_order)
    return out
