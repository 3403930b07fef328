"""Step 2 of ``mild_mix``: contract expansions ("is not " -> "isn't ").

Port of HELM ``src/helm/benchmark/augmentations/contraction_expansion_perturbation.py``
(``ContractionPerturbation``; Stanford CRFM, Apache-2.0), itself based on
NL-Augmenter's ``contraction_expansions`` transformation
(GEM-benchmark/NL-Augmenter). ``CONTRACTION_MAP`` is copied verbatim, in
HELM's insertion order, from crfm-helm 0.5.16.

The exact rule:

* the 77-entry ``CONTRACTION_MAP`` (contraction -> expansion) is reversed by
  iterating it in insertion order, so the *last* contraction wins: "is not"
  is listed for "ain't" and then "isn't", giving ``"is not" -> "isn't"``;
  the reverse map has 76 keys and, because a dict keeps a key where it was
  first inserted, "is not" stays its first key;
* pattern ``\\b(<reverse keys joined by "|" in that order>)\\b `` with
  ``re.IGNORECASE | re.DOTALL`` -- note the literal trailing space: an
  expansion is contracted only when a space follows it ("is not." is kept);
* each match ``m`` becomes ``match_case(m, rev.get(m, rev.get(m.lower()))) + " "``.

Python ``re`` alternation is first-match, not longest-match, so "cannot have",
"he would have" and "you would have" can never match (a shorter key precedes
them): "cannot have " -> "can't have ". The key order must not be changed.
"""

from __future__ import annotations

import functools
import random
import re
from types import MappingProxyType
from typing import Final, Mapping

from .match_case import match_case

__all__ = ["CONTRACTION_MAP", "REVERSE_CONTRACTION_MAP", "contract"]

# Verbatim from HELM (crfm-helm 0.5.16); order is significant, see module docstring.
CONTRACTION_MAP: Final[Mapping[str, str]] = MappingProxyType(
    {
        "ain't": "is not",
        "aren't": "are not",
        "can't": "cannot",
        "can't've": "cannot have",
        "could've": "could have",
        "couldn't": "could not",
        "didn't": "did not",
        "doesn't": "does not",
        "don't": "do not",
        "hadn't": "had not",
        "hasn't": "has not",
        "haven't": "have not",
        "he'd": "he would",
        "he'd've": "he would have",
        "he'll": "he will",
        "he's": "he is",
        "how'd": "how did",
        "how'd'y": "how do you",
        "how'll": "how will",
        "how's": "how is",
        "I'd": "I would",
        "I'll": "I will",
        "I'm": "I am",
        "I've": "I have",
        "i'd": "i would",
        "i'll": "i will",
        "i'm": "i am",
        "i've": "i have",
        "isn't": "is not",
        "it'd": "it would",
        "it'll": "it will",
        "it's": "it is",
        "ma'am": "madam",
        "might've": "might have",
        "mightn't": "might not",
        "must've": "must have",
        "mustn't": "must not",
        "needn't": "need not",
        "oughtn't": "ought not",
        "shan't": "shall not",
        "she'd": "she would",
        "she'll": "she will",
        "she's": "she is",
        "should've": "should have",
        "shouldn't": "should not",
        "that'd": "that would",
        "that's": "that is",
        "there'd": "there would",
        "there's": "there is",
        "they'd": "they would",
        "they'll": "they will",
        "they're": "they are",
        "they've": "they have",
        "wasn't": "was not",
        "we'd": "we would",
        "we'll": "we will",
        "we're": "we are",
        "we've": "we have",
        "weren't": "were not",
        "what're": "what are",
        "what's": "what is",
        "when's": "when is",
        "where'd": "where did",
        "where's": "where is",
        "where've": "where have",
        "who'll": "who will",
        "who's": "who is",
        "who've": "who have",
        "why's": "why is",
        "won't": "will not",
        "would've": "would have",
        "wouldn't": "would not",
        "you'd": "you would",
        "you'd've": "you would have",
        "you'll": "you will",
        "you're": "you are",
        "you've": "you have",
    }
)


def _reverse(contraction_map: Mapping[str, str]) -> dict[str, str]:
    """Invert ``contraction_map`` exactly as HELM's dict comprehension does.

    Iteration is in insertion order, so for a repeated expansion the last
    contraction wins while the key keeps its first position.

    >>> _reverse({"ain't": "is not", "aren't": "are not", "isn't": "is not"})
    {'is not': "isn't", 'are not': "aren't"}
    """
    return {expansion: contraction for contraction, expansion in contraction_map.items()}


# Expansion -> contraction, 76 keys, "is not" first and mapped to "isn't".
REVERSE_CONTRACTION_MAP: Final[Mapping[str, str]] = MappingProxyType(_reverse(CONTRACTION_MAP))


@functools.cache
def _contraction_pattern() -> re.Pattern[str]:
    """Compile HELM's reverse-contraction regex once, on first use.

    Keys are joined unescaped, as in HELM; they contain only letters and
    spaces, so escaping would not change the pattern's meaning anyway.
    """
    alternation = "|".join(REVERSE_CONTRACTION_MAP.keys())
    return re.compile(rf"\b({alternation})\b ", flags=re.IGNORECASE | re.DOTALL)


def _contract_match(match: re.Match[str]) -> str:
    expansion = match.group(1)
    # IGNORECASE lets e.g. "Is Not" match; look it up as written, then lowercased.
    contraction = REVERSE_CONTRACTION_MAP.get(expansion, REVERSE_CONTRACTION_MAP.get(expansion.lower()))
    assert contraction is not None, expansion  # every alternative is a (lowercased) key
    # The pattern consumed the trailing space, so put it back.
    return match_case(expansion, contraction) + " "


def contract(text: str, rng: random.Random | None = None) -> str:
    """Replace every expansion followed by a space with its contraction.

    Deterministic and consumes no randomness; ``rng`` is accepted (and
    ignored) only to match HELM's ``perturb(text, rng)`` shape.

    >>> contract("She is a doctor, and I am a student")
    "She's a doctor, and I'm a student"
    >>> contract("this is not it, that is not.")  # "that is " matches first; no space after "not."
    "this isn't it, that's not."
    >>> contract("cannot have it")
    "can't have it"
    """
    return _contraction_pattern().sub(_contract_match, text)
