"""Writing everything: tables (Markdown, CSV, LaTeX), data CSVs, plots, ``summary.json``, ``report.html``.

Layout of ``out_dir``::

    tables/<name>.md|.csv|.tex    one file per table and format; tables.md has them all
    data/*.csv                    long-form data: variants, instructions, baselines, gains, cells,
                                  models, metric_choice, wins, ci, significance
    plots/heatmap_gain_*.png|svg  relative-gain heatmaps; plots/bars_sensitivity_*.png|svg
    summary.json                  options (with the resampling seed), issues, runs and their protocol
    report.html                   one self-contained page (figures embedded as data: URIs)

Same inputs and options give byte-identical tables, data and summary: every row is sorted, numbers
have fixed decimals and nothing records the time. The folder is replaced whole, never left half old,
half new (``output_dir.py``).
"""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from .catalog import METRIC_TITLES
from .csv_cells import safe_frame
from .output_dir import check_out_dir, staged_report_dir
from .pipeline import Aggregates
from .tables import to_html, to_markdown, write_table

TABLE_SECTIONS = (
    ("Mean relative gain (paper Table 5)", ("gain_",)),
    ("Sensitivities (paper Table 6)", ("sensitivity_",)),
    ("Task-type averages", ("types_",)),
    ("Wins and variation range", ("wins", "variation_range")),
    ("Confidence intervals", ("ci_",)),
    ("Significance", ("significance_",)),
    ("AvgP and MaxP", ("avgp_", "maxp_")),
    ("By model family (paper Table 7)", ("family_",)),
    ("By model scale (paper Table 8)", ("scale_",)),
)
# Tables that a section of their own renders (``leaderboard_report.leaderboard_html``).
OWN_SECTION_PREFIXES = ("leaderboard_",)


def unsectioned_tables(names: Iterable[str]) -> list[str]:
    """Tables no report section shows: the registry above must claim every table the pipeline makes.

        >>> unsectioned_tables(["gain_few_shot", "leaderboard_scores", "new_table"])
        ['new_table']
    """
    prefixes = tuple(p for _, group in TABLE_SECTIONS for p in group) + OWN_SECTION_PREFIXES
    return sorted(n for n in names if not n.startswith(prefixes))


def _csv(frame: pd.DataFrame | None, path: Path) -> None:
    if frame is None:
        return
    text = safe_frame(frame).to_csv(index=False, float_format="%.6f", lineterminator="\n")
    path.write_text(text, encoding="utf-8", newline="\n")


def write_report(aggregates: Aggregates, out_dir: str | Path, *, plots: bool = True) -> dict[str, Any]:
    """Write all outputs into ``out_dir``; returns ``{"tables": [...], "plots": [...], "report": path}``.

    The folder is replaced whole or not at all (``output_dir.py``): everything is written into a
    temporary folder beside ``out_dir`` and swapped in at the end, so a failure (a full disk)
    leaves the previous report untouched and no mix of old and new files.

    Raises:
        AggregationError: ``out_dir`` is a file, or a folder holding files that are not a report.
        OSError: writing failed (nothing changed in ``out_dir``).
    """
    out = check_out_dir(out_dir)
    with staged_report_dir(out) as staging:
        written = _write_all(aggregates, staging, plots=plots)
    final = [str(out / Path(p).relative_to(staging)) for p in written["plots"]]
    return {"tables": written["tables"], "plots": final, "report": str(out / "report.html")}


