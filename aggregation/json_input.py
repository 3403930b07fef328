"""Parsing JSON written by other programs: every failure is a :class:`BadJson` naming the line.

Results and samples files come from runs that may have been killed mid-write, copied through
tools that change the encoding, or crafted. Python's own errors for these are a codec
traceback (a non-UTF-8 byte), a ``RecursionError`` (``[[[[...`` nested thousands deep), or a
``ValueError`` (an integer of more than 4,300 digits). :func:`parse_json_bytes` turns each into
one message with the line and column, so the caller can drop that input with a warning and keep
the others.

Nesting is limited to :data:`MAX_DEPTH` levels (a harness results file nests about 8): deeper
JSON is refused even when Python could parse it, since later steps (copies, ``json.dumps``) would
recurse again on a deeper stack.

Example::

    >>> parse_json_bytes(b'{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> try:
    ...     parse_json_bytes(b'{"a":\\n' + b'[' * 100_000)
    ... except BadJson as err:
    ...     print(err)
    nested more than 100 levels deep at line 2 column 100 (not a results file?)
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 100
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class BadJson(ValueError):
    """Text that is not usable JSON; ``line`` (1-based) locates the problem when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def decode_utf8(data: bytes) -> str:
    """``data`` as UTF-8 text (a leading BOM dropped), or :class:`BadJson` with the line of the bad byte."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        start = err.start
        line = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise BadJson(f"not UTF-8: byte 0x{data[start]:02x} at line {line} column {column}", line) from None


def too_deep_at(text: str, limit: int = MAX_DEPTH) -> tuple[int, int] | None:
    """``(line, column)`` where the nesting of ``text`` first exceeds ``limit`` levels, or ``None``."""
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return _line_col(text, match.start())
        elif token in "]}":
            depth -= 1
    return None


def _depth(value: Any, limit: int) -> bool:
    """True when ``value`` nests deeper than ``limit`` (iterative: no recursion on crafted input)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def parse_json_text(text: str) -> Any:
    """Parse ``text``; :class:`BadJson` (with line and column) for anything but usable JSON."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        truncated = err.pos >= len(text.rstrip()) - 1 or err.msg.startswith("Unterminated string")
        hint = " (truncated?)" if truncated else ""
        raise BadJson(f"not valid JSON{hint} at line {err.lineno} column {err.colno}: {err.msg}", err.lineno) from None
    except RecursionError:
        raise _too_deep(text) from None
    except ValueError as err:  # e.g. an integer longer than Python's digit limit
        raise BadJson(f"not usable JSON: {err}") from None
    if _depth(value, MAX_DEPTH):
        raise _too_deep(text)
    return value


def _too_deep(text: str) -> BadJson:
    where = too_deep_at(text)
    if where is None:  # unreachable with MAX_DEPTH far below the recursion limit
        return BadJson(f"nested too deeply (more than {MAX_DEPTH} levels)")
    line, column = where
    return BadJson(f"nested more than {MAX_DEPTH} levels deep at line {line} column {column} (not a results file?)", line)


def parse_json_bytes(data: bytes) -> Any:
    """:func:`decode_utf8` then :func:`parse_json_text`."""
    return parse_json_text(decode_utf8(data))


def parse_json_line(raw: bytes) -> Any:
    """One line of a JSONL file (``parse_json_bytes``); a :class:`BadJson` locates the problem by column
    alone, the caller naming the line.

        >>> try:
        ...     parse_json_line(b'{"a": 1,}')
        ... except BadJson as err:
        ...     print(err)
        not valid JSON (truncated?) at column 9: Expecting property name enclosed in double quotes
    """
    try:
        return parse_json_bytes(raw)
    except BadJson as err:
        raise BadJson(str(err).replace(" at line 1 column ", " at column ")) from None


__all__ = ["BadJson", "MAX_DEPTH", "decode_utf8", "parse_json_bytes", "parse_json_line", "parse_json_text", "too_deep_at"]
