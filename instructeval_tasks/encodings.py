"""The encodings of a structured (Natural Instructions schema) instruction: which components, in order.

The ``instruction_encoding`` metadata key takes one of ``ENCODINGS`` (``options``); the structured
bank renders them (``instructeval_banks.structured``). A Natural Instructions task file's own
header (``instructeval_ni_*`` tasks, ``instructeval_tasks.ni.prompt``) is rendered with the same
components and layout under any of ``ENCODINGS`` or the ``NI_ENCODINGS`` below, which also bound the
number of examples and choose whether their explanations are shown, as Super-NaturalInstructions'
ablations do ("Def + Pos(2)" is the benchmark's standard, ``definition_pos2``).

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


# Natural Instructions task files only: encoding -> (components, positive examples, negative examples,
# explanations). Counts are the first N of the file's lists (None: all of them).
NI_ENCODINGS: dict[str, tuple[tuple[str, ...], int | None, int | None, bool]] = {
    "definition": (("definition",), 0, 0, False),
    "pos2": (("positive_examples",), 2, 0, False),
    "definition_pos2": (("definition", "positive_examples"), 2, 0, False),
    "definition_pos2_explanations": (("definition", "positive_examples"), 2, 0, True),
    "definition_pos2_neg2": (("definition", "positive_examples", "negative_examples"), 2, 2, False),
    "definition_pos2_neg2_explanations": (("definition", "positive_examples", "negative_examples"), 2, 2, True),
}
NI_DEFAULT_ENCODING = "definition_pos2"
# How a Natural Instructions prompt is laid out (metadata ``prompt_format``): the project's schema
# layout (``ni.prompt``) or Tk-Instruct's collator string, byte for byte (``ni.tk_prompt``).
NI_PROMPT_FORMATS = ("schema", "tk-instruct")
# What the instruction_encoding key accepts (a bank entry takes ENCODINGS only; its renderer says so).
ALL_ENCODINGS: tuple[str, ...] = ENCODINGS + tuple(NI_ENCODINGS)
