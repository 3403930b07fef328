"""The section protocol and its registry (``sections`` has the module doc and the registered sections)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping


@dataclass(frozen=True)
class Inputs:
    """What the user gave beside the options: the input paths and the sections' own flags."""

    paths: tuple[str, ...]
    harness_metric: str | None = None  # --harness-metric
    leaderboard_map: str | None = None  # --leaderboard-map
    aliases: Mapping[str, str] = field(default_factory=dict)  # --model-alias


@dataclass(frozen=True)
class Figures:
    """The drawn figures by stem (or why there are none), and the helpers that inline a figure or draw a frame as a table."""

    by_stem: Mapping[str, Path]
    img: Callable[[Path], str]
    frame_html: Callable[..., str]
    note: str = ""  # why there are none, where there are none (--no-plots, or no matplotlib)


class Section:
    """One part of the report; subclasses override what they have (module doc)."""

    name: str = ""
    phase: str = "answer"  # when its terminal lines are printed: after the verdicts, or after the issues ("summary")

    def load(self, inputs: Inputs, options: Any, log: Any) -> Any:
        """The inputs it claims from the results files (its problems into ``log``); None or empty: none."""
        return None

    def attach(self, result: Any, loaded: Any, inputs: Inputs, log: Any) -> None:
        """Compute its part from ``loaded`` and attach it to ``result`` (its problems into ``log``)."""

    def files(self, result: Any, out: Path) -> list[str]:
        """Write its files under the (staged) report folder ``out``; the tables it wrote."""
        return []

    def plots(self, result: Any, folder: Path) -> list[Path]:
        return []

    def overview(self, result: Any, summary: Mapping[str, Any]) -> list[str]:
        return []

    def html(self, result: Any, figures: Figures) -> str:
        return ""

    def summary(self, result: Any) -> Mapping[str, Any]:
        return {}

    def lines(self, result: Any) -> list[str]:
        return []

    def tables_phrase(self, result: Any) -> str:
        return ""


class SectionRegistry:
    """The ordered sections (``register`` appends, or inserts ``before`` a named one)."""

    def __init__(self) -> None:
        self._sections: list[Section] = []

    def register(self, section: Section, *, before: str | None = None) -> Section:
        if not section.name or section.name in self.names():
            raise ValueError(f"a section needs a name not yet registered (got {section.name!r})")
        at = self.names().index(before) if before is not None else len(self._sections)
        self._sections.insert(at, section)
        return section

    def unregister(self, name: str) -> None:
        self._sections = [s for s in self._sections if s.name != name]

    def names(self) -> list[str]:
        return [s.name for s in self._sections]

    def __iter__(self) -> Iterator[Section]:
        return iter(list(self._sections))

    def __getitem__(self, name: str) -> Section:
        return next(s for s in self._sections if s.name == name)
