"""The report's "Leaderboard comparison" section: tables (Markdown/CSV/LaTeX through ``tables``),
one figure per task, the HTML part, and :func:`add_leaderboard`, which attaches it all to an
:class:`~instructeval_aggregation.pipeline.Aggregates`.

Tables (accuracies and stock scores in %, spread in points, percentiles 0-100):

- ``leaderboard_scores``: per (model, task): stock task, metric, n-shot, items (and whether they are
  the InstructEval runs' items); stock score; few-shot and zero-shot min, median, max, spread and the
  stock score's percentile among the instructions;
- ``leaderboard_methods``: the same distribution per method;
- ``leaderboard_rankings``: per (task, setting) across models: Kendall's tau-b min and median, share
  of model pairs flipped under at least one instruction (with bootstrap CIs), and the instruction
  that changes the ranking most.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from .catalog import TASK_TITLES
from .issues import AggregationError, IssueLog
from .leaderboard import SETTINGS, LeaderboardComparison, compare_leaderboard
from .leaderboard_loading import load_stock_results
from .tables import Table, to_html

SETTING_TITLES = {"few_shot": "Few-shot", "zero_shot": "Zero-shot"}
DEFINITIONS = (
    "Percentile: 100 (#{a < s} + 0.5 #{a = s}) / n over the model's instruction accuracies a in the setting "
    "(scipy percentileofscore kind='mean'); spread: 100 (max - min) points; median: numpy.median."
)
RANKING_NOTE = (
    "Kendall's tau-b (scipy.stats.kendalltau default) between the stock ranking and each instruction's ranking of the "
    "models; flips: model pairs ordered strictly one way by the stock scores and strictly the other way under at least "
    "one instruction, over the pairs the stock scores order strictly; most changing: lowest tau-b, then most flips."
)


def _pct(value: Any) -> float:
    return 100.0 * float(value) if value is not None and not (isinstance(value, float) and math.isnan(value)) else math.nan


def leaderboard_tables(comparison: LeaderboardComparison, decimals: int = 1) -> dict[str, Table]:
    """The section's tables (empty frames give no table)."""
    tables: dict[str, Table] = {}
    labels = {**TASK_TITLES, **{f"{s}_{k}": f"{SETTING_TITLES[s]} {k}" for s in SETTINGS for k in ("min", "median", "max", "spread", "percentile")},
              "stock": "Stock score", **SETTING_TITLES}
    scores = comparison.scores
    if not scores.empty:
        index = pd.MultiIndex.from_tuples(
            [(r.model, r.task, f"{r.stock_task} {r.stock_metric} {_shots(r.num_fewshot)}", f"{_int(r.n_items)} ({r.same_items})", r.ie_metric)
             for r in scores.itertuples(index=False)],
            names=["model", "task", "stock_protocol", "items", "instructeval_metric"],
        )
        columns = ["stock"] + [f"{s}_{k}" for s in SETTINGS for k in ("min", "median", "max", "spread", "percentile")]
        frame = pd.DataFrame(index=index, columns=columns, dtype=float)
        for i, r in enumerate(scores.itertuples(index=False)):
            row = r._asdict()
            frame.iloc[i, 0] = _pct(row["stock"])
            for j, col in enumerate(columns[1:], start=1):
                value = row.get(col)
                frame.iloc[i, j] = value if col.endswith(("spread", "percentile")) else _pct(value)
        tables["leaderboard_scores"] = Table(
            "leaderboard_scores",
            "Leaderboard comparison (two protocols): stock score vs InstructEval accuracy across instructions (%; spread in points; percentile of the stock score)",
            frame, decimals=decimals, row_header=("Model", "Task", "Stock (metric, n-shot)", "Items (same as InstructEval?)", "InstructEval metric"),
            labels=labels, note=DEFINITIONS,
        )
    methods = comparison.methods
    if not methods.empty:
        index = pd.MultiIndex.from_tuples(
            [(r.model, r.task, r.setting, r.method, str(int(r.n))) for r in methods.itertuples(index=False)],
            names=["model", "task", "setting", "method", "instructions"],
        )
        frame = pd.DataFrame({"min": methods["min"].map(_pct).to_numpy(),
                              "median": methods["median"].map(_pct).to_numpy(), "max": methods["max"].map(_pct).to_numpy(),
                              "stock": methods["stock"].map(_pct).to_numpy()}, index=index)
        tables["leaderboard_methods"] = Table(
            "leaderboard_methods", "Leaderboard comparison (two protocols) per method: InstructEval accuracy across the method's instructions (%)",
            frame, decimals=decimals, row_header=("Model", "Task", "Setting", "Method", "Instructions"),
            labels={**labels, "n": "Instructions", "min": "Min", "median": "Median", "max": "Max"},
        )
    rankings = comparison.rankings
    if not rankings.empty:
        index = pd.MultiIndex.from_tuples(
            [(r.task, r.setting, f"{int(r.n_models)} x {int(r.n_instructions)}", r.same_items, f"{int(r.n_flipped)} of {int(r.n_ordered_pairs)}",
              r.most_changing) for r in rankings.itertuples(index=False)],
            names=["task", "setting", "models_x_instructions", "same_items", "pairs_flipped", "most_changing"],
        )
        columns = ["tau_min", "tau_median", "flip_share", "most_changing_tau"]
        frame = pd.DataFrame({c: rankings[c].astype(float).to_numpy() for c in columns}, index=index)
        low = pd.DataFrame(np.nan, index=index, columns=columns)
        high = pd.DataFrame(np.nan, index=index, columns=columns)
        for col in ("tau_median", "flip_share"):
            low[col] = rankings[f"{col}_ci_low"].astype(float).to_numpy()
            high[col] = rankings[f"{col}_ci_high"].astype(float).to_numpy()
        boot = sorted({int(b) for b in rankings["n_boot"] if b})
        ci_note = f" Brackets: {boot[0]}-replicate percentile bootstrap CI over items." if boot else ""
        tables["leaderboard_rankings"] = Table(
            "leaderboard_rankings", "Leaderboard comparison (two protocols) across models: does the stock ranking survive the InstructEval protocol's instructions?",
            frame, decimals=3,
            row_header=("Task", "Setting", "Models x instructions", "Same items", "Pairs flipped", "Instruction changing the ranking most"),
            labels={**labels, "tau_min": "tau-b min", "tau_median": "tau-b median", "flip_share": "Share of pairs flipped",
                    "most_changing_tau": "tau-b of that instruction"},
            ci_low=low, ci_high=high, note=RANKING_NOTE + ci_note,
        )
    return tables


