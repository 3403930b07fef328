"""The paper's tables (Ajith et al., Tables 5-8) and what the project adds to them: intervals,
significance, wins, AvgP/MaxP, family and scale breakdowns; grouped under ``TABLE_SECTIONS``."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Iterable, Mapping

from .base import Figures, Section

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
# Tables that a section of their own renders (the leaderboard comparison's).
OWN_SECTION_PREFIXES = ("leaderboard_",)


def unsectioned_tables(names: Iterable[str]) -> list[str]:
    """Tables no report section shows: the groups above must claim every table the pipeline makes.

        >>> unsectioned_tables(["gain_few_shot", "leaderboard_scores", "new_table"])
        ['new_table']
    """
    prefixes = tuple(p for _, group in TABLE_SECTIONS for p in group) + OWN_SECTION_PREFIXES
    return sorted(n for n in names if not n.startswith(prefixes))


def write_paper_files(aggregates: Any, out: Path) -> list[str]:
    """The nine tasks' tables (``tables/``: Markdown, CSV, LaTeX, and ``tables.md``) and frames (``data/``)."""
    from ..csv_cells import write_csv
    from ..tables import to_markdown, write_table

    tables_dir, data_dir = out / "tables", out / "data"
    written_tables = []
    for name in aggregates.tables:
        written_tables += write_table(aggregates.tables[name], tables_dir)
    combined = "\n".join(to_markdown(aggregates.tables[n]) for n in aggregates.tables)
    (tables_dir / "tables.md").write_text(combined, encoding="utf-8", newline="\n")
    # a variant's wall time prices a design (verdict), it is not a result: the file stays the same run to run
    write_csv(aggregates.variants.drop(columns=["seconds"], errors="ignore"), data_dir / "variants.csv")
    for name in ("instructions", "baselines", "gains", "cells", "models", "metric_choice", "wins", "ci", "significance"):
        write_csv(getattr(aggregates, name), data_dir / f"{name}.csv")
    return written_tables



class PaperTablesSection(Section):
    """The nine tasks' tables: their Markdown/CSV/LaTeX files, figures, overview and HTML groups."""

    name = "paper_tables"

    def files(self, result: Any, out: Path) -> list[str]:
        return write_paper_files(result, out)

    def plots(self, result: Any, folder: Path) -> list[Path]:
        from ..plots import make_plots

        return make_plots(result.tables, folder)

    def overview(self, result: Any, summary: Mapping[str, Any]) -> list[str]:
        """The nine tasks' lines; with none of their variants, a line saying so beside harness tasks,
        nothing beside Natural Instructions tasks (their own line follows)."""
        if summary["n_variants"] or not (_has_harness(result) or result.ni):
            return _instructeval_overview(result, summary)
        if result.ni is not None:
            return []
        return ["<li>InstructEval's own tasks: none in these results</li>"]

    def html(self, result: Any, figures: Figures) -> str:
        from ..tables import to_html

        missing = unsectioned_tables(result.tables)
        if missing:  # a programming error: never write a report that silently leaves tables out
            raise RuntimeError(f"tables {missing} belong to no section of report.html: add their name prefix to "
                               f"TABLE_SECTIONS in aggregation/sections/paper_tables.py")
        n_variants, n_tasks = len(result.variants), len(set(result.instructions["task"])) if not result.instructions.empty else 0
        parts = []
        for title, prefixes in TABLE_SECTIONS:
            names = [n for n in result.tables if any(n.startswith(p) for p in prefixes)]
            if title == "Confidence intervals" and not names and n_variants:
                parts.append(f"<h2>{title}</h2><p>Not computed: {html.escape(result.samples_note or 'no per-sample logs')}.</p>")
                continue
            pairs = _significant_pairs_html(result, figures) if title == "Significance" else ""
            if not names and not pairs:
                continue
            if title == "Task-type averages" and n_tasks < 2:
                continue  # one task: its type's average is its own column of the table above (tables/ has it)
            parts.append(f"<h2>{html.escape(title)}</h2>")
            for name in names:
                parts.append(to_html(result.tables[name]))
                for stem in (f"heatmap_{name}", f"bars_{name}"):
                    if stem in figures.by_stem:
                        parts.append(figures.img(figures.by_stem[stem]))
            if pairs:  # the pair list belongs to its own section, after the significance tables
                parts.append(pairs)
        return "\n".join(parts)


def _has_harness(result: Any) -> bool:
    effects = getattr(result, "harness", None)
    return effects is not None and not effects.scores.empty


def _instructeval_overview(result: Any, summary: Mapping[str, Any]) -> list[str]:
    opts = result.options
    return [
        f"<li>{len(summary['models'])} model(s): {html.escape(', '.join(summary['models']))}</li>",
        f"<li>{len(summary['tasks'])} task(s): {html.escape(', '.join(summary['tasks']))}</li>",
        f"<li>{len(summary['methods'])} method(s): {html.escape(', '.join(summary['methods']))}</li>",
        f"<li>{summary['n_variants']} variants, {summary['n_instructions']} (model, task, instruction) rows, "
        f"{len(result.runs)} results file(s)</li>",
        f"<li>Null-instruction weight in the baseline: {opts.null_weight:g}; SD ddof: {opts.ddof}; "
        f"scale split at {opts.scale_threshold_b:g}B parameters</li>",
        f"<li>Per-sample logs: {html.escape(result.samples_note)}</li>",
    ]


def _significant_pairs_html(result: Any, figures: Figures) -> str:
    """The "Significant pairs" sub-section of "Significance" ("" when no test was run)."""
    if result.significance is None or result.significance.empty:
        return ""
    alpha = result.options.alpha
    sig = result.significance[result.significance["p_value"] < alpha]
    head = f"<h3>Significant pairs (one-sided paired bootstrap, p &lt; {alpha:g})</h3>"
    return head + figures.frame_html(sig, decimals=4)