def _write_all(aggregates: Aggregates, out: Path, *, plots: bool) -> dict[str, Any]:
    tables_dir, data_dir, plots_dir = out / "tables", out / "data", out / "plots"
    for folder in (tables_dir, data_dir):
        folder.mkdir(parents=True, exist_ok=True)
    written_tables = []
    for name in aggregates.tables:
        written_tables += write_table(aggregates.tables[name], tables_dir)
    combined = "\n".join(to_markdown(aggregates.tables[n]) for n in aggregates.tables)
    (tables_dir / "tables.md").write_text(combined, encoding="utf-8", newline="\n")

    # a variant's wall time prices a design (verdict), it is not a result: the file stays the same run to run
    _csv(aggregates.variants.drop(columns=["seconds"], errors="ignore"), data_dir / "variants.csv")
    _csv(aggregates.instructions, data_dir / "instructions.csv")
    _csv(aggregates.baselines, data_dir / "baselines.csv")
    _csv(aggregates.gains, data_dir / "gains.csv")
    _csv(aggregates.cells, data_dir / "cells.csv")
    _csv(aggregates.models, data_dir / "models.csv")
    _csv(aggregates.metric_choice, data_dir / "metric_choice.csv")
    _csv(aggregates.wins, data_dir / "wins.csv")
    _csv(aggregates.ci, data_dir / "ci.csv")
    _csv(aggregates.significance, data_dir / "significance.csv")

    if aggregates.budget is not None:
        from .budget_report import write_budget_files

        written_tables += write_budget_files(aggregates.budget, data_dir, tables_dir, aggregates.options.decimals)
    if aggregates.harness is not None:
        from .harness_report import write_harness_files

        written_tables += write_harness_files(aggregates.harness, data_dir, tables_dir)
    from .verdict import verdicts_of

    verdicts = verdicts_of(aggregates)  # before the cards are written: each carries its verdict
    if verdicts.lines():
        (tables_dir / "verdicts.md").write_text("# Verdict\n\n" + "".join(f"- {line}\n" for line in verdicts.lines()),
                                               encoding="utf-8", newline="\n")
        _csv(verdicts.frame(), data_dir / "verdicts.csv")
        _csv(verdicts.pair_frame(), data_dir / "verdict_pairs.csv")
    if aggregates.cards:
        from .sensitivity_report import write_card_files

        write_card_files(aggregates, out / "sensitivity", data_dir)
    if aggregates.ni is not None and aggregates.ni.cards:
        from .sensitivity_report import write_ni_card_files

        write_ni_card_files(aggregates, out / "sensitivity", data_dir)
    summary = aggregates.summary()
    if verdicts.lines():
        summary["verdicts"] = verdicts.lines()
    plot_paths: list[Path] = []
    plot_note = ""
    if plots:
        try:
            from .plots import make_plots

            plot_paths = make_plots(aggregates.tables, plots_dir)
            if aggregates.leaderboard is not None:
                from .leaderboard_report import leaderboard_plots

                plot_paths += leaderboard_plots(aggregates.leaderboard, plots_dir)
            if aggregates.budget is not None:
                from .budget_report import budget_plots

                plot_paths += budget_plots(aggregates.budget, plots_dir)
            if aggregates.harness is not None:
                from .harness_report import harness_plots

                plot_paths += harness_plots(aggregates.harness, plots_dir)
        except ImportError as err:
            plot_note = f"plots skipped: matplotlib is not installed ({err})"
    else:
        plot_note = "plots skipped (--no-plots)"
    summary["plots"] = sorted(p.name for p in plot_paths)
    if plot_note:
        summary["plots_note"] = plot_note
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    report = out / "report.html"
    report.write_text(render_html(aggregates, plot_paths, plot_note), encoding="utf-8", newline="\n")
    return {"tables": written_tables, "plots": [str(p) for p in plot_paths], "report": str(report)}


