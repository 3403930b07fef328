"""Figures (matplotlib, Agg backend): relative-gain heatmaps and sensitivity bar charts.

Each figure is written as PNG and SVG. Output is reproducible: the SVG has no date
(``metadata={"Date": None}``) and fixed element ids (``svg.hashsalt``), the PNG no software stamp.
matplotlib is imported only here; without it the report says that plots were skipped.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .tables import Table


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "instructeval-aggregation"
    matplotlib.rcParams["svg.fonttype"] = "path"
    return plt


def _save(fig, folder: Path, name: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    png = folder / f"{name}.png"
    svg = folder / f"{name}.svg"
    fig.savefig(png, dpi=110, bbox_inches="tight", metadata={"Software": None})
    fig.savefig(svg, bbox_inches="tight", metadata={"Date": None, "Creator": None})
    return [png, svg]


def heatmap(table: Table, folder: Path) -> list[Path]:
    """Method x task heatmap of a gain table, diverging colours centred at 0, values annotated."""
    plt = _pyplot()
    data = table.frame.to_numpy(dtype=float)
    finite = data[np.isfinite(data)]
    bound = float(np.max(np.abs(finite))) if finite.size else 1.0
    bound = bound or 1.0
    rows, cols = data.shape
    fig, ax = plt.subplots(figsize=(1.1 * cols + 2.2, 0.5 * rows + 1.6))
    masked = np.ma.masked_invalid(data)
    cmap = plt.get_cmap("RdBu").with_extremes(bad="#eeeeee")
    image = ax.imshow(masked, cmap=cmap, vmin=-bound, vmax=bound, aspect="auto")
    ax.set_xticks(range(cols), [table.column_title(c) for c in table.frame.columns], rotation=30, ha="right")
    ax.set_yticks(range(rows), [" / ".join(table.row_titles(r)) for r in table.frame.index])
    for i in range(rows):
        for j in range(cols):
            value = data[i, j]
            text = "–" if not math.isfinite(value) else f"{value:.{min(table.decimals, 2)}f}"
            color = "white" if math.isfinite(value) and abs(value) > 0.6 * bound else "black"
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color=color)
    fig.colorbar(image, ax=ax, label="mean relative gain (%)")
    ax.set_title(table.title, fontsize=9)
    paths = _save(fig, folder, f"heatmap_{table.name}")
    plt.close(fig)
    return paths


def sensitivity_bars(table: Table, folder: Path) -> list[Path]:
    """Grouped bars: one group per task, one bar per method (100 x SD, lower is better)."""
    plt = _pyplot()
    data = table.frame.to_numpy(dtype=float)
    rows, cols = data.shape
    fig, ax = plt.subplots(figsize=(1.2 * cols + 2.5, 3.6))
    width = 0.8 / max(rows, 1)
    colors = plt.get_cmap("tab10")
    x = np.arange(cols)
    for i, row in enumerate(table.frame.index):
        values = np.where(np.isfinite(data[i]), data[i], 0.0)
        ax.bar(x - 0.4 + width * (i + 0.5), values, width, label=" / ".join(table.row_titles(row)), color=colors(i % 10))
    ax.set_xticks(x, [table.column_title(c) for c in table.frame.columns], rotation=30, ha="right")
    ax.set_ylabel("100 x SD (lower is better)")
    ax.set_title(table.title, fontsize=9)
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    paths = _save(fig, folder, f"bars_{table.name}")
    plt.close(fig)
    return paths


def make_plots(tables: dict[str, Table], folder: Path) -> list[Path]:
    """Heatmaps of every ``gain_*`` table and bars of every ``sensitivity_*`` table."""
    paths: list[Path] = []
    for name in sorted(tables):
        table = tables[name]
        if table.frame.empty:
            continue
        if name.startswith("gain_"):
            paths += heatmap(table, folder)
        elif name.startswith("sensitivity_"):
            paths += sensitivity_bars(table, folder)
    return paths
