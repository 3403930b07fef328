"""The report's sections: one registered :class:`Section` per result kind, in report order (``SECTIONS``).

A section claims its inputs (``load``: the part of the results files it reads, before the nine tasks
are aggregated), attaches what it computes to the :class:`~instructeval_aggregation.pipeline.Aggregates`
(``attach``), and then says, each in one method, what it writes under ``--out`` (``files``), which
figures it draws (``plots``), its overview lines and HTML in ``report.html`` (``overview``, ``html``),
its part of ``summary.json`` (``summary``), its terminal lines (``lines``, printed after the verdicts
in phase ``answer`` or after the issues in phase ``summary``) and how the closing line names its
tables (``tables_phrase``). Every method has a do-nothing default, so a section defines only what it
has. :func:`collect` (the Python API and ``instructeval aggregate`` alike) and the report writer
loop over ``SECTIONS``; they know no section by name.

Example -- a section that adds one line to the overview of every report::

    >>> from instructeval_aggregation.sections import SECTIONS, Section
    >>> class Note(Section):
    ...     name = "note"
    ...     def overview(self, result, summary):
    ...         return ["<li>a note</li>"]
    >>> SECTIONS.register(Note())
    >>> "note" in SECTIONS.names()
    True
    >>> SECTIONS.unregister("note")
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence


@dataclass(frozen=True)
class Inputs:
    """What the user gave beside the options: the input paths and the sections' own flags."""

    paths: tuple[str, ...]
    harness_metric: str | None = None  # --harness-metric
    leaderboard_map: str | None = None  # --leaderboard-map
    aliases: Mapping[str, str] = field(default_factory=dict)  # --model-alias


@dataclass(frozen=True)
class Figures:
    """The drawn figures by stem, and the helpers that inline a figure or draw a frame as a table."""

    by_stem: Mapping[str, Path]
    img: Callable[[Path], str]
    frame_html: Callable[..., str]


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


SECTIONS = SectionRegistry()


def _register_builtin() -> None:
    from .budget import BudgetSection
    from .cards import CardsSection
    from .definitions import DefinitionsSection
    from .figures_note import FiguresNoteSection
    from .harness import HarnessSection
    from .leaderboard import LeaderboardSection
    from .models import ModelsSection
    from .natural_instructions import NaturalInstructionsSection
    from .paper_tables import PaperTablesSection
    from .runs import RunsSection

    for section in (PaperTablesSection(), BudgetSection(), LeaderboardSection(), HarnessSection(), CardsSection(),
                    NaturalInstructionsSection(), FiguresNoteSection(), ModelsSection(), RunsSection(),
                    DefinitionsSection()):
        SECTIONS.register(section)


_register_builtin()


def collect(paths: Sequence[str] | Inputs, options: Any = None, **overrides: Any) -> Any:
    """Every section's result from results files or folders: what ``instructeval aggregate`` reports.

    ``paths``: the inputs (or an :class:`Inputs` with the sections' flags); ``options``: an
    ``AggregateOptions`` (keywords replace its fields). Returns the ``Aggregates`` that
    ``write_report`` writes.

    Example::

        from instructeval_aggregation import collect, write_report
        write_report(collect(["runs/"], seed="exp1"), "report/")
    """
    from dataclasses import asdict

    from ..issues import IssueLog
    from ..loading import load_runs
    from ..pipeline import AggregateOptions, aggregate

    inputs = paths if isinstance(paths, Inputs) else Inputs(tuple(str(p) for p in paths))
    options = options or AggregateOptions()
    if overrides:
        options = AggregateOptions(**{**asdict(options), **overrides})
    options.validate()
    runset = load_runs(list(inputs.paths), strict=options.strict, samples=options.use_samples)
    log = IssueLog()  # the sections' problems, joined to the report's once every section is attached
    loaded = {s.name: s.load(inputs, options, log) for s in SECTIONS}
    result = aggregate(runset, options, allow_empty=any(bool(v) for v in loaded.values()))
    for section in SECTIONS:
        section.attach(result, loaded[section.name], inputs, log)
    if log.items:
        merged = IssueLog()
        merged.extend(list(result.issues) + list(log.items))
        result.issues = merged.sorted()
    return result


__all__ = ["SECTIONS", "Figures", "Inputs", "Section", "SectionRegistry", "collect"]
