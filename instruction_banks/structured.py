"""Structured instructions in the Natural Instructions schema, and their encodings.

A bank entry may give ``structured`` instead of ``text`` (Mishra et al., "Cross-Task Generalization
via Natural Language Crowdsourcing Instructions", ACL 2022)::

    structured:
      title: AG News topic classification              # metadata, never rendered
      prompt: Classify the news article by its topic.  # required
      definition: Given a news article, ...            # required
      things_to_avoid: Do not ...                      # optional
      emphasis_and_caution: ...                        # optional
      positive_examples:                               # required, at least one
        - {input: ..., output: ..., reason: ...}
      negative_examples:                               # optional
        - {input: ..., output: ..., reason: ..., suggestion: ...}   # suggestion optional

An *encoding* selects which components reach the prompt, following the ablations of the Natural
Instructions paper (Mishra et al. 2022, the table of instruction-encoding ablations):

=================================  ====================================================================
encoding                           sections rendered (always in this order)
=================================  ====================================================================
``prompt``                         Prompt
``pos_examples``                   Positive Examples
``prompt_definition``              Definition, Prompt
``prompt_avoid``                   Prompt, Things to Avoid
``prompt_emphasis``                Prompt, Emphasis & Caution
``prompt_pos_examples``            Prompt, Positive Examples
``prompt_definition_pos_examples`` Definition, Prompt, Positive Examples
``full`` (default)                 Definition, Prompt, Things to Avoid, Emphasis & Caution,
                                   Positive Examples, Negative Examples
=================================  ====================================================================

Rendered layout: the sections are joined by one blank line (``"\\n\\n"``); an optional component that
is absent (or ``""``/``"-"``, the Natural Instructions "none" marker) is left out. Each section::

    Definition: {definition}
    Prompt: {prompt}
    Things to Avoid: {things_to_avoid}
    Emphasis & Caution: {emphasis_and_caution}
    Positive Example 1 -
    Input: {input}
    Output: {output}
    Explanation: {reason}
    Negative Example 1 -
    Input: {input}
    Output: {output}
    Explanation: {reason}
    Suggestion: {suggestion}

Consecutive examples are separate sections (``"\\n\\n"`` between them), numbered from 1 within their
kind. Text values are inserted verbatim after stripping surrounding whitespace.

Example:
    >>> s = {"prompt": "Classify.", "definition": "Pick a topic.", "positive_examples": [
    ...     {"input": "Stocks rose.", "output": "Business", "reason": "Markets."}]}
    >>> print(render_structured(s, "prompt_pos_examples"))
    Prompt: Classify.
    <BLANKLINE>
    Positive Example 1 -
    Input: Stocks rose.
    Output: Business
    Explanation: Markets.
"""

from __future__ import annotations

from typing import Any, Mapping

# The encodings are facts of the option schema (the `instruction_encoding` metadata key).
from instructeval_tasks.encodings import DEFAULT_ENCODING, ENCODING_COMPONENTS, ENCODINGS, NI_ENCODINGS

__all__ = ["DEFAULT_ENCODING", "ENCODINGS", "ENCODING_COMPONENTS", "render_structured", "structured_problems"]


HEADINGS = {
    "definition": "Definition",
    "prompt": "Prompt",
    "things_to_avoid": "Things to Avoid",
    "emphasis_and_caution": "Emphasis & Caution",
}
STRUCTURED_KEYS = frozenset(
    {"title", "prompt", "definition", "things_to_avoid", "emphasis_and_caution", "positive_examples", "negative_examples"}
)
_REQUIRED_TEXT = ("prompt", "definition")
_OPTIONAL_TEXT = ("title", "things_to_avoid", "emphasis_and_caution")
_EXAMPLE_KEYS = {
    "positive_examples": (("input", "output", "reason"), ()),
    "negative_examples": (("input", "output", "reason"), ("suggestion",)),
}
_NONE_MARKERS = ("", "-")


def _present(value: Any) -> bool:
    return isinstance(value, str) and value.strip() not in _NONE_MARKERS


