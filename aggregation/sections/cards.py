"""The sensitivity cards (``sensitivity_card``): one per (model, task, setting), every measure the field reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Figures, Section


class CardsSection(Section):
    name = "cards"
    phase = "summary"

    def files(self, result: Any, out: Path) -> list[str]:
        if not result.cards:
            return []
        from ..sensitivity_report import write_card_files

        write_card_files(result, out / "sensitivity", out / "data")
        return []

    def html(self, result: Any, figures: Figures) -> str:
        if not result.cards:
            return ""
        from ..sensitivity_report import cards_html

        return cards_html(result.cards, figures.frame_html)

    def lines(self, result: Any) -> list[str]:
        from ..sensitivity_report import summary_lines

        return summary_lines(result.cards)
