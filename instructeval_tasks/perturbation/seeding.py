"""Seeding schemes for applying ``mild_mix`` to documents.

Two schemes:

* **Per-document, per-field (default).** Each (seed, document, field) gets its
  own ``random.Random`` seeded with the string
  ``"instructeval-mild-mix:{seed}:{doc_key}:{field}"``. CPython seeds a ``str``
  through SHA-512, so the stream is stable across platforms, processes and
  ``PYTHONHASHSEED``, and a document's perturbation does not depend on which
  other documents are processed, in what order, batch or process. This is a
  deliberate departure from the original InstructEval (protocol §10 row 9):
  the *distribution* of perturbations is HELM's, individual strings differ.
  HELM itself seeds per instance too, with ``Random(str(seed) + instance.id)``.

* **Single-stream parity (``perturb_stream``).** The original InstructEval
  (``metrics/perturbational_accuracy.py``) consumes one ``random.Random(0)``
  (integer seed) sequentially over the test items in test-set order and,
  within an item, over its text fields in order. Reproduces the original's
  perturbed strings exactly, given the same items, order, fields and
  truncation; any change to those changes every later perturbation.
"""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from .mild_mix import mild_mix

__all__ = ["SEED_STRING_PREFIX", "perturb_fields", "perturb_rng", "perturb_stream", "seed_string"]

SEED_STRING_PREFIX = "instructeval-mild-mix"


def seed_string(seed: int | str, doc_key: str, field: str) -> str:
    """Return the exact string that seeds ``perturb_rng``.

    Format: ``f"instructeval-mild-mix:{seed}:{doc_key}:{field}"``. ``seed``
    is formatted with ``str()``, so ``0`` and ``"0"`` give the same stream.
    ``seed`` and ``field`` may not contain ``":"`` (``doc_key`` may), which
    keeps the mapping from (seed, doc_key, field) to seed string injective.

    >>> seed_string(0, "test:17", "premise")
    'instructeval-mild-mix:0:test:17:premise'
    """
    seed_text = str(seed)
    if ":" in seed_text or ":" in field:
        raise ValueError(f"seed and field must not contain ':' (got seed={seed!r}, field={field!r})")
    return f"{SEED_STRING_PREFIX}:{seed_text}:{doc_key}:{field}"


def perturb_rng(seed: int | str, doc_key: str, field: str) -> random.Random:
    """Return a fresh RNG for one field of one document.

    Exactly ``random.Random(f"instructeval-mild-mix:{seed}:{doc_key}:{field}")``
    (see ``seed_string``). ``doc_key`` must be stable for the document, e.g.
    ``"<split>:<row index in the original split>"`` or a content hash.

    >>> perturb_rng(0, "test:17", "premise").random() == perturb_rng("0", "test:17", "premise").random()
    True
    """
    return random.Random(seed_string(seed, doc_key, field))


def _text_field(doc: Mapping[str, Any], field: str) -> str:
    value = doc[field]
    if not isinstance(value, str):
        # Perturbing str(value) would silently invent text; refuse instead.
        raise TypeError(f"field {field!r} must be a str to be perturbed, got {type(value).__name__}")
    return value


def perturb_fields(
    doc: Mapping[str, Any],
    fields: Sequence[str],
    *,
    seed: int | str,
    doc_key: str,
) -> dict[str, str]:
    """Return ``{field: mild_mix(doc[field], perturb_rng(seed, doc_key, field))}``.

    Each field has its own RNG, so the result for one field does not depend
    on the other fields listed or their order. ``doc`` is not modified; a
    missing field raises ``KeyError`` and a non-``str`` value ``TypeError``.

    >>> out = perturb_fields({"text": "It Is Not Bad. ", "label": 1}, ["text"], seed=0, doc_key="test:0")
    >>> sorted(out), out["text"].split()
    (['text'], ["it's", 'not', 'bad.'])
    """
    return {field: mild_mix(_text_field(doc, field), perturb_rng(seed, doc_key, field)) for field in fields}


def perturb_stream(
    docs: Sequence[Mapping[str, Any]],
    fields: Sequence[str],
    seed: int = 0,
) -> list[dict[str, str]]:
    """Original InstructEval parity mode: one ``random.Random(seed)`` for all docs.

    The single stream is consumed over ``docs`` in order and, within a doc,
    over ``fields`` in order -- exactly as ``metrics/perturbational_accuracy.py``
    did with ``Random(0)``. Pass an ``int`` seed to match it: CPython seeds
    ``Random(0)`` and ``Random("0")`` differently.

    >>> perturb_stream([{"text": "It is a very good movie"}], ["text"])[0]["text"].split()
    ["it's", 'a', 'very', 'good', 'movie']
    """
    rng = random.Random(seed)
    return [{field: mild_mix(_text_field(doc, field), rng) for field in fields} for doc in docs]
