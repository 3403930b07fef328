"""The comparison with stock (leaderboard) results of the same models (``leaderboard_report``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from .base import Figures, Inputs, Section


class LeaderboardSection(Section):
    name = "leaderboard"

    def attach(self, result: Any, loaded: Any, inputs: Inputs, log: Any) -> None:
        if result.variants is None or result.variants.empty:  # nothing of InstructEval's to compare with
            return
        from ..leaderboard_report import add_leaderboard

        add_leaderboard(result, result.runset, list(inputs.paths), leaderboard_map=inputs.leaderboard_map,
                        aliases=dict(inputs.aliases))

    def plots(self, result: Any, folder: Path) -> list[Path]:
        if result.leaderboard is None:
            return []
        from ..leaderboard_report import leaderboard_plots

        return leaderboard_plots(result.leaderboard, folder)

    def html(self, result: Any, figures: Figures) -> str:
        if result.leaderboard is None:
            return ""
        from ..leaderboard_report import leaderboard_html

        return leaderboard_html(result.leaderboard, result.tables, figures.by_stem, figures.img)

    def summary(self, result: Any) -> Mapping[str, Any]:
        return {"leaderboard": result.leaderboard.summary()} if result.leaderboard is not None else {}
