"""HELM's ``mild_mix`` input perturbation, byte-identical to HELM, stdlib only.

InstructEval's *perturbation accuracy* evaluates prompts whose test-item text
fields went through HELM's ``MildMixPerturbation``. This package re-implements
it (one step per module, as in HELM's ``augmentations/`` folder) so that
crfm-helm is neither a dependency nor imported:

1. ``lowercase``  -- ``text.lower()`` (the dominant effect; no random casing);
2. ``contract``   -- "is not " -> "isn't " etc., deterministic;
3. ``misspell``   -- each word of HELM's Wikipedia-derived list becomes a
   common misspelling with probability 0.1;
4. ``space``      -- each run of spaces becomes 1-3 spaces.

``mild_mix(text, rng)`` composes them in that order on one CPython
``random.Random``; with the same RNG state it returns exactly HELM's string.

Seeding (``seeding``): by default each (seed, document, field) has its own
RNG, ``random.Random(f"instructeval-mild-mix:{seed}:{doc_key}:{field}")``,
so results do not depend on document order or batching (``perturb_rng``,
``perturb_fields``). ``perturb_stream`` reproduces the original InstructEval
instead: one ``random.Random(0)`` consumed over the test items in order and,
within an item, over its text fields in order.

The misspelling list is vendored as package data
(``data/correct_to_misspelling.json``, sha256-checked, loaded lazily on first
use); attributions in ``data/NOTICE``. Importing this package is cheap.

>>> import random
>>> " ".join(mild_mix("She is NOT here", random.Random("id0")).split())
"she's not here"
"""

from __future__ import annotations

from .contraction import CONTRACTION_MAP, REVERSE_CONTRACTION_MAP, contract
from .lowercase import lowercase
from .match_case import match_case
from .mild_mix import MILD_MIX_MAX_SPACES, MILD_MIX_MISSPELLING_PROB, mild_mix
from .misspelling import MISSPELLINGS_SHA256, MisspellingDataError, load_misspellings, misspell
from .seeding import perturb_fields, perturb_rng, perturb_stream, seed_string
from .space import space

__all__ = [
    "CONTRACTION_MAP",
    "MILD_MIX_MAX_SPACES",
    "MILD_MIX_MISSPELLING_PROB",
    "MISSPELLINGS_SHA256",
    "REVERSE_CONTRACTION_MAP",
    "MisspellingDataError",
    "contract",
    "load_misspellings",
    "lowercase",
    "match_case",
    "mild_mix",
    "misspell",
    "perturb_fields",
    "perturb_rng",
    "perturb_stream",
    "seed_string",
    "space",
]
