"""lm-eval's own tasks swept over instructions (``--harness-tasks``): ``harness_effects`` and ``harness_report``."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Mapping

from .base import Figures, Inputs, Section


class HarnessSection(Section):
    name = "harness"

    def load(self, inputs: Inputs, options: Any, log: Any) -> list:
        from ..harness_effects import load_harness_results

        results = load_harness_results(list(inputs.paths), log, samples=options.use_samples, metric=inputs.harness_metric)
        _check_harness_metric(inputs.harness_metric, results)
        return results

    def attach(self, result: Any, loaded: Any, inputs: Inputs, log: Any) -> None:
        if loaded:
            from ..harness_report import add_harness

            add_harness(result, loaded, log)

    def files(self, result: Any, out: Path) -> list[str]:
        if result.harness is None:
            return []
        from ..harness_report import write_harness_files

        return write_harness_files(result.harness, out / "data", out / "tables")

    def plots(self, result: Any, folder: Path) -> list[Path]:
        if result.harness is None:
            return []
        from ..harness_report import harness_plots

        return harness_plots(result.harness, folder)

    def overview(self, result: Any, summary: Mapping[str, Any]) -> list[str]:
        effects = result.harness
        if effects is None or effects.scores.empty:
            return []
        scores = effects.scores
        return [f"<li>lm-eval's own tasks, instructed: {len(scores)} variants; "
                f"{scores['model'].nunique()} model(s): {html.escape(', '.join(sorted(scores['model'].unique())))}; "
                f"{scores['task'].nunique()} task(s): {html.escape(', '.join(sorted(scores['task'].unique())))}; "
                f"placements: {html.escape(', '.join(sorted(scores['placement'].unique())))}</li>"]

    def html(self, result: Any, figures: Figures) -> str:
        if result.harness is None:
            return ""
        from ..harness_report import harness_html

        return harness_html(result.harness, figures.by_stem, figures.img, figures.frame_html)

    def summary(self, result: Any) -> Mapping[str, Any]:
        return {"harness": result.harness.summary()} if result.harness is not None else {}

    def tables_phrase(self, result: Any) -> str:
        return "the harness-task tables (tables/harness_effects.md)" if result.harness is not None else ""


def _check_harness_metric(metric: str | None, results: list) -> None:
    """``--harness-metric NAME`` that no harness variant reports would do nothing: an error naming those reported."""
    if metric is None:
        return
    from ..issues import AggregationError

    reported = sorted({r.metric.split(",")[0] for r in results})
    if not results:
        raise AggregationError(f"--harness-metric {metric}: the inputs hold no harness-task results (--harness-tasks "
                               "variants); drop it")
    if metric not in reported:
        raise AggregationError(f"--harness-metric {metric}: no harness variant reports it; they report "
                               f"{', '.join(reported)} (the first metric of each where the named one is missing)")
