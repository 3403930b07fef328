"""The bank file schema: entries, validation and parsing of one native bank file.

A native bank file is a YAML mapping (see ``README.md`` beside this module)::

    method: generic                 # the selection method (lower-case identifier)
    tasks: all                      # "all", or a list of task ids (agnews, anli, ...)
    model: null                     # optional: the model a model-specific bank was selected for
    provenance:                     # required: where the instructions come from
      source: Ajith et al. (2024), Table 9
    entries:
      - id: generic-0               # stable, unique within the file
        text: "Solve the following task:"
      - id: structured-agnews-0     # or a structured (Natural Instructions) entry
        structured: {prompt: ..., definition: ..., positive_examples: [...]}

Validation collects every problem of a file (``check_bank_file``) so that ``instructeval banks
validate`` can list them all; ``parse_bank_file`` raises one :class:`BankError` holding all of them.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml
from instructeval_tasks.selection_methods import SELECTION_METHODS

from .bank_errors import TEMPLATE_SYNTAX, BankError  # noqa: F401  (re-exported)

# The seven methods of the paper, in its display order.
PAPER_METHODS = tuple(SELECTION_METHODS)  # the paper's seven, in its row order
ALL_TASKS = "all"
METHOD_RE = re.compile(r"^[a-z][a-z0-9_]*$")
FILE_KEYS = frozenset({"schema", "method", "tasks", "model", "provenance", "entries", "description"})


def instruction_sha(text: str) -> str:
    """Short content hash of an instruction, recorded with every result (first 16 hex of sha256)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def normalize_text(text: str) -> str:
    """Case- and whitespace-insensitive form of an instruction, used to detect duplicates."""
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class BankEntry:
    """One instruction of one method for one task (and optionally one model).

    ``text`` is what reaches the prompt. For a structured entry (``structured`` is the Natural
    Instructions mapping) it is the rendering under the default encoding (``full``); the task applies
    another encoding at run time with :func:`instructeval_banks.render_structured`.
    """

    id: str
    text: str
    method: str
    task: str
    index: int
    model: str | None = None
    source_file: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    structured: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)

    @property
    def sha(self) -> str:
        return instruction_sha(self.text)

    @property
    def is_structured(self) -> bool:
        return self.structured is not None


def known_tasks() -> tuple[str, ...]:
    """Every task a bank may name: the nine InstructEval tasks, then the Instruction Induction ``ii_*`` tasks."""
    from instructeval_tasks.specs import ALL_SPECS

    return tuple(ALL_SPECS)


def text_problems(method: str, text: Any) -> list[str]:
    """What is wrong with an instruction string for ``method`` (empty list: nothing)."""
    if not isinstance(text, str):
        return [f"'text' must be a string, got {type(text).__name__}"]
    problems = []
    if method == "null" and text.strip():
        problems.append("the null method's entry must be the empty string")
    if method != "null" and not text.strip():
        problems.append(f"empty instruction for method {method!r}; only the null method is empty")
    for token in TEMPLATE_SYNTAX:
        if token in text:
            problems.append(
                f"the instruction contains {token!r}, a template placeholder left in; "
                f"bank entries are plain text (remove the placeholder)"
            )
    return problems


def read_yaml(path: Path, errors: list[str]) -> Any:
    """Load a YAML file as UTF-8; on failure append the reason to ``errors`` and return ``None``."""
    try:
        raw = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        errors.append(f"{path}: not UTF-8 (byte {err.start}); save the file as UTF-8")
        return None
    except OSError as err:
        errors.append(f"{path}: cannot read: {err}")
        return None
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as err:
        errors.append(f"{path}: not valid YAML: {err}")
        return None


def _file_header(path: Path, data: dict, known: tuple[str, ...], errors: list[str]):
    """Check the file-level keys; return (method, tasks, model) or ``None`` when unusable."""
    start = len(errors)
    unknown = set(data) - FILE_KEYS
    if unknown:
        errors.append(f"{path}: unknown key(s) {sorted(unknown)}; allowed: {sorted(FILE_KEYS)}")
    for key in ("method", "tasks", "provenance", "entries"):
        if key not in data:
            errors.append(f"{path}: missing required key {key!r}")
    method = data.get("method")
    if "method" in data and (not isinstance(method, str) or not METHOD_RE.match(method)):
        errors.append(f"{path}: 'method' must be a lower-case identifier like 'generic', got {method!r}")
        method = None
    tasks = data.get("tasks")
    if tasks == ALL_TASKS:
        tasks = list(known)
    elif isinstance(tasks, str):
        tasks = [tasks]
    if "tasks" in data:
        if not isinstance(tasks, list) or not tasks or not all(isinstance(t, str) for t in tasks):
            errors.append(f"{path}: 'tasks' must be 'all' or a non-empty list of task ids, got {data['tasks']!r}")
            tasks = None
        else:
            for task in tasks:
                if task not in known:
                    errors.append(f"{path}: unknown task {task!r} in 'tasks'; known tasks: {', '.join(known)}")
            if len(set(tasks)) != len(tasks):
                errors.append(f"{path}: 'tasks' lists a task twice: {tasks}")
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        errors.append(f"{path}: 'model' must be a string or absent, got {model!r}")
    if "provenance" in data and (not isinstance(data["provenance"], dict) or "source" not in data["provenance"]):
        errors.append(f"{path}: 'provenance' must be a mapping with at least 'source'")
    entries = data.get("entries")
    if "entries" in data and (not isinstance(entries, list) or not entries):
        errors.append(f"{path}: 'entries' must be a non-empty list")
    if len(errors) > start:
        return None
    return method, tasks, model


