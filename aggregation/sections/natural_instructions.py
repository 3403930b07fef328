"""The Natural Instructions tasks (``ni_report``): schema-part effects per task and category, their cards."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Mapping

from .base import Figures, Inputs, Section


class NaturalInstructionsSection(Section):
    name = "natural_instructions"

    def load(self, inputs: Inputs, options: Any, log: Any) -> list:
        from ..ni_report import load_ni_results

        return load_ni_results(list(inputs.paths), log, samples=options.use_samples)

    def attach(self, result: Any, loaded: Any, inputs: Inputs, log: Any) -> None:
        if loaded:
            from ..ni_report import build_ni_report

            opts = result.options
            result.ni = build_ni_report(loaded, seed=opts.seed, n_boot=opts.n_boot, level=opts.ci_level)

    def files(self, result: Any, out: Path) -> list[str]:
        if result.ni is None:
            return []
        from ..ni_report import write_ni_report

        written = write_ni_report(result.ni, out, decimals=result.options.decimals)
        if result.ni.cards:
            from ..sensitivity_report import write_ni_card_files

            write_ni_card_files(result, out / "sensitivity", out / "data")
        return written[:1]

    def overview(self, result: Any, summary: Mapping[str, Any]) -> list[str]:
        ni = result.ni
        if ni is None or ni.scores.empty:
            return []
        scores = ni.scores
        return [f"<li>Natural Instructions tasks: {len(scores)} variants; {scores['model'].nunique()} model(s): "
                f"{html.escape(', '.join(sorted(scores['model'].unique())))}; {scores['task'].nunique()} task(s) in "
                f"{scores['category'].nunique()} categories</li>"]

    def html(self, result: Any, figures: Figures) -> str:
        if result.ni is None:
            return ""
        from ..ni_report import ni_html

        return ni_html(result.ni, figures.frame_html)

    def lines(self, result: Any) -> list[str]:
        if result.ni is None:
            return []
        from ..ni_report import summary_lines

        return summary_lines(result.ni)

    def tables_phrase(self, result: Any) -> str:
        return "the Natural Instructions tables (tables/natural_instructions.md)" if result.ni is not None else ""