def structured_problems(structured: Any) -> list[str]:
    """Everything wrong with a ``structured`` mapping (empty list: valid)."""
    from .bank_errors import TEMPLATE_SYNTAX

    if not isinstance(structured, Mapping):
        return [f"'structured' must be a mapping of Natural Instructions fields, got {type(structured).__name__}"]
    problems = []
    unknown = set(structured) - STRUCTURED_KEYS
    if unknown:
        problems.append(f"structured: unknown key(s) {sorted(unknown)}; allowed: {sorted(STRUCTURED_KEYS)}")

    def check_string(where: str, value: Any, required: bool) -> None:
        if value is None and not required:
            return
        if not isinstance(value, str):
            problems.append(f"structured.{where} must be a string, got {type(value).__name__}")
            return
        if required and value.strip() in _NONE_MARKERS:
            problems.append(f"structured.{where} is empty (or '-'); it is required")
        for token in TEMPLATE_SYNTAX:
            if token in value:
                problems.append(f"structured.{where} contains {token!r}, a template placeholder left in")

    for key in _REQUIRED_TEXT:
        if key not in structured:
            problems.append(f"structured: missing required key {key!r}")
        else:
            check_string(key, structured[key], True)
    for key in _OPTIONAL_TEXT:
        if key in structured:
            check_string(key, structured[key], False)
    for kind, (required, optional) in _EXAMPLE_KEYS.items():
        if kind not in structured:
            if kind == "positive_examples":
                problems.append("structured: missing required key 'positive_examples' (a list of at least one)")
            continue
        examples = structured[kind]
        if not isinstance(examples, list) or (kind == "positive_examples" and not examples):
            problems.append(f"structured.{kind} must be a {'non-empty ' if kind == 'positive_examples' else ''}list")
            continue
        for n, example in enumerate(examples):
            where = f"{kind}[{n}]"
            if not isinstance(example, Mapping):
                problems.append(f"structured.{where} must be a mapping with {', '.join(required)}")
                continue
            extra = set(example) - set(required) - set(optional)
            if extra:
                problems.append(f"structured.{where}: unknown key(s) {sorted(extra)}")
            for key in required:
                if key not in example:
                    problems.append(f"structured.{where}: missing {key!r}")
                else:
                    check_string(f"{where}.{key}", example[key], True)
            for key in optional:
                if key in example:
                    check_string(f"{where}.{key}", example[key], False)
    return problems


def _examples(kind: str, examples: list[Mapping[str, Any]]) -> list[str]:
    label = "Positive" if kind == "positive_examples" else "Negative"
    sections = []
    for n, example in enumerate(examples, start=1):
        lines = [
            f"{label} Example {n} -",
            f"Input: {example['input'].strip()}",
            f"Output: {example['output'].strip()}",
            f"Explanation: {example['reason'].strip()}",
        ]
        if _present(example.get("suggestion")):
            lines.append(f"Suggestion: {example['suggestion'].strip()}")
        sections.append("\n".join(lines))
    return sections


def render_structured(structured: Mapping[str, Any], encoding: str = DEFAULT_ENCODING) -> str:
    """The instruction text of a structured entry under ``encoding`` (layout: see the module docstring).

    Raises ``ValueError`` (a :class:`~instructeval_banks.BankError`) for an unknown encoding or an
    invalid mapping.
    """
    from .bank_errors import BankError

    if encoding not in ENCODING_COMPONENTS:
        only = " (it renders a Natural Instructions task file's own header, instructeval_ni_* tasks)" if encoding in NI_ENCODINGS else ""
        raise BankError(f"unknown instruction encoding {encoding!r} for a bank entry{only}; expected one of {', '.join(ENCODINGS)}")
    problems = structured_problems(structured)
    if problems:
        raise BankError(problems)
    sections: list[str] = []
    for component in ENCODING_COMPONENTS[encoding]:
        value = structured.get(component)
        if component in HEADINGS:
            if _present(value):
                sections.append(f"{HEADINGS[component]}: {value.strip()}")
        elif value:
            sections.extend(_examples(component, value))
    return "\n\n".join(sections)