def _entry(path: Path, position: int, entry: Any, method: str, seen: dict[str, str], texts: dict[str, str], errors: list[str]):
    """Check one entry; return (id, text, extra, structured) or ``None``."""
    from .structured import render_structured, structured_problems

    where = f"entry {position}"
    if not isinstance(entry, dict):
        errors.append(f"{path}: {where}: expected a mapping with 'id' and 'text', got {type(entry).__name__}")
        return None
    entry_id = entry.get("id")
    if not isinstance(entry_id, (str, int)) or isinstance(entry_id, bool) or str(entry_id) == "":
        errors.append(f"{path}: {where}: missing or invalid 'id' (a non-empty string)")
        return None
    entry_id = str(entry_id)
    where = f"entry {position} (id {entry_id!r})"
    start = len(errors)
    if entry_id in seen:
        errors.append(f"{path}: {where}: duplicate id; ids are unique within a file")
    seen[entry_id] = where
    structured = entry.get("structured")
    if "text" in entry and "structured" in entry:
        errors.append(f"{path}: {where}: has both 'text' and 'structured'; keep one")
        return None
    if "structured" in entry:
        if method == "null":
            errors.append(f"{path}: {where}: the null method cannot have a structured entry")
            return None
        problems = structured_problems(structured)
        errors.extend(f"{path}: {where}: {p}" for p in problems)
        if problems:
            return None
        text = render_structured(structured)
    elif "text" not in entry:
        errors.append(f"{path}: {where}: missing 'text' (or 'structured')")
        return None
    else:
        text = entry["text"]
        errors.extend(f"{path}: {where}: {p}" for p in text_problems(method, text))
    if len(errors) > start:
        return None
    key = normalize_text(text)
    if method != "null" and key in texts:
        errors.append(
            f"{path}: {where}: duplicate instruction text (same as {texts[key]}, ignoring case and whitespace)"
        )
        return None
    texts[key] = where
    extra = {k: v for k, v in entry.items() if k not in ("id", "text", "structured")}
    return entry_id, text, extra, structured


def check_bank_file(
    path: Path | str, known_tasks_: Iterable[str] | None = None, data: Any = None
) -> tuple[list[BankEntry], list[str]]:
    """Validate one native bank file, collecting every problem: ``(entries, errors)``.

    ``entries`` is empty when the file header is unusable; otherwise it holds the valid entries.
    ``data`` is the already-loaded YAML, if the caller has read it.
    """
    path = Path(path)
    known = tuple(known_tasks_) if known_tasks_ is not None else known_tasks()
    errors: list[str] = []
    if data is None:
        data = read_yaml(path, errors)
        if errors:
            return [], errors
    if not isinstance(data, dict):
        errors.append(
            f"{path}: a bank file is a mapping with method, tasks, provenance and entries "
            f"(or, in the original InstructEval layout, a list of strings); got {type(data).__name__}"
        )
        return [], errors
    header = _file_header(path, data, known, errors)
    if header is None:
        return [], errors
    method, tasks, model = header
    parsed = []
    seen: dict[str, str] = {}
    texts: dict[str, str] = {}
    for position, raw_entry in enumerate(data["entries"]):
        item = _entry(path, position, raw_entry, method, seen, texts, errors)
        if item is not None:
            parsed.append(item)
    entries = [
        BankEntry(entry_id, text, method, task, i, model, str(path), extra, structured)
        for task in tasks
        for i, (entry_id, text, extra, structured) in enumerate(parsed)
    ]
    return entries, errors


def parse_bank_file(path: Path | str, known_tasks: Iterable[str] | None = None) -> list[BankEntry]:
    """Validate one native bank file and expand it into entries, one per (task, entry).

    Raises :class:`BankError` listing every problem of the file.
    """
    entries, errors = check_bank_file(path, known_tasks)
    if errors:
        raise BankError(errors)
    return entries
