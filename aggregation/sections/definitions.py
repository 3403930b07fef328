"""The nine tasks' definitions: the formulas behind the paper's tables."""

from __future__ import annotations

import html
from typing import Any

from .base import Figures, Section


class DefinitionsSection(Section):
    name = "definitions"

    def html(self, result: Any, figures: Figures) -> str:
        if result.variants is None or result.variants.empty:
            return ""
        from ..catalog import METRIC_TITLES

        opts = result.options
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
