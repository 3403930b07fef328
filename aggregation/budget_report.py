"""The "Budgeted estimates" section: CSV/Markdown files, one figure per grid and the HTML part.

Every title says "estimate"; the numbers are fractions in [0, 1] (``budgeted.BudgetEstimates``).
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from instructeval_tasks.estimation import CHOICE_SCORES

from .budgeted import BudgetEstimates

FRAMES = ("grids", "instructions", "methods", "quantiles", "best")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).strip("-") or "x"


def figure_stem(model: str, task: str, grid: str) -> str:
    return f"estimates_{_slug(model)}__{_slug(grid)}"


def _markdown(frame: pd.DataFrame, decimals: int) -> str:
    def cell(value) -> str:
        if isinstance(value, (float, np.floating)):
            return "" if np.isnan(value) else f"{value:.{decimals}f}"
        return str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def write_budget_files(estimates: BudgetEstimates, data_dir: Path, tables_dir: Path, decimals: int = 3) -> list[str]:
    """``data/budget_<frame>.csv`` and ``tables/budget_estimates.md``; returns the file names."""
    from .csv_cells import safe_frame

    names = []
    for name in FRAMES:
        path = data_dir / f"budget_{name}.csv"
        text = safe_frame(getattr(estimates, name)).to_csv(index=False, float_format="%.6f", lineterminator="\n")
        path.write_text(text, encoding="utf-8", newline="\n")
        names.append(path.name)
    lines = ["**Budgeted estimates: estimates of accuracy on the full grid from the observed cells (not exact accuracies)**", ""]
    for key, frame in (("Grids", estimates.grids), ("Method means, relative gain and difference to null (estimates)", estimates.methods),
                       ("Quantiles across instructions (estimates)", estimates.quantiles),
                       ("Best instruction (estimate)", estimates.best),
                       ("Instructions (estimates)", estimates.instructions)):
        lines += [f"*{key}*", "", _markdown(frame, decimals), ""]
    path = tables_dir / "budget_estimates.md"
    path.write_text("\n".join(lines), encoding="utf-8", newline="\n")
    return names + [path.name]


def budget_plots(estimates: BudgetEstimates, folder: Path) -> list[Path]:
    """Per grid: every instruction's estimate with its interval, sorted, coloured by method."""
    from .plots import _pyplot, _save

    plt = _pyplot()
    paths: list[Path] = []
    for (model, task, grid), part in estimates.instructions.groupby(["model", "task", "grid"], sort=True):
        part = part.sort_values("estimate", kind="mergesort").reset_index(drop=True)
        methods = sorted(set(part["method"]))
        colors = plt.get_cmap("tab10")
        fig, ax = plt.subplots(figsize=(7.5, 0.12 * len(part) + 1.8))
        y = np.arange(len(part))
        for k, method in enumerate(methods):
            rows = part["method"] == method
            lo = (part.loc[rows, "estimate"] - part.loc[rows, "ci_low"]).clip(lower=0)
            hi = (part.loc[rows, "ci_high"] - part.loc[rows, "estimate"]).clip(lower=0)
            err = None if lo.isna().all() else [lo.fillna(0), hi.fillna(0)]
            ax.errorbar(part.loc[rows, "estimate"], y[rows.to_numpy()], xerr=err, fmt="o", ms=3, lw=0.8,
                        color=colors(k % 10), label=method)
        if len(part) <= 40:  # beyond that the names overlap: the table below lists them
            ax.set_yticks(y, [f"{m}/{i}" for m, i in zip(part["method"], part["instruction"])], fontsize=6)
        else:
            ax.set_yticks([])
        estimator = estimates.grids[(estimates.grids["model"] == model) & (estimates.grids["task"] == task)
                                    & (estimates.grids["grid"] == grid)]["estimator"]
        words = "from the label scores" if len(estimator) and str(estimator.iloc[0]).startswith(CHOICE_SCORES) \
            else "item-response model"
        ax.set_xlabel(f"estimated accuracy ({words})")
        ax.set_title(f"{model} / {task} / {grid}: estimates from a budgeted sweep", fontsize=9)
        ax.legend(fontsize=7, frameon=False, loc="lower right")
        paths += _save(fig, folder, figure_stem(model, task, grid))
        plt.close(fig)
    return paths