def _shots(k: Any) -> str:
    return "?-shot" if k is None or (isinstance(k, float) and math.isnan(k)) else f"{int(k)}-shot"


def _int(value: Any) -> str:
    return "?" if value is None or (isinstance(value, float) and math.isnan(value)) else str(int(value))


def leaderboard_plots(comparison: LeaderboardComparison, folder: Path) -> list[Path]:
    """One figure per task: per model, a bar from min to max accuracy across instructions for each
    setting, the median marked, and the stock score as a point."""
    from .plots import _pyplot, _save

    scores = comparison.scores
    if scores.empty:
        return []
    plt = _pyplot()
    paths: list[Path] = []
    colors = {"few_shot": "#4c78a8", "zero_shot": "#f58518"}
    for task in list(dict.fromkeys(scores["task"])):
        part = scores[scores["task"] == task].reset_index(drop=True)
        fig, ax = plt.subplots(figsize=(1.4 * len(part) + 2.5, 3.8))
        x = np.arange(len(part))
        for offset, setting in zip((-0.15, 0.15), SETTINGS):
            lo, mid, hi = (100 * part[f"{setting}_{k}"].astype(float) for k in ("min", "median", "max"))
            ok = lo.notna().to_numpy()
            ax.bar(x[ok] + offset, (hi - lo)[ok], 0.25, bottom=lo[ok], color=colors[setting], alpha=0.55,
                   label=f"{SETTING_TITLES[setting]} min-max across instructions")
            ax.hlines(mid[ok], x[ok] + offset - 0.125, x[ok] + offset + 0.125, color="black", linewidth=2,
                      label="median" if setting == "few_shot" else None)
        ax.scatter(x, 100 * part["stock"].astype(float), color="#d62728", zorder=5, marker="D",
                   label=f"stock {part['stock_task'].iloc[0]} ({part['stock_metric'].iloc[0]}, {_shots(part['num_fewshot'].iloc[0])})")
        ax.set_xticks(x, list(part["model"]), rotation=20, ha="right")
        ax.set_ylabel("accuracy (%)")
        ax.set_title(f"{TASK_TITLES.get(task, task)}: stock score vs InstructEval instructions", fontsize=9)
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        paths += _save(fig, folder, f"leaderboard_{task}")
        plt.close(fig)
    return paths


