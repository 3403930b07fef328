"""Problems found while loading and aggregating, collected rather than raised one by one.

Three levels:

- ``error``: some input was dropped (a broken file, a variant without metadata, conflicting
  duplicates, a protocol disagreement); what it would have contributed is missing from the tables.
- ``warning``: the numbers are computed but need attention (a group too small for a standard
  deviation gives NaN, a relative-gain baseline of 0, an incomplete sweep, missing sample logs).
- ``note``: informational (identical duplicates merged, a non-InstructEval task ignored).

``--strict`` (``strict=True``) turns warnings into errors: any warning or error then raises
:class:`AggregationError` listing every issue, before anything is written.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Iterable
from instructeval_tasks.errors import UserError

LEVELS = ("error", "warning", "note")


class AggregationError(UserError):
    """Input that cannot be aggregated; the message names the file and the variant.

    ``issues`` holds every collected :class:`Issue` when several problems are raised together.
    """

    def __init__(self, message: str, issues: Iterable["Issue"] = ()) -> None:
        super().__init__(message)
        self.issues = list(issues)


@dataclass(frozen=True)
class Issue:
    """One problem. ``file`` and ``variant`` (harness task name) locate it when known."""

    level: str
    code: str
    message: str
    file: str | None = None
    variant: str | None = None

    def sort_key(self) -> tuple:
        return (LEVELS.index(self.level), self.code, self.file or "", self.variant or "", self.message)

    def __str__(self) -> str:
        where = ", ".join(p for p in (self.file and f"file {self.file}", self.variant and f"variant {self.variant}") if p)
        return f"{self.level} [{self.code}] {where + ': ' if where else ''}{self.message}"

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class IssueLog:
    """An ordered, de-duplicated collection of issues."""

    items: list[Issue] = field(default_factory=list)

    def add(self, level: str, code: str, message: str, file: str | None = None, variant: str | None = None) -> Issue:
        if level not in LEVELS:
            raise ValueError(f"unknown issue level {level!r}")
        issue = Issue(level, code, message, file, variant)
        if issue not in self.items:
            self.items.append(issue)
        return issue

    def error(self, code: str, message: str, file: str | None = None, variant: str | None = None) -> Issue:
        return self.add("error", code, message, file, variant)

    def warn(self, code: str, message: str, file: str | None = None, variant: str | None = None) -> Issue:
        return self.add("warning", code, message, file, variant)

    def note(self, code: str, message: str, file: str | None = None, variant: str | None = None) -> Issue:
        return self.add("note", code, message, file, variant)

    def extend(self, issues: Iterable[Issue]) -> None:
        for issue in issues:
            if issue not in self.items:
                self.items.append(issue)

    def sorted(self) -> list[Issue]:
        return sorted(self.items, key=Issue.sort_key)

    def count(self, level: str) -> int:
        return sum(1 for i in self.items if i.level == level)

    def raise_if(self, strict: bool) -> None:
        """Raise :class:`AggregationError` on any error, or (``strict``) on any warning too."""
        bad = [i for i in self.sorted() if i.level == "error" or (strict and i.level == "warning")]
        if bad:
            head = f"{len(bad)} problem(s) in the results" + (" (--strict: warnings count as errors)" if strict else "")
            raise AggregationError(head + ":\n" + "\n".join(f"  - {i}" for i in bad), bad)
