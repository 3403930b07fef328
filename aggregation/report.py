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

import html
import json
from pathlib import Path
from typing import Any


from .csv_cells import write_csv
from .html_parts import frame_html, img
from .output_dir import check_out_dir, staged_report_dir
from .pipeline import Aggregates
from .sections import summary_of
from .sections.paper_tables import OWN_SECTION_PREFIXES, TABLE_SECTIONS, unsectioned_tables  # noqa: F401 (their old home)


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
    """Every section's files, the verdicts, ``summary.json`` and ``report.html`` into ``out`` (staged)."""
    from .sections import SECTIONS
    from .verdict import verdicts_of

    for folder in (out / "tables", out / "data"):
        folder.mkdir(parents=True, exist_ok=True)
    verdicts = verdicts_of(aggregates)  # before the cards are written: each carries its verdict
    _write_verdicts(verdicts, out)
    written_tables: list[str] = []
    for section in SECTIONS:
        written_tables += section.files(aggregates, out)
    summary = summary_of(aggregates)
    if verdicts.lines():
        summary["verdicts"] = verdicts.lines()
    plot_paths, plot_note = _draw(aggregates, out / "plots", plots)
    summary["plots"] = sorted(p.name for p in plot_paths)
    if plot_note:
        summary["plots_note"] = plot_note
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    report = out / "report.html"
    report.write_text(render_html(aggregates, plot_paths, plot_note), encoding="utf-8", newline="\n")
    return {"tables": written_tables, "plots": [str(p) for p in plot_paths], "report": str(report)}


def _write_verdicts(verdicts: Any, out: Path) -> None:
    if verdicts.lines():
        (out / "tables" / "verdicts.md").write_text("# Verdict\n\n" + "".join(f"- {line}\n" for line in verdicts.lines()),
                                                   encoding="utf-8", newline="\n")
        write_csv(verdicts.frame(), out / "data" / "verdicts.csv")
        write_csv(verdicts.pair_frame(), out / "data" / "verdict_pairs.csv")


def _draw(aggregates: Aggregates, folder: Path, plots: bool) -> tuple[list[Path], str]:
    """Every section's figures, or why there are none."""
    if not plots:
        return [], "plots skipped (--no-plots)"
    from .sections import SECTIONS

    paths: list[Path] = []
    try:
        for section in SECTIONS:
            paths += section.plots(aggregates, folder)
    except ImportError as err:
        return [], f"plots skipped: matplotlib is not installed ({err})"
    return paths, ""


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


_img, _frame_html = img, frame_html  # the names the sections and tests knew


def render_html(aggregates: Aggregates, plot_paths: list[Path], plot_note: str = "") -> str:
    """The self-contained HTML report: the verdicts, the overview, the issues, then every section in order."""
    from .sections import SECTIONS, Figures

    opts = aggregates.options
    summary = summary_of(aggregates)
    figures = Figures({p.stem: p for p in plot_paths if p.suffix == ".svg"}, img, frame_html, plot_note)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<title>InstructEval aggregate report</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>InstructEval: aggregate report</h1>",
        "<p>Ajith et al., <i>InstructEval: Systematic Evaluation of Instruction Selection Methods</i> "
        "(Findings of NAACL 2024), computed from lm-evaluation-harness results.</p>",
        _verdicts_html(aggregates),
        "<h2>Overview</h2><ul>",
        *[line for section in SECTIONS for line in section.overview(aggregates, summary)],
        f"<li>Bootstrap: {opts.n_boot} replicates, {opts.ci_level:.0%} percentile intervals, "
        f"seed <code>{html.escape(opts.seed)}</code>; significance level {opts.alpha:g}</li>",
        "</ul>",
        _issues_html(aggregates),
    ]
    parts += [part for part in (section.html(aggregates, figures) for section in SECTIONS) if part]
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


__all__ = ["write_report", "render_html"]
