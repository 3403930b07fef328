"""The report's "Instructions on the harness's own tasks" section (``harness_effects``): files, HTML, figures.

Files: ``data/harness_effects.csv`` (per model, task, placement), ``data/harness_rankings.csv`` (per
task and placement across models), ``data/harness_scores.csv`` (every variant's score), the same as
Markdown tables in ``tables/harness_effects.md``, and one figure per task
(``plots/harness_<task>.png/.svg``: each model's instruction scores, the stock score marked).
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from .csv_cells import safe_frame
from .harness_effects import HarnessEffects, harness_effects
from .issues import IssueLog


def add_harness(aggregates, results: list, log: IssueLog) -> None:
    """Compute the section from ``results`` (``load_harness_results``) and attach it (and its sensitivity
    cards) to ``aggregates``; its problems go into ``log`` (``sections.collect`` joins them to the report's)."""
    opts = aggregates.options
    effects = harness_effects(results, log, n_boot=opts.n_boot, level=opts.ci_level, seed=opts.seed)
    aggregates.harness = effects
    if effects is not None:
        aggregates.cards = list(aggregates.cards) + effects.cards


def _percent(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.1f}"


def _with_interval(value: float, low: float, high: float, scale: float = 100.0, digits: int = 1) -> str:
    """``"37.5 [30.0, 45.0]"``; the value alone without an interval; ``""`` without a value."""
    if value is None or math.isnan(value):
        return ""
    text = f"{scale * value:.{digits}f}"
    if low is not None and not math.isnan(low):
        text += f" [{scale * low:.{digits}f}, {scale * high:.{digits}f}]"
    return text


def _effect(r: dict, name: str, scale: float = 100.0, digits: int = 1) -> str:
    """A statistic of the effects row with its draws' interval where it has one, ``not resolved``
    where a budgeted grid's validation does not resolve it (the row's ``not_resolved`` says why)."""
    if math.isnan(r[name]) and r.get("not_resolved") and name in r["not_resolved"]:
        return "not resolved"
    low, high = r.get(f"{name}_low", math.nan), r.get(f"{name}_high", math.nan)
    return _with_interval(r[name], low, high, scale, digits)


def effects_table(effects: HarnessEffects) -> pd.DataFrame:
    """The effects in points, intervals in brackets, for Markdown and HTML; ``not resolved`` where a
    budget does not resolve a statistic, and the reason in the last column."""
    rows = []
    for r in effects.effects.to_dict("records"):
        sd = _with_interval(r["instruction_sd"], r["instruction_sd_low"], r["instruction_sd_high"], scale=1.0)
        if not sd and "instruction_sd" in (r.get("not_resolved") or ""):
            sd = "not resolved"
        p = "" if math.isnan(r["permutation_p"]) else f"{r['permutation_p']:.3f}"
        if p and not math.isnan(r.get("detectable_sd", math.nan)):
            p += f" (80% power at SD {r['detectable_sd']:.1f})"
        rows.append({
            "model": r["model"], "task": r["task"], "placement": r["placement"], "shots": r["num_fewshot"],
            "metric": r["metric"], "instructions": r["n_instructions"], "items": r["n_items"] or "",
            "stock": _percent(r["stock"]), "min": _effect(r, "min"), "median": _effect(r, "median"),
            "max": _effect(r, "max"), "stock pct": _effect(r, "stock_percentile", scale=1.0, digits=0),
            "instruction SD": sd, "item noise SD": "" if math.isnan(r["item_noise_sd"]) else f"{r['item_noise_sd']:.1f}",
            "p (no effect)": p,
            "cells": "" if math.isnan(r["cells_share"]) else f"{100 * r['cells_share']:.0f}%"
            + (" (est.)" if r["cells_share"] < 1 else ""),
            "not resolved": r.get("not_resolved") or "",
        })
    return pd.DataFrame(rows)


def methods_table(effects: HarnessEffects) -> pd.DataFrame:
    """The instruction-type breakdown (``harness_methods``) in points, intervals in brackets."""
    rows = []
    for r in effects.methods.to_dict("records"):
        rows.append({"model": r["model"], "task": r["task"], "placement": r["placement"], "shots": r["num_fewshot"],
                     "method": r["method"], "instructions": r["n_instructions"], "items": r["n_items"],
                     "score": _with_interval(r["score"], r["ci_low"], r["ci_high"]),
                     "vs stock": _with_interval(r["vs_stock"], r["vs_stock_low"], r["vs_stock_high"]),
                     "detectable (80% power)": f"{100 * r['detectable_difference']:.1f}"})
    return pd.DataFrame(rows)


def _markdown(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(none)\n"
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def _rounded(frame: pd.DataFrame, decimals: int = 3) -> pd.DataFrame:
    """Floats shown with ``decimals`` places (the CSV keeps them whole)."""
    return frame.apply(lambda col: col.map(lambda v: f"{v:.{decimals}f}" if isinstance(v, float) and not math.isnan(v)
                                           else ("" if isinstance(v, float) else v)))


def write_harness_files(effects: HarnessEffects, data_dir: Path, tables_dir: Path) -> list[str]:
    for frame, name in ((effects.effects, "harness_effects"), (effects.rankings, "harness_rankings"),
                        (effects.scores, "harness_scores"), (effects.pairs, "harness_pair_flips"),
                        (effects.classes, "harness_classes"), (effects.methods, "harness_methods")):
        text = safe_frame(frame).to_csv(index=False, float_format="%.6f", lineterminator="\n")
        (data_dir / f"{name}.csv").write_text(text, encoding="utf-8", newline="\n")
    md = tables_dir / "harness_effects.md"
    md.write_text("## Instructions on the harness's own tasks\n\n" + _markdown(effects_table(effects))
                  + "\n## Rank stability across models\n\n" + _markdown(_rounded(effects.rankings))
                  + "\n## Pair flips\n\n" + _markdown(_rounded(effects.pairs))
                  + "\n## Instruction types against the stock score (fully scored grids)\n\n" + _markdown(methods_table(effects)),
                  encoding="utf-8", newline="\n")
    tex = tables_dir / "harness_effects.tex"
    tex.write_text(_latex(effects_table(effects), "Instructions on the harness's own tasks (scores in \\%; SDs in points)"),
                   encoding="utf-8", newline="\n")
    return [str(md), str(tex)]


def _latex_escape(text: object) -> str:
    out = str(text)
    for char, repl in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"),
                       ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"), ("^", r"\textasciicircum{}")):
        out = out.replace(char, repl)
    return out


def _latex(frame: pd.DataFrame, caption: str) -> str:
    """A booktabs table (needs \\usepackage{booktabs})."""
    if frame.empty:
        return "% (no rows)\n"
    cols = list(frame.columns)
    lines = [r"\begin{table}[t]", r"\centering", r"\small", r"\begin{tabular}{" + "l" * 3 + "r" * (len(cols) - 3) + "}",
             r"\toprule", " & ".join(_latex_escape(c) for c in cols) + r" \\", r"\midrule"]
    for row in frame.itertuples(index=False):
        lines.append(" & ".join(_latex_escape(v) for v in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\caption{" + _latex_escape(caption) + "}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def harness_plots(effects: HarnessEffects, folder: Path) -> list[Path]:
    """Per task: each model's instruction scores (dots) and its stock score (a red bar)."""
    from .plots import _pyplot, _save

    if effects.scores.empty:
        return []
    plt = _pyplot()
    paths: list[Path] = []
    for (task, placement, shot), part in effects.scores.groupby(["task", "placement", "num_fewshot"], sort=True):
        models = sorted(part["model"].unique())
        fig, ax = plt.subplots(figsize=(1.4 * len(models) + 2.5, 3.2))
        for i, model in enumerate(models):
            rows = part[part["model"] == model]
            instructed = rows[rows["method"] != "null"]
            others = instructed["score"].to_numpy(dtype=float) * 100
            jitter = (pd.Series(range(len(others))) % 7 - 3).to_numpy() * 0.04
            estimated = bool(instructed["estimated"].any())
            label = "instructions (estimates, intervals)" if estimated else "instructions"
            ax.scatter(i + jitter, others, s=14, alpha=0.7, color="#4477aa", label=label if i == 0 else None)
            if estimated:  # a budgeted grid: each estimate's interval
                low = instructed["ci_low"].to_numpy(dtype=float) * 100
                high = instructed["ci_high"].to_numpy(dtype=float) * 100
                ax.vlines(i + jitter, low, high, color="#4477aa", alpha=0.35, linewidth=0.8)
            stock = rows[rows["method"] == "null"]["score"].to_numpy(dtype=float) * 100
            if len(stock):
                ax.hlines(stock[0], i - 0.3, i + 0.3, color="#cc3311", linewidth=2.2, label="stock (null)" if i == 0 else None)
        values = np.concatenate([part["score"].to_numpy(dtype=float),
                                 part[["ci_low", "ci_high"]].to_numpy(dtype=float).ravel()]) * 100
        values = values[np.isfinite(values)]
        # at least 10 points of axis, inside 0-100: equal scores are a line, not a magnified speck
        low, high = float(values.min()), float(values.max())
        pad = max(5.0, (high - low) * 0.15)
        ax.set_ylim(max(0.0, low - pad), min(100.0, high + pad))
        ax.set_xticks(range(len(models)), models, rotation=20, ha="right")
        ax.set_ylabel("score (%)")
        ax.set_title(f"{task} ({shot}-shot, {placement}): instruction scores vs the stock score", fontsize=9)
        ax.legend(fontsize=7, loc="best")
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in f"{task}_{placement}_{shot}")
        paths += _save(fig, folder, f"harness_{safe}")
        plt.close(fig)
    return paths


def harness_html(effects: HarnessEffects, figures: dict[str, Path], img: Callable[[Path], str], frame_html: Callable[..., str]) -> str:
    parts = ["<h2>Instructions on the harness's own tasks</h2>",
             "<p class='note'>Each task on its own protocol; a variant changes only the instruction (placed as the "
             "task's description); the null variant is the stock task. Scores in %; stock pct: the stock score's "
             "mid-rank percentile among the instructions'; instruction SD: the SD of the instructions' true scores "
             "beyond item noise (points, two-way random effects, bootstrap interval over instructions and items); "
             "p: a within-item permutation test of 'no instruction moves the score' (item-centred residuals summed per instruction; the per-gold-answer test is in data/harness_effects.csv, class_shift_p), with the "
             "instruction-effect SD it detects with 80% power where it finds no effect; cells: the share of "
             "(instruction, item) cells evaluated -- under --budget (est.) every statistic across instructions comes "
             "from the item-response model's draws of the whole grid (median [95% interval]), and is printed only "
             "where the budget validation resolves it at the run's design and budget ('not resolved' says what "
             "would); the stock score stays exact; data/harness_scores.csv gives each estimate its "
             "interval and its difference to the stock score with an interval and P(above stock).</p>",
             "<div class='wide'>" + frame_html(effects_table(effects).drop(columns=["not resolved"], errors="ignore"))
             + "</div>"]
    reasons = [r for r in effects.effects.to_dict("records") if r.get("not_resolved")]
    if reasons:  # beside the table, not in a column: the sentences are long
        parts.append("<p class='note'>Not resolved (the budget validation, docs/validation/budget.md):</p><ul>"
                     + "".join(f"<li><b>{html.escape(str(r['model']))} {html.escape(str(r['task']))} "
                               f"[{html.escape(str(r['placement']))}, {r['num_fewshot']}-shot]</b>: "
                               f"{html.escape(r['not_resolved'])}</li>" for r in reasons) + "</ul>")
    if not effects.methods.empty:
        parts.append("<h3>Instruction types against the stock score</h3>")
        parts.append("<p class='note'>Per method, the mean over its instructions (fully scored grids): its score and "
                     "its difference from the stock score, paired on the items, with intervals over the items for these "
                     "instructions; 'detectable': the difference the paired comparison finds with 80% power at the 5% "
                     "level (an interval covering 0 rules out only differences larger than it).</p>")
        parts.append("<div class='wide'>" + frame_html(methods_table(effects)) + "</div>")
    if not effects.rankings.empty:
        parts.append("<h3>Rank stability across models</h3>")
        parts.append("<p class='note'>Flip probability: the share of instructions under which a stock-ordered pair of "
                     "models changes order (the most flipped pair, with a bootstrap interval over instructions); "
                     "tau: Kendall's tau-b between the stock ranking and each instruction's.</p>")
        parts.append(frame_html(effects.rankings.drop(columns=["metric"]), decimals=3))
    if not effects.classes.empty:
        parts.append("<h3>Per gold answer</h3>")
        parts.append("<p class='note'>Each instruction's accuracy on each gold answer's rows, and its score at the "
                     "evaluation split's own class mix (mix 'split'; 'rows' where the results do not record it): the rows "
                     "(unless drawn with --harness-rows uniform) and a budget's cells are balanced over the answers, so an instruction that moves answers toward "
                     "one label keeps its balanced accuracy but not its leaderboard score "
                     "(data/harness_classes.csv).</p>")
        parts.append("<div class='wide'>" + frame_html(effects.classes.drop(columns=["not_resolved"]), decimals=3)
                     + "</div>")  # (blank where not resolved: the reasons are in the list above and the CSV)
    for stem in sorted(s for s in figures if s.startswith("harness_")):
        parts.append(img(figures[stem]))
    if effects.notes:
        parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in effects.notes) + "</ul>")
    return "\n".join(parts)
