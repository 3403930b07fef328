"""Pieces every section of ``report.html`` draws with: an inline figure and a plain table.

Example:
    >>> import pandas as pd
    >>> frame_html(pd.DataFrame({"model": ["a"], "score": [0.5]}), decimals=1)
    '<table class="t"><thead><tr><th>model</th><th>score</th></tr></thead><tbody><tr><td class="l">a</td><td>0.5</td></tr></tbody></table>'
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path

import numpy as np
import pandas as pd


def img(path: Path) -> str:
    """An SVG figure inlined as a data URI (the report is one self-contained file)."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img class="fig" alt="{html.escape(path.stem)}" src="data:image/svg+xml;base64,{data}">'


def frame_html(frame: pd.DataFrame, caption: str = "", decimals: int = 3) -> str:
    """A frame as an HTML table: numbers right-aligned (NaN and None as empty cells), text left."""
    if frame is None or frame.empty:
        return "<p>(none)</p>"
    out = ['<table class="t">']
    if caption:
        out.append(f"<caption>{html.escape(caption)}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns) + "</tr></thead><tbody>")
    for row in frame.itertuples(index=False):
        cells = []
        for value in row:
            if value is None:  # no data: an empty cell, not the word "None"
                cells.append("<td></td>")
            elif isinstance(value, (float, np.floating)):
                text = "" if math.isnan(value) else f"{value:.{decimals}f}"
                cells.append(f"<td>{text}</td>")
            elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
                cells.append(f"<td>{value}</td>")  # counts are numbers: right-aligned like the rest
            else:
                cells.append(f'<td class="l">{html.escape(str(value))}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)
