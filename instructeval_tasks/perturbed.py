"""Perturbed test inputs for perturbation accuracy (HELM ``mild_mix`` on the test example only).

The perturbed text of each text field goes into one extra column, ``instructeval_perturbed``
(a mapping field -> text); the test example's template reads it through ``PerturbedText``, while
demonstrations, the instruction, field names and answer choices stay untouched.

Seeding (``perturbation_mode``):

- ``document`` (default): every (document, field) gets its own RNG,
  ``perturb_rng(seed, doc_key, field)`` with ``doc_key`` the first 16 hex digits of the sha256 of the
  document's text fields -- independent of document order, batching and of other documents;
- ``stream``: the original's single ``random.Random(seed)`` consumed over the documents in eval order
  and their fields in order (parity mode; order-dependent by construction).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping, Sequence

import datasets

from .options import TaskOptions
from .perturbation import perturb_fields, perturb_stream

PERTURBED_FIELD = "instructeval_perturbed"


def document_key(doc: Mapping[str, Any], fields: Sequence[str]) -> str:
    """Content key of a document's text fields: sha256 of their JSON list, first 16 hex digits."""
    payload = json.dumps([doc[f] for f in fields], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def add_perturbed_fields(docs: datasets.Dataset, fields: Sequence[str], options: TaskOptions) -> datasets.Dataset:
    """``docs`` with the ``instructeval_perturbed`` column holding each field's perturbed text."""
    if options.perturbation_mode == "stream":
        perturbed = perturb_stream([dict(d) for d in docs], fields, seed=options.perturbation_seed)
    else:
        perturbed = [
            perturb_fields(doc, fields, seed=options.perturbation_seed, doc_key=document_key(doc, fields))
            for doc in docs
        ]
    return docs.add_column(PERTURBED_FIELD, perturbed)


def perturbation_record(options: TaskOptions) -> dict[str, Any]:
    """Metadata keys describing the perturbation of a run (all None when unperturbed)."""
    if not options.perturbation:
        return {"perturbation": None, "perturbation_seed": None, "perturbation_mode": None}
    return {
        "perturbation": options.perturbation,
        "perturbation_seed": options.perturbation_seed,
        "perturbation_mode": options.perturbation_mode,
        "perturbation_params": {"lowercase": True, "contraction": True, "misspelling_prob": 0.1, "max_spaces": 3},
    }


class PerturbedText:
    """``doc_to_text`` for perturbed runs: the clean template applied to the perturbed fields."""

    def __init__(self, template) -> None:
        self.template = template
        self.name = getattr(template, "name", None)
        self.sha256 = getattr(template, "sha256", None)

    def __call__(self, doc: Mapping[str, Any]) -> str:
        return self.template({**doc, **doc[PERTURBED_FIELD]})

    def __repr__(self) -> str:
        return f"PerturbedText({self.template!r})"

    def __deepcopy__(self, memo: dict) -> "PerturbedText":
        return self