def leaderboard_html(comparison: LeaderboardComparison | None, tables: Mapping[str, Table], figures: Mapping[str, Path], img) -> str:
    """The HTML section (``img`` embeds a figure); empty without stock results."""
    if comparison is None:
        return ""
    parts = ["<h2>Leaderboard comparison (two protocols)</h2>",
             "<p class='note'>The stock task (its own prompt, n-shot and metric) beside the InstructEval task (another "
             "prompt format and scoring rule): the gap measures the two protocols as much as the instructions. For "
             "the effect of an instruction on the stock protocol itself, run <code>instructeval run --harness-tasks</code> "
             "(section \"Instructions on the harness's own tasks\").</p>"]
    for note in comparison.notes:
        parts.append(f"<p class='note'>{html.escape(note)}</p>")
    for name in ("leaderboard_scores", "leaderboard_rankings", "leaderboard_methods"):
        if name in tables:
            parts.append(to_html(tables[name]))
    for stem in sorted(s for s in figures if s.startswith("leaderboard_")):
        parts.append(img(figures[stem]))
    if not comparison.unmatched.empty:
        parts.append("<h3>Stock results with no matching InstructEval run (not compared)</h3><ul>")
        for r in comparison.unmatched.itertuples(index=False):
            parts.append(f"<li>{html.escape(f'{r.model} / {r.stock_task} ({r.metric}={r.value:.4f}) for {r.task}: {r.file}')}</li>")
        parts.append("</ul><p class='note'>Use --model-alias NAME=LABEL when a model has another name in the stock results.</p>")
    return "\n".join(parts)


def add_leaderboard(
    aggregates: Any,
    runset: Any,
    paths: Iterable[str],
    *,
    leaderboard_map: str | None = None,
    aliases: Mapping[str, str] | None = None,
) -> LeaderboardComparison | None:
    """Find stock results in ``paths`` and attach the comparison, its tables and issues to ``aggregates``.

    Returns the comparison, or ``None`` when the inputs hold no stock result (no section then).
    Raises :class:`AggregationError` under ``--strict`` when the section adds a warning or error.
    """
    opts = aggregates.options
    issues = IssueLog()
    try:
        stock = load_stock_results(paths, issues, leaderboard_map=leaderboard_map, aliases=aliases, samples=opts.use_samples)
    except ValueError as err:  # a bad --leaderboard-map
        raise AggregationError(str(err)) from None
    if not stock and not issues.items:
        return None
    comparison = compare_leaderboard(
        stock, aggregates.instructions, runset.variants, issues, item_matrices=getattr(aggregates, "item_matrices", None),
        tol=opts.tie_tolerance, n_boot=opts.n_boot, level=opts.ci_level, seed=opts.seed,
    )
    aggregates.leaderboard = comparison
    tables = leaderboard_tables(comparison)
    budget = getattr(aggregates, "budget", None)
    if budget is not None and budget.estimated:  # the InstructEval side of some rows is estimated
        pairs = ", ".join(f"{task} {setting}" for task, setting in sorted(budget.estimated))
        for table in tables.values():
            table.note = " ".join(x for x in (table.note, f"InstructEval accuracies of {pairs} are "
                                              f"estimates of a budgeted sweep (see Budgeted estimates).") if x)
    aggregates.tables.update(tables)
    merged = IssueLog()
    merged.extend(aggregates.issues)
    merged.extend(issues.items)
    aggregates.issues = merged.sorted()
    if opts.strict:
        issues.raise_if(strict=True)
    return comparison
