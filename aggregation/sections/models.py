"""The models (family, size, scale group), the primary metric per (model, task) and the zero baselines."""

from __future__ import annotations

from typing import Any

from .base import Figures, Section


class ModelsSection(Section):
    name = "models"

    def html(self, result: Any, figures: Figures) -> str:
        parts = []
        if not result.models.empty:  # sections with nothing to show (a report of harness tasks only) are left out
            parts += ["<h2>Models</h2>", figures.frame_html(result.models)]
        if not result.metric_choice.empty:
            parts += ["<h3>Primary metric per (model, task)</h3>", figures.frame_html(result.metric_choice)]
        baselines = result.baselines
        zero = baselines[baselines["status"] != "ok"] if not baselines.empty else baselines
        if zero is not None and not zero.empty:
            parts += ["<h3>Baselines mu = 0 (gains undefined, left out)</h3>", figures.frame_html(zero, decimals=6)]
        return "\n".join(parts)
