"""Why the report has no figures, where it has none (``--no-plots``, or no matplotlib)."""

from __future__ import annotations

import html
from typing import Any

from .base import Figures, Section


class FiguresNoteSection(Section):
    name = "figures_note"

    def html(self, result: Any, figures: Figures) -> str:
        return f"<p class='note'>{html.escape(figures.note)}</p>" if figures.note else ""
