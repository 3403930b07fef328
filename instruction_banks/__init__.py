"""Instruction banks: the instructions each selection method proposes, per task (import name ``instructeval_banks``).

A bank file is YAML in this schema (see ``README.md`` beside this file)::

    method: generic                 # the selection method
    tasks: all                      # "all", or a list of task ids (agnews, anli, ...)
    model: null                     # optional: the model a model-specific bank was selected for
    provenance:                     # required: where the instructions come from
      source: Ajith et al. (2024), Table 9
    entries:
      - id: generic-0               # stable, unique within (method, task, model)
        text: "Solve the following task:"

Every ``*.yaml`` below a bank directory is read; several files may serve one method (one file per
task, say). Instructions are plain data: the plugin never renders them as templates, so an entry
containing ``{{``, ``{%`` or ``{#`` is rejected as an unstripped template placeholder.

Example:
    >>> from instructeval_banks import load_bank
    >>> load_bank().entry("generic", "agnews", index=0).text
    'Solve the following task:'
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

BANKS_DIR = Path(__file__).resolve().parent

# The seven methods of the paper, in its display order.
PAPER_METHODS = ("null", "generic", "promptsource", "adhoc", "low_perplexity", "ape", "rlprompt")
ALL_TASKS = "all"
_METHOD_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_TEMPLATE_SYNTAX = ("{{", "{%", "{#")
_FILE_KEYS = {"schema", "method", "tasks", "model", "provenance", "entries", "description"}


class BankError(ValueError):
    """A malformed bank file or a failed lookup; the message names the file, the entry and the fix."""


def instruction_sha(text: str) -> str:
    """Short content hash of an instruction, recorded with every result (first 16 hex of sha256)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class BankEntry:
    """One instruction of one method for one task (and optionally one model)."""

    id: str
    text: str
    method: str
    task: str
    index: int
    model: str | None = None
    source_file: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def sha(self) -> str:
        return instruction_sha(self.text)


def _known_tasks() -> tuple[str, ...]:
    from instructeval_tasks.specs import TASK_SPECS

    return tuple(TASK_SPECS)


def _check_text(path: Path, where: str, method: str, text: Any) -> str:
    if not isinstance(text, str):
        raise BankError(f"{path}: {where}: 'text' must be a string, got {type(text).__name__}")
    if method == "null" and text.strip():
        raise BankError(f"{path}: {where}: the null method's entry must be the empty string")
    if method != "null" and not text.strip():
        raise BankError(f"{path}: {where}: empty instruction for method {method!r}; only the null method is empty")
    for token in _TEMPLATE_SYNTAX:
        if token in text:
            raise BankError(
                f"{path}: {where}: the instruction contains {token!r}, a template placeholder left in; "
                f"bank entries are plain text (remove the placeholder)"
            )
    return text


def parse_bank_file(path: Path, known_tasks: Iterable[str] | None = None) -> list[BankEntry]:
    """Validate one bank file and expand it into entries, one per (task, entry)."""
    known = tuple(known_tasks) if known_tasks is not None else _known_tasks()
    try:
        raw = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise BankError(f"{path}: not UTF-8 (byte {err.start}); save the file as UTF-8") from None
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as err:
        raise BankError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise BankError(f"{path}: a bank file is a mapping with method, tasks, provenance and entries; got {type(data).__name__}")
    unknown = set(data) - _FILE_KEYS
    if unknown:
        raise BankError(f"{path}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_FILE_KEYS)}")
    for key in ("method", "tasks", "provenance", "entries"):
        if key not in data:
            raise BankError(f"{path}: missing required key {key!r}")
    method = data["method"]
    if not isinstance(method, str) or not _METHOD_RE.match(method):
        raise BankError(f"{path}: 'method' must be a lower-case identifier like 'generic', got {method!r}")
    tasks = data["tasks"]
    if tasks == ALL_TASKS:
        tasks = list(known)
    elif isinstance(tasks, str):
        tasks = [tasks]
    if not isinstance(tasks, list) or not tasks or not all(isinstance(t, str) for t in tasks):
        raise BankError(f"{path}: 'tasks' must be 'all' or a non-empty list of task ids, got {data['tasks']!r}")
    for task in tasks:
        if task not in known:
            raise BankError(f"{path}: unknown task {task!r} in 'tasks'; known tasks: {', '.join(known)}")
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise BankError(f"{path}: 'model' must be a string or absent, got {model!r}")
    if not isinstance(data["provenance"], dict) or "source" not in data["provenance"]:
        raise BankError(f"{path}: 'provenance' must be a mapping with at least 'source'")
    entries = data["entries"]
    if not isinstance(entries, list) or not entries:
        raise BankError(f"{path}: 'entries' must be a non-empty list")
    parsed: list[tuple[str, str, dict[str, Any]]] = []
    seen: set[str] = set()
    for position, entry in enumerate(entries):
        where = f"entry {position}"
        if not isinstance(entry, dict):
            raise BankError(f"{path}: {where}: expected a mapping with 'id' and 'text', got {type(entry).__name__}")
        entry_id = entry.get("id")
        if not isinstance(entry_id, (str, int)) or isinstance(entry_id, bool) or str(entry_id) == "":
            raise BankError(f"{path}: {where}: missing or invalid 'id' (a non-empty string)")
        entry_id = str(entry_id)
        where = f"entry {position} (id {entry_id!r})"
        if entry_id in seen:
            raise BankError(f"{path}: {where}: duplicate id; ids are unique within a file")
        seen.add(entry_id)
        if "text" not in entry:
            raise BankError(f"{path}: {where}: missing 'text'")
        text = _check_text(path, where, method, entry["text"])
        parsed.append((entry_id, text, {k: v for k, v in entry.items() if k not in ("id", "text")}))
    return [
        BankEntry(entry_id, text, method, task, i, model, str(path), extra)
        for task in tasks
        for i, (entry_id, text, extra) in enumerate(parsed)
    ]


