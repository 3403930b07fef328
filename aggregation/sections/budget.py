"""Budgeted sweeps' estimates (``instructeval run --budget``): computed inside ``aggregate``, shown here."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from .base import Figures, Section


class BudgetSection(Section):
    name = "budget"

    def files(self, result: Any, out: Path) -> list[str]:
        if result.budget is None:
            return []
        from ..budget_report import write_budget_files

        return write_budget_files(result.budget, out / "data", out / "tables", result.options.decimals)

    def plots(self, result: Any, folder: Path) -> list[Path]:
        if result.budget is None:
            return []
        from ..budget_report import budget_plots

        return budget_plots(result.budget, folder)

    def html(self, result: Any, figures: Figures) -> str:
        if result.budget is None:
            return ""
        from ..budget_report import budget_html

        return budget_html(result.budget, figures.by_stem, figures.img, figures.frame_html)

    def summary(self, result: Any) -> Mapping[str, Any]:
        return {"budget": result.budget.summary()} if result.budget is not None else {}