def _design_words(design: str) -> str:
    """The grid note's words for its ``design`` column (``budgeted._design_of``).

    Example:
        >>> _design_words("balanced, extended to 0.25"), _design_words("adaptive")
        ('balanced design, extended to 0.25', 'adaptive design')
    """
    dealt, extended, shares = design.partition(", extended")
    return f"{dealt} design{extended}{shares}"


def _class_words(n_classes: int) -> str:
    """How the fit treated the items' gold classes, for the grid's note."""
    if n_classes > 1:
        return f"instruction and method effects per gold class ({n_classes} classes)"
    return "one effect per instruction (no gold classes)"


def _estimator_words(row: Mapping) -> str:
    """The grid note's words on how its cells were estimated."""
    estimator = str(row.get("estimator") or "")
    sds = f"SDs (logits): instruction {row['s_instruction']:.3f}, item {row['s_item']:.3f}"
    if estimator.startswith("choice scores"):
        return (f"estimated from the observed cells' label scores ({estimator.split('(', 1)[-1].rstrip(')')}): each "
                f"item's lean and each instruction's pull toward each label, calibrated on the answers; {sds}")
    return f"{sds}; {_class_words(int(row['item_classes']))}"


def budget_html(estimates: BudgetEstimates, figures: Mapping[str, Path], img: Callable[[Path], str],
                frame_html: Callable[..., str]) -> str:
    parts = [
        "<h2>Budgeted estimates</h2>",
        "<p>These (model, task, setting) grids come from budgeted sweeps (<code>instructeval run --budget</code>): "
        "each instruction was evaluated on a share of the test items, and its accuracy on all of them is an "
        "<b>estimate</b> fitted to the observed cells: on a classification grid whose samples hold the score of "
        "every label, from those scores (each item's lean and each instruction's pull toward each label) calibrated "
        "by a logistic model on the observed answers; otherwise by a logistic item-response model (method, "
        "instruction and item effects; the method and instruction effects one per gold class where items have "
        "classes). Each grid's note says which. "
        f"Intervals are {estimates.level:.0%} percentiles of posterior predictive draws of the whole "
        "grid. Every table column built "
        "from them is marked <i>(est.)</i>. Intervals too wide for the question: rerun the sweep's command "
        "with <code>--budget-extend</code> and a larger share (e.g. <code>--budget 0.1 --budget-extend 0.25</code>), "
        "which keeps these cells and adds those the model is least sure of (docs/budget.md, <i>Extending a "
        "budget</i>).</p>",
    ]
    for (model, task, grid), grid_row in estimates.grids.groupby(["model", "task", "grid"], sort=True):
        row = grid_row.iloc[0]
        parts.append(f"<h3>{html.escape(f'{model} / {task} / {grid}')} (estimates)</h3>")
        parts.append(f"<p class='note'>{int(row['observed_cells'])} of {int(row['grid_cells'])} cells observed "
                     f"({row['observed_share']:.1%}, {html.escape(_design_words(str(row['design'])))}); "
                     f"{int(row['n_instructions'])} instructions x {int(row['n_items'])} items; "
                     f"metric {html.escape(str(row['metric']))}; {html.escape(_estimator_words(row))}; "
                     f"{int(row['n_boot'])} predictive draws.</p>")
        pick = lambda frame: frame[(frame["model"] == model) & (frame["task"] == task) & (frame["grid"] == grid)]  # noqa: E731
        drop = ["model", "task", "grid", "setting"]
        parts.append(frame_html(pick(estimates.best).drop(columns=drop), "Best instruction (estimate, P(best))"))
        quantiles = pick(estimates.quantiles).drop(columns=drop)
        quantiles = quantiles.assign(quantile=[f"{q:.0%}" for q in quantiles["quantile"]])
        parts.append(frame_html(quantiles, "Quantiles of accuracy across instructions (estimates)"))
        parts.append(frame_html(pick(estimates.methods).drop(columns=drop),
                                "Method means (estimates), relative gain within the grid (%) and difference to null"))
        stem = figure_stem(model, task, grid)
        if stem in figures:
            parts.append(img(figures[stem]))
        top = pick(estimates.instructions).sort_values("estimate", ascending=False, kind="mergesort").drop(columns=drop)
        parts.append(frame_html(top, "Instructions (estimates; observed accuracy on their own items beside)"))
    return "\n".join(parts)
