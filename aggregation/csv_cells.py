"""CSV cells that a spreadsheet will not run as formulas (the OWASP CSV-injection rule).

A spreadsheet opening a CSV treats a cell that starts with ``=``, ``+``, ``-`` or ``@`` (and, in
some programs, a tab or carriage return) as a formula: a method id, a model name or an
instruction text such as ``=HYPERLINK(...)`` taken from a results file would run. Such *text*
cells get a leading single quote, which spreadsheets show as text and do not evaluate. Numbers
are left alone: ``-1.5`` is a number, not a formula, and stays machine-readable.

Example::

    >>> safe_text("=1+2"), safe_text("-1.500000"), safe_text("-custom"), safe_text("generic")
    ("'=1+2", '-1.500000', "'-custom", 'generic')
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|nan)", re.IGNORECASE)


def safe_text(text: str) -> str:
    """``text`` with a leading ``'`` when a spreadsheet would read it as a formula; numbers unchanged."""
    if text.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names pass :func:`safe_text`; numeric columns untouched."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column].dtype):
            out[column] = out[column].map(lambda v: safe_text(v) if isinstance(v, str) else v)
    out.columns = [safe_text(c) if isinstance(c, str) else c for c in out.columns]
    return out


__all__ = ["FORMULA_STARTS", "safe_frame", "safe_text"]


def write_csv(frame: pd.DataFrame | None, path: Path) -> None:
    """``frame`` as the report's CSV (cells made safe, six decimals, ``\\n`` line ends); nothing for None."""
    if frame is None:
        return
    text = safe_frame(frame).to_csv(index=False, float_format="%.6f", lineterminator="\n")
    path.write_text(text, encoding="utf-8", newline="\n")
