"""Paper-style tables (rows: methods, columns: tasks) and their Markdown, CSV and LaTeX renderings.

Rendering is deterministic: rows and columns in the catalog's order, fixed decimals (3 in Markdown
and LaTeX as in the paper, 6 in CSV), ``-0.000`` printed as ``0.000``, no timestamps.

Marks:

- best value per column (per group for grouped tables): bold (``**x**`` / ``\\textbf{x}``); in
  CSV a last row ``_best`` lists the best row id(s) per column, ``;``-separated. Best is the
  maximum for gains and accuracies, the minimum for sensitivities; values within ``tie_tolerance``
  (default 1e-9) of the best are tied and all marked;
- ``†`` after a cell averaged over fewer models than the column has (e.g. a model whose baseline
  mu was 0, or that lacks a method);
- ``–`` (``--`` in LaTeX, empty in CSV) for no data (e.g. RLPrompt on generation tasks);
- ``(est.)`` after a column title whose values are item-response estimates of a budgeted sweep
  (``estimate_marks.py``); in CSV a last row ``_estimated`` has ``true`` under those columns.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .catalog import METHOD_TITLES, TASK_TITLES, TYPE_TITLES
from .csv_cells import safe_text

DAGGER = "†"
MISSING = "–"


@dataclass
class Table:
    """A numeric table plus how to mark and print it.

    ``frame``: index = row ids (method ids, or a 2-level index ``(group, method)``), columns =
    column ids (task ids, ``cls``/``mcq``/``gqa``, or labels). ``counts``: models behind each cell,
    same shape; ``full``: models per column (keys ``(group, column)`` for grouped tables) -- cells
    with fewer get a dagger. ``ci_low``/``ci_high``:
    optional interval bounds, printed as ``x [lo, hi]``. ``labels``: display titles of row/column
    ids that are not tasks or methods.
    """

    name: str
    title: str
    frame: pd.DataFrame
    best: str | None = None
    decimals: int = 3
    counts: pd.DataFrame | None = None
    full: dict[Any, int] = field(default_factory=dict)
    note: str = ""
    ci_low: pd.DataFrame | None = None
    ci_high: pd.DataFrame | None = None
    row_header: tuple[str, ...] = ("Method",)
    tie_tolerance: float = 1e-9
    integer: bool = False
    labels: dict[Any, str] = field(default_factory=dict)
    estimated: frozenset = frozenset()  # column ids holding item-response estimates (estimate_marks.py)

    def column_title(self, col: Any) -> str:
        title = self.labels.get(col) or column_title(col)
        return f"{title} (est.)" if col in self.estimated else title

    def row_titles(self, row: Any) -> list[str]:
        parts = row if isinstance(row, tuple) else (row,)
        return [self.labels.get(p) or row_titles(p)[0] for p in parts]

    @property
    def grouped(self) -> bool:
        return isinstance(self.frame.index, pd.MultiIndex)

    def best_mask(self) -> pd.DataFrame:
        """True where a cell is (tied) best in its column (within its group)."""
        return pd.DataFrame(self.grid()["best"], index=self.frame.index, columns=self.frame.columns)

    def dagger(self, row: Any, col: Any) -> bool:
        """True when the cell averages fewer models than its column (its group's column) has."""
        i, j = self.frame.index.get_loc(row), self.frame.columns.get_loc(col)
        return bool(self.grid()["dagger"][i, j])

    def grid(self) -> dict[str, np.ndarray]:
        """Positional arrays: values, best (bool), dagger (bool), ci_low, ci_high (rows x columns)."""
        values = self.frame.to_numpy(dtype=float) if not self.frame.empty else np.zeros(self.frame.shape)
        shape = values.shape
        best = np.zeros(shape, dtype=bool)
        if self.best and values.size:
            rows = np.arange(shape[0])
            if self.grouped:
                level = np.asarray(self.frame.index.get_level_values(0))
                groups = [rows[level == g] for g in dict.fromkeys(level)]
            else:
                groups = [rows]
            for members in groups:
                for j in range(shape[1]):
                    column = values[members, j]
                    ok = np.isfinite(column)
                    if not ok.any():
                        continue
                    target = column[ok].max() if self.best == "max" else column[ok].min()
                    best[members[ok & (np.abs(column - target) <= self.tie_tolerance)], j] = True
        dagger = np.zeros(shape, dtype=bool)
        if self.counts is not None and self.full:
            counts = self.counts.reindex(index=self.frame.index, columns=self.frame.columns).to_numpy(dtype=float)
            for i, row in enumerate(self.frame.index):
                for j, col in enumerate(self.frame.columns):
                    key = (row[0], col) if self.grouped else col
                    want = self.full.get(key)
                    if want is not None and np.isfinite(values[i, j]) and np.isfinite(counts[i, j]):
                        dagger[i, j] = int(counts[i, j]) < int(want)
        out = {"values": values, "best": best, "dagger": dagger}
        for name in ("ci_low", "ci_high"):
            frame = getattr(self, name)
            out[name] = None if frame is None else frame.reindex(index=self.frame.index, columns=self.frame.columns).to_numpy(dtype=float)
        return out


def best_rows(column: pd.Series, best: str, tolerance: float = 1e-9) -> list[Any]:
    """Index labels of the best finite values (max or min), ties within ``tolerance`` included.

    Example:
        >>> best_rows(pd.Series([1.0, 3.0, 3.0 + 1e-12, float("nan")], index=list("abcd")), "max")
        ['b', 'c']
    """
    values = column.astype(float)
    finite = values[values.notna() & values.map(math.isfinite)]
    if finite.empty:
        return []
    target = finite.max() if best == "max" else finite.min()
    return [idx for idx, v in finite.items() if abs(v - target) <= tolerance]


def _isnan(value: Any) -> bool:
    try:
        return value is None or math.isnan(float(value))
    except (TypeError, ValueError):
        return False


def fmt(value: Any, decimals: int, integer: bool = False) -> str:
    """Fixed-point text; ``-0.000`` becomes ``0.000``; NaN becomes ``''``.

    Example:
        >>> fmt(-0.0001, 3), fmt(2.5, 1), fmt(float("nan"), 3), fmt(3.0, 3, integer=True)
        ('0.000', '2.5', '', '3')
    """
    if _isnan(value):
        return ""
    if integer:
        return str(int(round(float(value))))
    text = f"{float(value):.{decimals}f}"
    if float(text) == 0:
        text = f"{0.0:.{decimals}f}"
    return text


def column_title(col: Any) -> str:
    return TASK_TITLES.get(col, TYPE_TITLES.get(col, METHOD_TITLES.get(col, str(col))))


def row_titles(row: Any) -> list[str]:
    parts = row if isinstance(row, tuple) else (row,)
    return [METHOD_TITLES.get(p, str(p)) for p in parts]


def _cell_text(table: Table, grid: dict, i: int, j: int, *, latex: bool) -> str:
    text = fmt(grid["values"][i, j], table.decimals, table.integer)
    if not text:
        return "--" if latex else MISSING
    if latex and text.startswith("-"):
        text = "$-$" + text[1:]
    if grid["ci_low"] is not None and grid["ci_high"] is not None:
        lo, hi = fmt(grid["ci_low"][i, j], table.decimals), fmt(grid["ci_high"][i, j], table.decimals)
        if lo and hi:
            if latex:
                lo, hi = (("$-$" + x[1:]) if x.startswith("-") else x for x in (lo, hi))
            text += f" [{lo}, {hi}]"
    return text


def _marks(table: Table, grid: dict, i: int, j: int, *, latex: bool) -> str:
    text = _cell_text(table, grid, i, j, latex=latex)
    if text in (MISSING, "--"):
        return text
    if grid["best"][i, j]:
        text = f"\\textbf{{{text}}}" if latex else f"**{text}**"
    if grid["dagger"][i, j]:
        text += "$^\\dagger$" if latex else DAGGER
    return text


def _has_dagger(table: Table) -> bool:
    return bool(table.grid()["dagger"].any())


def to_markdown(table: Table) -> str:
    """A GitHub-flavoured Markdown table with a title line and footnotes."""
    grid = table.grid()
    header = list(table.row_header) + [table.column_title(c) for c in table.frame.columns]
    lines = [f"**{table.title}**", "", "| " + " | ".join(_md_escape(h) for h in header) + " |"]
    lines.append("|" + "|".join(["---"] * len(table.row_header) + ["---:"] * len(table.frame.columns)) + "|")
    previous = None
    for i, row in enumerate(table.frame.index):
        labels = table.row_titles(row)
        if table.grouped and previous is not None and labels[0] == previous:
            shown = [""] + labels[1:]
        else:
            shown = labels
        previous = labels[0]
        cells = [_marks(table, grid, i, j, latex=False) for j in range(len(table.frame.columns))]
        lines.append("| " + " | ".join(_md_escape(x) for x in shown + cells) + " |")
    notes = _notes(table)
    if notes:
        lines += [""] + notes
    return "\n".join(lines) + "\n"


def _notes(table: Table) -> list[str]:
    notes = []
    if table.best:
        notes.append(f"Bold: best in its column ({'highest' if table.best == 'max' else 'lowest'}); ties all bold.")
    if np.isnan(table.grid()["values"]).any() and not table.integer:
        notes.append(f"{MISSING} no value: no data, or undefined (e.g. every model's baseline mu was 0; see the warnings).")
    if _has_dagger(table):
        notes.append(f"{DAGGER} averaged over fewer models than the column has (see the warnings).")
    if table.note:
        notes.append(table.note)
    return notes


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def to_csv(table: Table) -> str:
    """CSV with ids (not titles), 6 decimals, empty cells for no data, and a ``_best`` row."""
    decimals = max(table.decimals, 6)
    names = table.frame.index.names if table.grouped else [table.frame.index.name or "method"]
    ids = [str(n) if n else ("group" if i == 0 and table.grouped else "method") for i, n in enumerate(names)]
    header = ids + [str(c) for c in table.frame.columns]
    with_ci = table.ci_low is not None and table.ci_high is not None
    if with_ci:
        header = ids + [f"{c}{suffix}" for c in table.frame.columns for suffix in ("", "_ci_low", "_ci_high")]
    grid = table.grid()
    n_cols = len(table.frame.columns)
    out = io.StringIO()
    out.write(",".join(_csv_text(h) for h in header) + "\n")
    for i, row in enumerate(table.frame.index):
        parts = list(row) if isinstance(row, tuple) else [row]
        values = []
        for j in range(n_cols):
            values.append(fmt(grid["values"][i, j], decimals, table.integer))
            if with_ci:
                values.append(fmt(grid["ci_low"][i, j], decimals))
                values.append(fmt(grid["ci_high"][i, j], decimals))
        # ids are text (formula-escaped); values are numbers and stay numbers, "-1.5" included
        out.write(",".join([_csv_text(str(x)) for x in parts] + [_csv_escape(str(x)) for x in values]) + "\n")
    if table.best:
        index = list(table.frame.index)
        if table.grouped:
            groups = list(dict.fromkeys(r[0] for r in index))
            blocks = [(g, [i for i, r in enumerate(index) if r[0] == g]) for g in groups]
        else:
            blocks = [(None, list(range(len(index))))]
        for group, members in blocks:
            cells = [
                ";".join(str(index[i][1] if table.grouped else index[i]) for i in members if grid["best"][i, j])
                for j in range(n_cols)
            ]
            if with_ci:
                cells = [x for c in cells for x in (c, "", "")]
            lead = [group, "_best"] if table.grouped else ["_best"]
            out.write(",".join(_csv_text(str(x)) for x in lead + cells) + "\n")
    if table.estimated:  # which columns hold item-response estimates (estimate_marks.py)
        cells = ["true" if c in table.estimated else "" for c in table.frame.columns]
        if with_ci:
            cells = [x for c in cells for x in (c, "", "")]
        lead = ["", "_estimated"] if table.grouped else ["_estimated"]
        out.write(",".join(_csv_text(str(x)) for x in lead + cells) + "\n")
    return out.getvalue()


def _csv_escape(text: str) -> str:
    if any(ch in text for ch in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _csv_text(text: str) -> str:
    """A text cell: formula-escaped (``csv_cells.safe_text``), then CSV-quoted."""
    return _csv_escape(safe_text(text))


_LATEX_SPECIALS = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}"}


def latex_escape(text: str) -> str:
    """Escape LaTeX special characters in plain text.

    Example:
        >>> latex_escape("a_b & 50%")
        'a\\\\_b \\\\& 50\\\\%'
    """
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in str(text)).replace("≥", r"$\geq$").replace(">=", r"$\geq$")


