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
    >>> _ = SECTIONS.register(Note())
    >>> "note" in SECTIONS.names()
    True
    >>> SECTIONS.unregister("note")
"""

from __future__ import annotations

from typing import Any, Sequence

from .base import Figures, Inputs, Section, SectionRegistry


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


def summary_of(result: Any) -> dict[str, Any]:
    """``summary.json``: the nine tasks' summary and every section's part."""
    out = result.summary()
    for section in SECTIONS:
        out.update(section.summary(result))
    return out


__all__ = ["SECTIONS", "summary_of", "Figures", "Inputs", "Section", "SectionRegistry", "collect"]
