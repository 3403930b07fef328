"""Step 3 of ``mild_mix``: swap dictionary words for common misspellings.

Port of HELM ``src/helm/benchmark/augmentations/misspelling_perturbation.py``
(``MisspellingPerturbation``; Stanford CRFM, Apache-2.0). The word list,
``data/correct_to_misspelling.json``, is vendored byte-for-byte from the
crfm-helm 0.5.16 wheel and derives from Wikipedia's "Lists of common
misspellings/For machines" (CC BY-SA); see ``data/NOTICE``.

The exact rule:

* load the JSON into ``d: word -> [misspellings]`` keeping the **file's key
  order** (6,523 keys);
* pattern ``\\b(<keys of d joined by "|" in file order>)\\b``, case-sensitive
  (no IGNORECASE), Unicode ``\\b``;
* for every match ``w``, left to right: draw ``u = rng.random()``; if
  ``u < prob`` the match becomes ``match_case(w, str(rng.choice(d[w])))``,
  otherwise ``w`` is kept.

RNG consumption is therefore one ``random()`` per dictionary match plus one
``choice()`` per hit. The alternation is first-match in file order, not
longest-match ("about" shadows "about a"; "that" matches inside "that's"),
so the keys must never be sorted or deduplicated.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
from importlib import resources
from types import MappingProxyType
from typing import Final, Mapping

from .match_case import match_case

__all__ = [
    "MISSPELLINGS_FILE",
    "MISSPELLINGS_SHA256",
    "MisspellingDataError",
    "load_misspellings",
    "misspell",
]

MISSPELLINGS_FILE: Final[str] = "data/correct_to_misspelling.json"
# sha256 of helm/benchmark/augmentations/correct_to_misspelling.json in the
# crfm-helm 0.5.16 wheel (identical in 0.2.2, the version InstructEval used).
MISSPELLINGS_SHA256: Final[str] = "2f8e118895e52426bacd0cd32dfd0c14708e845c910d129f2d03571fe9f75c8b"


class MisspellingDataError(RuntimeError):
    """The vendored misspelling list is missing, altered or malformed."""


def _read_vendored_bytes() -> bytes:
    resource = resources.files(__package__).joinpath(MISSPELLINGS_FILE)
    try:
        return resource.read_bytes()
    except FileNotFoundError as error:
        # Fail loudly: silently skipping misspellings would change every result.
        raise MisspellingDataError(
            f"vendored misspelling list {MISSPELLINGS_FILE!r} not found in package "
            f"{__package__!r}; is the package data installed?"
        ) from error


def _parse_checked(raw: bytes) -> dict[str, list[str]]:
    """Verify ``raw`` against ``MISSPELLINGS_SHA256`` and parse it in file order.

    >>> _parse_checked(b"{}")
    Traceback (most recent call last):
    ...
    instructeval_tasks.perturbation.misspelling.MisspellingDataError: ...
    """
    digest = hashlib.sha256(raw).hexdigest()
    if digest != MISSPELLINGS_SHA256:
        raise MisspellingDataError(
            f"{MISSPELLINGS_FILE} has sha256 {digest}, expected {MISSPELLINGS_SHA256} "
            "(HELM's correct_to_misspelling.json); refusing to run with a different list"
        )
    # json keeps object key order, which the first-match alternation depends on.
    table: dict[str, list[str]] = json.loads(raw.decode("utf-8"))
    return table


@functools.cache
def load_misspellings() -> Mapping[str, tuple[str, ...]]:
    """Return HELM's word -> misspellings table (read-only, file order, cached).

    Loaded lazily on first use via ``importlib.resources`` and checked against
    ``MISSPELLINGS_SHA256``; raises ``MisspellingDataError`` if the file is
    missing or differs.

    >>> table = load_misspellings()
    >>> len(table), table["already"]
    (6523, ('aready', 'alreayd', 'allready'))
    """
    table = _parse_checked(_read_vendored_bytes())
    # Tuples keep rng.choice() behaviour identical (it only needs len and indexing).
    return MappingProxyType({word: tuple(variants) for word, variants in table.items()})


@functools.cache
def _misspelling_pattern() -> re.Pattern[str]:
    """Compile the 6,523-way alternation once (about 0.2 s), on first use.

    Keys are joined unescaped, as in HELM; none contains a regex
    metacharacter (only word characters, spaces, hyphens and apostrophes).
    """
    alternation = "|".join(load_misspellings().keys())
    return re.compile(rf"\b({alternation})\b")


def misspell(text: str, rng: random.Random, prob: float = 0.1) -> str:
    """Replace each dictionary word, with probability ``prob``, by a misspelling.

    Matches are scanned left to right; each consumes one ``rng.random()``, and
    a hit (``u < prob``, strict) consumes one ``rng.choice`` over that word's
    variants, whose case is then matched to the word.

    HELM's unit-test fixture (``prob=1.0``, ``Random("id0")``):

    >>> misspell("Already, the new product is not available.", random.Random("id0"), prob=1.0)
    'Alreayd, hten new product is nto avaliable.'
    >>> misspell("already, the new product", random.Random("id0"), prob=0.0)
    'already, the new product'
    """
    table = load_misspellings()

    def replace(match: re.Match[str]) -> str:
        word = match.group(1)
        if rng.random() < prob:
            return match_case(word, str(rng.choice(table[word])))
        return word

    return _misspelling_pattern().sub(replace, text)