def to_latex(table: Table) -> str:
    """A booktabs ``tabular`` (needs ``\\usepackage{booktabs}``), preceded by a comment with the title."""
    grid = table.grid()
    n_rows = len(table.row_header)
    spec = "l" * n_rows + "r" * len(table.frame.columns)
    lines = [f"% {table.title}", f"\\begin{{tabular}}{{{spec}}}", "\\toprule"]
    header = [latex_escape(h) for h in table.row_header] + [latex_escape(table.column_title(c)) for c in table.frame.columns]
    lines.append(" & ".join(header) + " \\\\")
    lines.append("\\midrule")
    previous = None
    for i, row in enumerate(table.frame.index):
        labels = table.row_titles(row)
        if table.grouped:
            if previous is not None and labels[0] != previous:
                lines.append("\\midrule")
            shown = ([""] if labels[0] == previous else [labels[0]]) + labels[1:]
            previous = labels[0]
        else:
            shown = labels
        cells = [_marks(table, grid, i, j, latex=True) for j in range(len(table.frame.columns))]
        lines.append(" & ".join([latex_escape(x) for x in shown] + cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    for note in _notes(table):
        lines.append("% " + note)
    return "\n".join(lines) + "\n"


def to_html(table: Table) -> str:
    """An HTML ``<table>`` (for the report), marks as in Markdown."""
    import html

    grid = table.grid()
    out = [f'<table class="t"><caption>{html.escape(table.title)}</caption><thead><tr>']
    out += [f"<th>{html.escape(h)}</th>" for h in table.row_header]
    out += [f"<th>{html.escape(table.column_title(c))}</th>" for c in table.frame.columns]
    out.append("</tr></thead><tbody>")
    for i, row in enumerate(table.frame.index):
        out.append("<tr>")
        out += [f'<th class="r">{html.escape(x)}</th>' for x in table.row_titles(row)]
        for j in range(len(table.frame.columns)):
            text = html.escape(_cell_text(table, grid, i, j, latex=False))
            if text != MISSING and grid["best"][i, j]:
                text = f"<b>{text}</b>"
            if grid["dagger"][i, j]:
                text += DAGGER
            out.append(f"<td>{text}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    notes = _notes(table)
    if notes:
        out.append('<p class="note">' + "<br>".join(html.escape(n) for n in notes) + "</p>")
    return "".join(out)


def write_table(table: Table, folder, formats: Sequence[str] = ("md", "csv", "tex")) -> list[str]:
    """Write ``<name>.md``, ``<name>.csv``, ``<name>.tex`` into ``folder``; returns the file names."""
    from pathlib import Path

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    render = {"md": to_markdown, "csv": to_csv, "tex": to_latex}
    names = []
    for ext in formats:
        path = folder / f"{table.name}.{ext}"
        path.write_text(render[ext](table), encoding="utf-8", newline="\n")
        names.append(path.name)
    return names
