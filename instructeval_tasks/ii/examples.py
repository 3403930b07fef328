"""Raw examples -> evaluation rows, as the original ``prepare_for_execution.py`` builds its test inputs.

Each row is ``{"id", "source_id", "input", "answers", "output"}``:

- ``input``: the example's ``input``; ``cause_and_effect``: two rows per example,
  ``"Sentence 1: {cause} Sentence 2: {effect}"`` then ``"Sentence 1: {effect} Sentence 2: {cause}"``,
  both with the answer ``[cause]``, numbered ``"1", "2", ...`` over the file as the original;
  ``common_concept``: ``", ".join(items)`` with the answers ``all_common_concepts``;
- ``answers``: every correct answer -- the field named by ``TASK_TO_ANSWERS`` when the task has one,
  else ``[output]`` (``names.ANSWER_FIELD_ABSENT_IN_DATA``: the released data lacks the field);
- ``output``: the answer a demonstration shows (the example's ``output``; ``cause``;
  the first common concept).

A pre-built row (an example that already has ``answers``, as ``instructeval induce`` writes for its
held-out slices) is taken as it is. A missing field is an error naming the file, the example and
the field.

Example:
    >>> build_rows("cause_and_effect", [("1", {"cause": "It rained.", "effect": "The street is wet."})], "f.json")[1]["input"]
    'Sentence 1: The street is wet. Sentence 2: It rained.'
"""

from __future__ import annotations

from typing import Any, Iterable

from ..errors import UserError
from .names import ANSWER_FIELD_ABSENT_IN_DATA, TASK_TO_ANSWERS


class ExampleError(UserError, ValueError):
    """An Instruction Induction example the task cannot use; names the file, the example and the field."""


def _field(example: dict[str, Any], key: str, where: str) -> Any:
    if key not in example:
        raise ExampleError(f"{where}: example lacks the field {key!r} (fields: {sorted(example)}); add it or remove the example")
    return example[key]


def _answers(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
        raise ExampleError(f"{where}: the correct answers must be a non-empty list of strings, got {value!r}")
    return list(value)


def build_rows(task: str, examples: Iterable[tuple[str, dict[str, Any]]], origin: str) -> list[dict[str, Any]]:
    """The rows of ``task`` (original name) from ``(id, example)`` pairs read from ``origin``."""
    rows: list[dict[str, Any]] = []
    answer_key = None if task in ANSWER_FIELD_ABSENT_IN_DATA else TASK_TO_ANSWERS.get(task)
    for example_id, example in examples:
        where = f"{origin}: example {example_id!r}"
        if not isinstance(example, dict):
            raise ExampleError(f"{where}: expected a JSON object")
        if "answers" in example:  # a pre-built row
            answers = _answers(example["answers"], where)
            rows.append({"id": str(len(rows) + 1), "source_id": str(example.get("source_id", example_id)),
                         "input": str(_field(example, "input", where)), "answers": answers,
                         "output": str(example.get("output", answers[0]))})
            continue
        if task == "cause_and_effect":
            cause, effect = _field(example, "cause", where), _field(example, "effect", where)
            for input_ in (f"Sentence 1: {cause} Sentence 2: {effect}", f"Sentence 1: {effect} Sentence 2: {cause}"):
                rows.append({"id": str(len(rows) + 1), "source_id": example_id, "input": input_,
                             "answers": [cause], "output": cause})
            continue
        if task == "common_concept":
            answers = _answers(_field(example, "all_common_concepts", where), where)
            input_ = ", ".join(_field(example, "items", where))
            rows.append({"id": str(len(rows) + 1), "source_id": example_id, "input": input_,
                         "answers": answers, "output": answers[0]})
            continue
        output = _field(example, "output", where)
        answers = _answers(_field(example, answer_key, where), where) if answer_key else [output]
        rows.append({"id": example_id, "source_id": example_id, "input": _field(example, "input", where),
                     "answers": answers, "output": output})
    return rows