@dataclass
class Bank:
    """All entries of a bank directory, indexed by (method, task, model)."""

    root: Path
    entries_by_key: dict[tuple[str, str, str | None], list[BankEntry]]

    def methods(self, task: str | None = None) -> list[str]:
        found = {m for (m, t, _), _e in self.entries_by_key.items() if task is None or t == task}
        order = {m: i for i, m in enumerate(PAPER_METHODS)}
        return sorted(found, key=lambda m: (order.get(m, len(order)), m))

    def entries(self, method: str, task: str, model: str | None = None) -> list[BankEntry]:
        """The entries of ``method`` for ``task``; a model-specific bank wins when ``model`` has one."""
        if model is not None and (method, task, model) in self.entries_by_key:
            return self.entries_by_key[(method, task, model)]
        if (method, task, None) in self.entries_by_key:
            return self.entries_by_key[(method, task, None)]
        models = sorted(m for (me, t, m) in self.entries_by_key if me == method and t == task and m)
        if models:
            raise BankError(
                f"bank {self.root}: method {method!r} for task {task!r} is model-specific "
                f"(models: {', '.join(models)}); name one of them"
            )
        raise BankError(
            f"bank {self.root}: no method {method!r} for task {task!r}; "
            f"available: {', '.join(self.methods(task)) or 'none'}"
        )

    def entry(
        self,
        method: str,
        task: str,
        *,
        index: int | None = None,
        entry_id: str | None = None,
        model: str | None = None,
    ) -> BankEntry:
        """One entry by position (default 0) or by id."""
        entries = self.entries(method, task, model)
        if entry_id is not None:
            for entry in entries:
                if entry.id == entry_id:
                    return entry
            raise BankError(
                f"bank {self.root}: method {method!r}, task {task!r} has no entry id {entry_id!r}; "
                f"ids: {', '.join(e.id for e in entries)}"
            )
        index = 0 if index is None else index
        if not 0 <= index < len(entries):
            raise BankError(
                f"bank {self.root}: method {method!r}, task {task!r} has {len(entries)} entries "
                f"(instruction_index 0..{len(entries) - 1}); got {index}"
            )
        return entries[index]


def load_bank_dir(root: Path | str) -> Bank:
    """Read and validate every ``*.yaml`` below ``root``."""
    root = Path(root).expanduser().resolve()
    if not root.is_dir():
        raise BankError(f"bank directory {root} does not exist")
    by_key: dict[tuple[str, str, str | None], list[BankEntry]] = {}
    origin: dict[tuple[str, str, str | None], str] = {}
    for path in sorted(root.rglob("*.yaml")):
        for entry in parse_bank_file(path):
            key = (entry.method, entry.task, entry.model)
            if key in origin and origin[key] != entry.source_file:
                raise BankError(
                    f"{path}: method {entry.method!r}, task {entry.task!r} is also defined in {origin[key]}; "
                    f"one file per (method, task, model)"
                )
            origin[key] = entry.source_file
            by_key.setdefault(key, []).append(entry)
    if not by_key:
        raise BankError(f"bank directory {root} holds no *.yaml bank files")
    return Bank(root, by_key)


@functools.cache
def _cached_bank(root: str) -> Bank:
    return load_bank_dir(root)


def load_bank(root: Path | str | None = None) -> Bank:
    """The bank at ``root`` (default: the banks shipped with the package), cached per process."""
    return _cached_bank(str(Path(root or BANKS_DIR).expanduser().resolve()))
