"""What a valid row of each task looks like, and the check that refuses any other row.

A row the prompt cannot render faithfully must never reach the model: a missing or ``null`` text
would print ``News: None``, a label outside the task's classes would be scored as a wrong answer
(and in the demo pool it would become an extra class). Every row of both splits is checked when
the task loads its data, against the HF field layout its ``task_spec.yaml`` declares (``ROW_FIELDS``), with exact types: the
label ``"2"`` is not the label ``2``, and ``true`` is not ``1``.

Example:
    >>> row_problem("agnews", {"text": "Stocks rose.", "label": 2}) is None
    True
    >>> row_problem("agnews", {"text": "Stocks rose.", "label": "2"})
    ('label', "is '2' (str); expected one of 0, 1, 2, 3 (an integer)")
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from instructeval_tasks.errors import UserError
from instructeval_tasks.specs import TASK_SPECS


class DataRowError(UserError, ValueError):
    """A row of a data file or dataset split that the task cannot use; names where and what is expected."""


_MISSING = object()


def _shown(value: Any) -> str:
    if value is _MISSING:
        return "is missing"
    if value is None:
        return "is null"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"is {text} ({type(value).__name__})"


@dataclass(frozen=True)
class Field:
    """One required field.

    ``check(value)`` is true for a valid Python value; ``arrow_ok(column)`` is a fast whole-column
    test on a pyarrow ``ChunkedArray`` (true means every value is valid; false sends the column to
    the row-by-row ``check`` to find the first bad row); ``expected`` says what is valid.
    """

    expected: str
    check: Callable[[Any], bool]
    arrow_ok: Callable[[Any], bool]


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_text_list(value: Any, length: int | None = None) -> bool:
    return (
        isinstance(value, (list, tuple)) and len(value) > 0 and (length is None or len(value) == length)
        and all(isinstance(v, str) for v in value)
    )


def _arrow_text(column) -> bool:
    import pyarrow as pa

    return column.null_count == 0 and (pa.types.is_string(column.type) or pa.types.is_large_string(column.type))


def _arrow_text_list(column, length: int | None = None) -> bool:
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if column.null_count or not (pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)):
        return False
    if not (pa.types.is_string(kind.value_type) or pa.types.is_large_string(kind.value_type)):
        return False
    if pc.list_flatten(column).null_count:
        return False
    lengths = pc.list_value_length(column)
    if length is None:
        return column.length() == 0 or pc.min(lengths).as_py() > 0
    return column.length() == 0 or (pc.min(lengths).as_py() == length and pc.max(lengths).as_py() == length)


TEXT = Field("a string", _is_text, _arrow_text)
ANSWERS = Field("a non-empty list of strings", _is_text_list, _arrow_text_list)


def one_of(values: Sequence[Any]) -> Field:
    """A label from ``values``, of exactly their type (``bool`` is not ``int``, ``"2"`` is not ``2``)."""
    python_type = type(values[0])
    kind = {int: "an integer", bool: "true or false", str: "a string"}[python_type]
    shown = ", ".join(repr(v) if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v) for v in values)
    allowed = {(type(v), v) for v in values}

    def arrow_ok(column) -> bool:
        import pyarrow as pa
        import pyarrow.compute as pc

        arrow_type = {
            int: pa.types.is_integer,
            bool: pa.types.is_boolean,
            str: lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
        }[python_type]
        if column.null_count or not arrow_type(column.type):
            return False
        return column.length() == 0 or pc.all(pc.is_in(column, value_set=pa.array(values, type=column.type))).as_py()

    return Field(f"one of {shown} ({kind})", lambda value: (type(value), value) in allowed, arrow_ok)


def _fixed_list(n: int) -> Field:
    return Field(f"a list of {n} strings", lambda v: _is_text_list(v, n), lambda c: _arrow_text_list(c, n))


def _aliases(value: Any) -> bool:
    return isinstance(value, Mapping) and _is_text_list(value.get("aliases"))


def _arrow_aliases(column) -> bool:
    import pyarrow as pa
    import pyarrow.compute as pc

    if column.null_count or not pa.types.is_struct(column.type) or column.type.get_field_index("aliases") < 0:
        return False
    return _arrow_text_list(pc.struct_field(column, "aliases"))


ALIASES = Field('an object whose "aliases" is a non-empty list of strings', _aliases, _arrow_aliases)
_WORDS = {"text": TEXT, "answers": ANSWERS, "aliases": ALIASES}


def field_check(declared: Any) -> Field:
    """The check of one ``fields:`` declaration of a ``task_spec.yaml`` (``text``, ``answers``,
    ``aliases``, ``{one_of: [...]}``, ``{strings: N}``; ``specs`` has validated its shape)."""
    if isinstance(declared, str):
        return _WORDS[declared]
    (form, value), = declared.items()
    return one_of(value) if form == "one_of" else _fixed_list(value)


# The fields each task reads (templates, targets, choices) and the values it accepts, in HF layout,
# as each task's task_spec.yaml declares them.
ROW_FIELDS: dict[str, dict[str, Field]] = {
    name: {field: field_check(declared) for field, declared in spec.fields.items()} for name, spec in TASK_SPECS.items()
}


def row_problem(task: str, row: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(field, "is ...; expected ...")`` for the first invalid field of ``row``, else None."""
    for name, spec in ROW_FIELDS[task].items():
        value = row.get(name, _MISSING)
        if value is _MISSING or not spec.check(value):
            return name, f"{_shown(value)}; expected {spec.expected}"
    return None