# ------------------------------------------------------------------------------------------ html

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.6em 0 .2em;font-size:.85em}
caption{text-align:left;font-weight:600;padding:.3em 0;white-space:nowrap}
th,td{border:1px solid #ddd;padding:.25em .5em}td{text-align:right;font-variant-numeric:tabular-nums}
th.r,td.l{text-align:left}thead th{background:#f4f4f4}
p.note{font-size:.8em;color:#555;margin:.2em 0 1em}
.error{color:#a00}.warning{color:#a60}.noteissue{color:#555}
img.fig{max-width:100%;border:1px solid #eee;margin:.5em 0}
code{background:#f4f4f4;padding:0 .2em}
table.card small{color:#666;white-space:nowrap}div.wide{overflow-x:auto}
ul.verdicts{list-style:none;padding-left:0}ul.verdicts li{margin:.35em 0;padding:.35em .6em;border-left:4px solid #999;background:#fafafa}
ul.verdicts li.sensitive{border-color:#cc3311}ul.verdicts li.robust{border-color:#228833}ul.verdicts li.unresolved{border-color:#bbbb00}ul.verdicts li.chance{border-color:#555555;background:#f0f0f0}
ul.verdicts b{font-weight:600}span.word{font-weight:700}
"""


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img class="fig" alt="{html.escape(path.stem)}" src="data:image/svg+xml;base64,{data}">'


def _frame_html(frame: pd.DataFrame, caption: str = "", decimals: int = 3) -> str:
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


def _harness_overview(aggregates: Aggregates) -> list[str]:
    """The overview's line for ``--harness-tasks`` results (its own section below), if any."""
    effects = getattr(aggregates, "harness", None)
    if effects is None or effects.scores.empty:
        return []
    scores = effects.scores
    return [f"<li>lm-eval's own tasks, instructed: {len(scores)} variants; "
            f"{scores['model'].nunique()} model(s): {html.escape(', '.join(sorted(scores['model'].unique())))}; "
            f"{scores['task'].nunique()} task(s): {html.escape(', '.join(sorted(scores['task'].unique())))}; "
            f"placements: {html.escape(', '.join(sorted(scores['placement'].unique())))}</li>"]


def _ni_overview(aggregates: Aggregates) -> list[str]:
    """The overview's line for the Natural Instructions tasks (their own section below), if any."""
    ni = aggregates.ni
    if ni is None or ni.scores.empty:
        return []
    scores = ni.scores
    return [f"<li>Natural Instructions tasks: {len(scores)} variants; {scores['model'].nunique()} model(s): "
            f"{html.escape(', '.join(sorted(scores['model'].unique())))}; {scores['task'].nunique()} task(s) in "
            f"{scores['category'].nunique()} categories</li>"]


def _own_tasks_overview(aggregates: Aggregates, summary: dict, harness_lines: list[str]) -> list[str]:
    """The nine tasks' overview lines; with none of their variants, a line saying so beside harness
    tasks, nothing beside Natural Instructions tasks (their own line follows)."""
    if summary["n_variants"] or not (harness_lines or aggregates.ni):
        return _instructeval_overview(aggregates, summary)
    if aggregates.ni is not None:
        return []
    return ["<li>InstructEval's own tasks: none in these results</li>"]


def _instructeval_overview(aggregates: Aggregates, summary: dict) -> list[str]:
    """The overview's lines for InstructEval's own tasks (left out of a report of harness tasks only)."""
    opts = aggregates.options
    return [
        f"<li>{len(summary['models'])} model(s): {html.escape(', '.join(summary['models']))}</li>",
        f"<li>{len(summary['tasks'])} task(s): {html.escape(', '.join(summary['tasks']))}</li>",
        f"<li>{len(summary['methods'])} method(s): {html.escape(', '.join(summary['methods']))}</li>",
        f"<li>{summary['n_variants']} variants, {summary['n_instructions']} (model, task, instruction) rows, "
        f"{len(aggregates.runs)} results file(s)</li>",
        f"<li>Null-instruction weight in the baseline: {opts.null_weight:g}; SD ddof: {opts.ddof}; "
        f"scale split at {opts.scale_threshold_b:g}B parameters</li>",
        f"<li>Per-sample logs: {html.escape(aggregates.samples_note)}</li>",
    ]


def render_html(aggregates: Aggregates, plot_paths: list[Path], plot_note: str = "") -> str:
    """The self-contained HTML report."""
    opts = aggregates.options
    summary = aggregates.summary()
    harness_lines = _harness_overview(aggregates)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<title>InstructEval aggregate report</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>InstructEval: aggregate report</h1>",
        "<p>Ajith et al., <i>InstructEval: Systematic Evaluation of Instruction Selection Methods</i> "
        "(Findings of NAACL 2024), computed from lm-evaluation-harness results.</p>",
        _verdicts_html(aggregates),
        "<h2>Overview</h2><ul>",
        *_own_tasks_overview(aggregates, summary, harness_lines),
        *harness_lines,
        *_ni_overview(aggregates),
        f"<li>Bootstrap: {opts.n_boot} replicates, {opts.ci_level:.0%} percentile intervals, "
        f"seed <code>{html.escape(opts.seed)}</code>; significance level {opts.alpha:g}</li>",
        "</ul>",
    ]
    parts.append(_issues_html(aggregates))
    figures = {p.stem: p for p in plot_paths if p.suffix == ".svg"}
    missing = unsectioned_tables(aggregates.tables)
    if missing:  # a programming error: never write a report that silently leaves tables out
        raise RuntimeError(f"tables {missing} belong to no section of report.html: add their name prefix to "
                           f"TABLE_SECTIONS in aggregation/report.py")
    for title, prefixes in TABLE_SECTIONS:
        names = [n for n in aggregates.tables if any(n.startswith(p) for p in prefixes)]
        if title == "Confidence intervals" and not names and summary["n_variants"]:
            parts.append(f"<h2>{title}</h2><p>Not computed: {html.escape(aggregates.samples_note or 'no per-sample logs')}.</p>")
            continue
        pairs = _significant_pairs_html(aggregates) if title == "Significance" else ""
        if not names and not pairs:
            continue
        if title == "Task-type averages" and len(summary["tasks"]) < 2:
            continue  # one task: its type's average is its own column of the table above (tables/ has it)
        parts.append(f"<h2>{html.escape(title)}</h2>")
        for name in names:
            parts.append(to_html(aggregates.tables[name]))
            for stem in (f"heatmap_{name}", f"bars_{name}"):
                if stem in figures:
                    parts.append(_img(figures[stem]))
        if pairs:  # the pair list belongs to its own section, after the significance tables
            parts.append(pairs)
    if aggregates.budget is not None:
        from .budget_report import budget_html

        parts.append(budget_html(aggregates.budget, figures, _img, _frame_html))
    if aggregates.leaderboard is not None:
        from .leaderboard_report import leaderboard_html

        parts.append(leaderboard_html(aggregates.leaderboard, aggregates.tables, figures, _img))
    if aggregates.harness is not None:
        from .harness_report import harness_html

        parts.append(harness_html(aggregates.harness, figures, _img, _frame_html))
    if aggregates.cards:
        from .sensitivity_report import cards_html

        parts.append(cards_html(aggregates.cards, _frame_html))
    if aggregates.ni is not None:
        from .ni_report import ni_html

        parts.append(ni_html(aggregates.ni, _frame_html))
    if plot_note:
        parts.append(f"<p class='note'>{html.escape(plot_note)}</p>")
    if not aggregates.models.empty:  # sections with nothing to show (a report of harness tasks only) are left out
        parts.append("<h2>Models</h2>")
        parts.append(_frame_html(aggregates.models))
    if not aggregates.metric_choice.empty:
        parts.append("<h3>Primary metric per (model, task)</h3>")
        parts.append(_frame_html(aggregates.metric_choice))
    zero = aggregates.baselines[aggregates.baselines["status"] != "ok"] if not aggregates.baselines.empty else aggregates.baselines
    if zero is not None and not zero.empty:
        parts.append("<h3>Baselines mu = 0 (gains undefined, left out)</h3>")
        parts.append(_frame_html(zero, decimals=6))
    runs = pd.DataFrame(
        [
            {
                "file": r.file,
                "model": r.model,
                "variants": r.n_variants,
                "tasks": ", ".join(r.tasks),
                "profile": r.profile,
                "sweep": json.dumps(dict(r.sweep), sort_keys=True, default=str),
                "lm_eval": r.lm_eval_version,
                "plugin": r.plugin_version,
                "limit": r.limit,
            }
            for r in aggregates.runs
        ]
    )
    if not runs.empty:
        parts.append("<h2>Runs and their protocol</h2>")
        parts.append(_frame_html(runs))
    if summary["n_variants"]:  # the nine tasks' definitions
        parts.append(_definitions_html(opts))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _verdicts_html(aggregates: Aggregates) -> str:
    """The report's opening section: one verdict line per (model, task, setting), then the model
    pairs' flip probabilities (``verdict``); "" without any."""
    from .chance import AT_CHANCE, AT_FLOOR
    from .verdict import ROBUST, SENSITIVE, verdicts_of

    verdicts = verdicts_of(aggregates)
    if not verdicts.lines():
        return ""
    css = {SENSITIVE: "sensitive", ROBUST: "robust", AT_CHANCE: "chance", AT_FLOOR: "chance"}
    items = []
    for v in verdicts.every():
        line = v.line()
        head, _, rest = line.partition(": ")
        word = html.escape(v.word)
        rest = html.escape(rest).replace(f"; {word}", f"; <span class='word'>{word}</span>", 1)
        items.append(f"<li class='{css.get(v.word, 'unresolved')}'><b>{html.escape(head)}</b>: {rest}</li>")
    parts = ["<h2>Verdict</h2>",
             "<p class='note'>Per (model, task, setting): the stock score (the null instruction's) &plusmn; its standard "
             "error over items; <b>at chance</b>: the stock score is not above always giving the rows' most frequent gold "
             "answer (one-sided exact binomial, p &ge; 0.01; <b>at a floor</b> for free-form answers below 10), so the "
             "instructions' effect on it is detail, not a verdict; otherwise <b>sensitive</b>: a within-item permutation "
             "test finds the instructions move the score (p &le; 0.05); "
             "<b>robust</b>: it finds none, and an instruction-effect SD no larger than the stock score's SE would have been "
             "detected with 80% power; <b>not resolved</b>: otherwise, with the design that would resolve it. A separate "
             "clause says where answers shift between gold labels. Best and worst instruction with their "
             f"{aggregates.options.ci_level:.0%} intervals. Details in the sections below."
             + (" On the Natural Instructions tasks the benchmark's standard encoding (<code>definition_pos2</code>) "
                "plays the stock score, on ROUGE-L, and the power is that of detecting a shift of every score of an "
                "instruction." if verdicts.ni else "") + "</p>",
             "<ul class='verdicts'>" + "".join(items) + "</ul>"]
    if verdicts.pairs:
        parts.append("<h3>Model pairs</h3><p class='note'>The share of instructions under which the stock order of two "
                     "models flips (interval over instructions), next to how often it flips when only the items are "
                     "resampled (a paired bootstrap of the two stock scores).</p>")
        pair_items = []
        for pair in verdicts.pairs:
            head, _, rest = pair.line().partition(": ")
            who, _, rest = rest.partition(": ")
            pair_items.append(f"<li><b>{html.escape(head)}: {html.escape(who)}</b>: {html.escape(rest)}</li>")
        parts.append("<ul class='verdicts'>" + "".join(pair_items) + "</ul>")
    return "\n".join(parts)


def _significant_pairs_html(aggregates: Aggregates) -> str:
    """The "Significant pairs" sub-section of "Significance" ("" when no test was run)."""
    if aggregates.significance is None or aggregates.significance.empty:
        return ""
    alpha = aggregates.options.alpha
    sig = aggregates.significance[aggregates.significance["p_value"] < alpha]
    head = f"<h3>Significant pairs (one-sided paired bootstrap, p &lt; {alpha:g})</h3>"
    return head + _frame_html(sig, decimals=4)


def _issues_html(aggregates: Aggregates) -> str:
    if not aggregates.issues:
        return "<h2>Warnings and errors</h2><p>None.</p>"
    counts = {lvl: sum(1 for i in aggregates.issues if i.level == lvl) for lvl in ("error", "warning", "note")}
    out = [
        "<h2>Warnings and errors</h2>",
        f"<p>{counts['error']} error(s) (input dropped), {counts['warning']} warning(s), {counts['note']} note(s).</p>",
        '<table class="t"><thead><tr><th>level</th><th>code</th><th>file</th><th>variant</th><th>message</th></tr></thead><tbody>',
    ]
    for issue in aggregates.issues:
        cls = "noteissue" if issue.level == "note" else issue.level
        out.append(
            f'<tr class="{cls}"><td class="l">{issue.level}</td><td class="l">{html.escape(issue.code)}</td>'
            f'<td class="l">{html.escape(issue.file or "")}</td><td class="l">{html.escape(issue.variant or "")}</td>'
            f'<td class="l">{html.escape(issue.message)}</td></tr>'
        )
    out.append("</tbody></table>")
    return "".join(out)


def _definitions_html(opts) -> str:
    items = [
        ("Relative gain", f"gain = 100 (s - mu) / mu, mu = weighted mean over all instructions of the (model, task), null weight {opts.null_weight:g}; cell = mean over models of the mean over the method's instructions."),
        ("Few-shot / perturbation accuracy", "mean over demo seeds of the few_shot / perturbed variants."),
        ("Selectional sensitivity", f"SD (ddof={opts.ddof}) of the few-shot accuracies over demo seeds; shown as 100 x SD."),
        ("Permutational sensitivity", f"mean over the sweep's ordering demo sets of the SD (ddof={opts.ddof}) over that set's orderings."),
        ("Worst-case perturbation accuracy", "per item, correct only if correct both with the clean few-shot prompt and under every perturbation of the same demo seed; mean over items, then over demo seeds."),
        ("Wins", "tasks where the method has the best cell; tied methods (within the tie tolerance) each get a full win."),
        ("Confidence intervals", "percentile bootstrap over test items, the same resampled items for every instruction and model of a task."),
        ("Significance", "paired bootstrap, p = (1 + #{d_b - d >= d}) / (B + 1), one-sided for 'A beats B'."),
        ("AvgP / MaxP", "mean / max accuracy over a method's instructions, averaged over models."),
    ]
    rows = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in items)
    return f"<h2>Definitions</h2><ul>{rows}</ul><p class='note'>Metric names: {html.escape(', '.join(METRIC_TITLES.values()))}.</p>"


__all__ = ["write_report", "render_html"]
