"""The encodings of a structured (Natural Instructions schema) instruction: which components, in order.

The ``instruction_encoding`` metadata key takes one of ``ENCODINGS`` (``options``); the structured
bank renders them (``instructeval_banks.structured``).

Example:
    >>> ENCODING_COMPONENTS["prompt_definition"], DEFAULT_ENCODING in ENCODINGS
    (('definition', 'prompt'), True)
"""

from __future__ import annotations

DEFAULT_ENCODING = "full"

# encoding -> components, in rendering order.
ENCODING_COMPONENTS: dict[str, tuple[str, ...]] = {
    "prompt": ("prompt",),
    "pos_examples": ("positive_examples",),
    "prompt_definition": ("definition", "prompt"),
    "prompt_avoid": ("prompt", "things_to_avoid"),
    "prompt_emphasis": ("prompt", "emphasis_and_caution"),
    "prompt_pos_examples": ("prompt", "positive_examples"),
    "prompt_definition_pos_examples": ("definition", "prompt", "positive_examples"),
    "full": (
        "definition",
        "prompt",
        "things_to_avoid",
        "emphasis_and_caution",
        "positive_examples",
        "negative_examples",
    ),
}
ENCODINGS: tuple[str, ...] = tuple(ENCODING_COMPONENTS)