def row_error(where: str, task: str, field: str, problem: str) -> DataRowError:
    return DataRowError(
        f"{where}: field {field!r} {problem} for instructeval_{task}. Fix or remove the row."
    )


def check_rows(task: str, rows: Sequence[Mapping[str, Any]], where: Callable[[int], str]) -> None:
    """Raise :class:`DataRowError` for the first invalid row; ``where(i)`` locates row ``i``."""
    for i, row in enumerate(rows):
        problem = row_problem(task, row)
        if problem is not None:
            raise row_error(where(i), task, *problem)


def check_dataset(task: str, dataset, where: Callable[[int], str]) -> None:
    """:func:`check_rows` for a ``datasets.Dataset`` (an HF split): whole columns in pyarrow, fast.

    Only a column that fails the fast test is read into Python, to find its first bad row; a field
    absent from the split is reported at row 0.
    """
    first_bad: tuple[int, str, str] | None = None
    columns = dataset.with_format("arrow")  # pyarrow columns, in the dataset's row order
    for name, spec in ROW_FIELDS[task].items():
        if name not in dataset.column_names:
            candidate = (0, name, f"is missing; expected {spec.expected}")
        else:
            column = columns[name]
            if spec.arrow_ok(column):
                continue
            values = column.to_pylist()
            bad = next((i for i, value in enumerate(values) if not spec.check(value)), None)
            if bad is None:
                continue
            candidate = (bad, name, f"{_shown(values[bad])}; expected {spec.expected}")
        if first_bad is None or candidate[0] < first_bad[0]:
            first_bad = candidate
    if first_bad is not None and len(dataset) > 0:
        index, name, problem = first_bad
        raise row_error(where(index), task, name, problem)


def repeated_rows(task: str, rows: Iterable[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """``(first, repeat)`` indices of every row equal to an earlier one in every field the task reads
    (``ROW_FIELDS``), in row order. A repeated evaluation item weighs twice in every accuracy.

        >>> repeated_rows("imdb", [{"text": "a", "label": 0}, {"text": "b", "label": 1}, {"text": "a", "label": 0, "id": 7}])
        [(0, 2)]
    """
    seen: dict[str, int] = {}
    repeats: list[tuple[int, int]] = []
    names = list(ROW_FIELDS[task])
    for i, row in enumerate(rows):
        key = json.dumps([row.get(name) for name in names], sort_keys=True, default=str)
        if key in seen:
            repeats.append((seen[key], i))
        else:
            seen[key] = i
    return repeats
