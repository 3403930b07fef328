"""The protocol facts of each InstructEval task (Ajith et al.; original code ``data/*.py``).

Where the data lives and how it is formatted is in each task's harness YAML (``dataset_path``,
splits, ``doc_to_text``); what the protocol needs beyond the harness is in the ``task_spec.yaml``
beside it (``instructeval_tasks/<folder>/task_spec.yaml``): the task type, the label used for class
balancing, the text fields that are truncated and perturbed (in the original's order), every field
a row must have and the values it may take, the titles and column order of the report, the stock
lm-eval counterpart, and where the bank importers find the task. This module reads those files;
nothing else restates them. A task folder with a ``task_spec.yaml`` is a task: adding one is its
folder, its template (``templates/<name>.j2``) and its bank files.

``TASK_SPECS`` holds the InstructEval tasks (what ``all`` means to the runner), in their ``order``;
the 24 Instruction Induction tasks (kind ``ii``, ids ``ii_<task>``, ``instructeval_tasks/ii/``) are
in ``II_SPECS``, the Natural Instructions tasks (kind ``ni``, ids ``ni_<task>``, ``instructeval_tasks/ni/``)
in ``NI_SPECS``; ``get_spec`` knows all of them (``ALL_SPECS``).

Example:
    >>> spec = get_spec("instructeval_boolq")
    >>> spec.kind, spec.label_field, spec.text_fields, spec.report_title
    ('cls', 'answer', ('question', 'passage'), 'BoolQ')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

from .errors import UserError, did_you_mean

TaskKind = Literal["cls", "mcq", "gqa", "ii", "ni"]
TASK_KINDS = ("cls", "mcq", "gqa")  # the kinds a task_spec.yaml may declare (ii tasks are generated)
TASKS_DIR = Path(__file__).resolve().parent
SPEC_FILE = "task_spec.yaml"
# Field declarations of a task_spec.yaml (``fields:``); ``instructeval_tasks.rows`` checks rows against them.
FIELD_WORDS = ("text", "answers", "aliases")  # a string; a non-empty list of strings; {aliases: [...]}
FIELD_FORMS = ("one_of", "strings")           # {one_of: [values]} (exact type); {strings: N} (N strings)


class TaskSpecError(UserError, ValueError):
    """A malformed ``task_spec.yaml``; the message names the file, the field and what is expected."""


@dataclass(frozen=True)
class TaskSpec:
    """One InstructEval task, as its ``task_spec.yaml`` declares it.

    Attributes:
        name: short id used in task names (``instructeval_<name>``), bank files and templates.
        kind: ``cls`` (fixed verbalizer), ``mcq`` (per-item choices), ``gqa`` (generation) or
            ``ii`` (Instruction Induction: execution accuracy of generated outputs) or ``ni``
            (Natural Instructions: exact match and ROUGE-L of generated outputs).
        title: display name.
        local_dir: folder under ``data_dir`` holding ``train.jsonl`` and ``eval.jsonl``.
        label_field: field balanced over when sampling (classification only).
        text_fields: fields truncated and perturbed, in the original code's order.
        original_choice_order: the choice indices in the order the original scores its
            candidates (its template's ``label_map``); an exact tie in ``acc_per_token`` goes to
            the earliest of them, as the original's ``np.argmin`` does. ``None``: the choices are
            already in that order. Only BoolQ differs: choices False, True (HF label order), the
            original's ``{True: 'True', False: 'False'}``.
        folder: the task's folder under ``instructeval_tasks/`` (default: ``name``).
        report_title: column header in the aggregate tables (default: ``title``).
        order: position in ``--tasks all`` (unordered tasks after the ordered, by name).
        report_order: column position in the paper's tables (likewise).
        fields: every field a row must have, and its declaration (``FIELD_WORDS``, ``FIELD_FORMS``).
        stock: the stock lm-eval counterpart (``stock_task``, ``metric``, ``num_fewshot``, ``fields``,
            ``source``), or ``None``.
        no_stock: why there is no stock counterpart (when ``stock`` is ``None``).
        original_stem: the task's file stem in the original code's instruction folders.
        promptsource: where the PromptSource importer looks (``templates``, ``field_nouns``, ``note``).
        spec_file: the ``task_spec.yaml`` this spec was read from (empty for generated specs).
    """

    name: str
    kind: TaskKind
    title: str
    local_dir: str
    label_field: str | None
    text_fields: tuple[str, ...]
    original_choice_order: tuple[int, ...] | None = None
    folder: str | None = None
    report_title: str | None = None
    order: int | None = None
    report_order: int | None = None
    fields: Mapping[str, Any] = field(default_factory=dict, compare=False)
    stock: Mapping[str, Any] | None = field(default=None, compare=False)
    no_stock: str | None = None
    original_stem: str | None = None
    promptsource: Mapping[str, Any] | None = field(default=None, compare=False)
    spec_file: str = ""

    @property
    def yaml_path(self) -> str:
        """The task YAML relative to ``instructeval_tasks/``."""
        return f"{self.folder or self.name}/{self.task_name}.yaml"

    @property
    def task_name(self) -> str:
        return f"instructeval_{self.name}"

    @property
    def balanced(self) -> bool:
        """Classification samples are class-balanced (original ``balanced_sampling=True``)."""
        return self.kind == "cls"

    @property
    def classes(self) -> tuple[Any, ...] | None:
        """The task's declared classes (its label field's ``one_of``), which a balanced sample covers.

            >>> get_spec("boolq").classes, get_spec("nq_open").classes
            ((False, True), None)
        """
        declared = self.fields.get(self.label_field) if self.label_field else None
        if isinstance(declared, Mapping) and "one_of" in declared:
            return tuple(declared["one_of"])
        return None


_SPEC_KEYS = {
    "name": "the task id (instructeval_<name>, templates/<name>.j2, bank files <name>.yaml)",
    "kind": f"one of {', '.join(TASK_KINDS)}",
    "title": "the display name",
    "report_title": "the column header of the aggregate tables",
    "order": "position in --tasks all (an integer)",
    "report_order": "column position in the paper's tables (an integer)",
    "local_dir": "the folder under data_dir holding train.jsonl and eval.jsonl",
    "label_field": "the field balanced over when sampling, or null",
    "text_fields": "the fields truncated and perturbed (a list)",
    "original_choice_order": "the choice indices in the original's scoring order (a list of integers)",
    "fields": "the fields a row must have: text, answers, aliases, {one_of: [...]} or {strings: N}",
    "stock": "the stock lm-eval counterpart {stock_task, metric, num_fewshot, fields, source}, or {none: why}",
    "original_stem": "the file stem in the original code's instruction folders",
    "promptsource": "{templates: [...], field_nouns: {...}, note: ...} for the PromptSource importer",
}
_STOCK_KEYS = ("stock_task", "metric", "num_fewshot", "fields", "source")
_PROMPTSOURCE_KEYS = ("templates", "field_nouns", "note")


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _check_field(where: str, name: Any, declared: Any) -> None:
    if not isinstance(name, str) or not name:
        raise TaskSpecError(f"{where}: field names must be strings, got {name!r}")
    if declared in FIELD_WORDS:
        return
    if isinstance(declared, dict) and len(declared) == 1:
        (form, value), = declared.items()
        if form == "one_of" and isinstance(value, list) and value and len({type(v) for v in value}) == 1 \
                and type(value[0]) in (int, bool, str):
            return
        if form == "strings" and isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return
    raise TaskSpecError(
        f"{where}.{name}: {declared!r} is not a field declaration; expected one of {', '.join(FIELD_WORDS)}, "
        f"{{one_of: [values of one type]}} or {{strings: N}}"
    )


def _read_spec(path: Path) -> TaskSpec:
    """One ``task_spec.yaml`` as a :class:`TaskSpec`; every problem names the file and the key."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise TaskSpecError(f"{path}: cannot read the task spec ({err})") from None
    if not isinstance(data, dict):
        raise TaskSpecError(f"{path}: expected a mapping of {', '.join(_SPEC_KEYS)}")
    unknown = sorted(set(data) - set(_SPEC_KEYS))
    if unknown:
        raise TaskSpecError(f"{path}: unknown key(s) {unknown}{did_you_mean(str(unknown[0]), _SPEC_KEYS)}; "
                            f"known: {', '.join(_SPEC_KEYS)}")
    for key in ("name", "kind", "title", "local_dir", "text_fields", "fields"):
        if key not in data:
            raise TaskSpecError(f"{path}: missing {key!r} ({_SPEC_KEYS[key]})")
    name = data["name"]
    if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
        raise TaskSpecError(f"{path}: name {name!r} must be a lower-case identifier (letters, digits, _)")
    if name != path.parent.name:
        raise TaskSpecError(f"{path}: name {name!r} differs from its folder {path.parent.name!r}; rename one")
    if not (path.parent / f"instructeval_{name}.yaml").is_file():
        raise TaskSpecError(f"{path}: no task YAML instructeval_{name}.yaml beside it")
    if data["kind"] not in TASK_KINDS:
        raise TaskSpecError(f"{path}: kind {data['kind']!r} is not one of {', '.join(TASK_KINDS)}")
    for key in ("title", "local_dir", "report_title", "original_stem"):
        if key in data and (not isinstance(data[key], str) or not data[key].strip()):
            raise TaskSpecError(f"{path}: {key} must be a non-empty string")
    for key in ("order", "report_order"):
        if key in data and (isinstance(data[key], bool) or not isinstance(data[key], int)):
            raise TaskSpecError(f"{path}: {key} must be an integer, got {data[key]!r}")
    fields_ = data["fields"]
    if not isinstance(fields_, dict) or not fields_:
        raise TaskSpecError(f"{path}: fields must be a non-empty mapping of field -> declaration")
    for field_name, declared in fields_.items():
        _check_field(f"{path}: fields", field_name, declared)
    text_fields = data["text_fields"]
    if not _is_str_list(text_fields) or not text_fields:
        raise TaskSpecError(f"{path}: text_fields must be a non-empty list of field names")
    label = data.get("label_field")
    for used in [*text_fields, *([label] if label is not None else [])]:
        if used not in fields_:
            raise TaskSpecError(f"{path}: {used!r} is used but not declared under fields")
    if data["kind"] == "cls" and label is None:
        raise TaskSpecError(f"{path}: a classification task needs label_field (the field balanced over)")
    order = data.get("original_choice_order")
    if order is not None and (not isinstance(order, list) or not all(isinstance(i, int) for i in order)):
        raise TaskSpecError(f"{path}: original_choice_order must be a list of integers")
    stock, no_stock = data.get("stock"), None
    if stock is not None:
        if not isinstance(stock, dict):
            raise TaskSpecError(f"{path}: stock must be a mapping ({_SPEC_KEYS['stock']})")
        if set(stock) == {"none"}:
            stock, no_stock = None, str(stock["none"])
        else:
            bad = sorted(set(stock) - set(_STOCK_KEYS))
            if bad:
                raise TaskSpecError(f"{path}: stock: unknown key(s) {bad}; known: {', '.join(_STOCK_KEYS)} (or none: why)")
    promptsource = data.get("promptsource")
    if promptsource is not None:
        if not isinstance(promptsource, dict) or not _is_str_list(promptsource.get("templates")):
            raise TaskSpecError(f"{path}: promptsource needs templates: a list of promptsource template folders")
        bad = sorted(set(promptsource) - set(_PROMPTSOURCE_KEYS))
        if bad:
            raise TaskSpecError(f"{path}: promptsource: unknown key(s) {bad}; known: {', '.join(_PROMPTSOURCE_KEYS)}")
    return TaskSpec(
        name=name, kind=data["kind"], title=data["title"].strip(), local_dir=data["local_dir"],
        label_field=label, text_fields=tuple(text_fields),
        original_choice_order=tuple(order) if order is not None else None,
        folder=path.parent.name if path.parent.name != name else None,
        report_title=data.get("report_title"), order=data.get("order"), report_order=data.get("report_order"),
        fields=dict(fields_), stock=stock, no_stock=no_stock, original_stem=data.get("original_stem"),
        promptsource=promptsource, spec_file=str(path),
    )


def read_task_specs(root: Path = TASKS_DIR) -> dict[str, TaskSpec]:
    """Every ``<root>/<folder>/task_spec.yaml``, by name, in ``order`` (unordered ones after, by name)."""
    specs = {spec.name: spec for spec in map(_read_spec, sorted(root.glob(f"*/{SPEC_FILE}")))}
    return {name: specs[name] for name in _ordered_by(specs, "order")}


def _ordered_by(specs: Mapping[str, TaskSpec], key: str) -> tuple[str, ...]:
    """Task names by the integer attribute ``key``; tasks without one after the others, by name."""
    ranked = sorted(specs.values(), key=lambda s: (getattr(s, key) is None, getattr(s, key) or 0, s.name))
    return tuple(s.name for s in ranked)


TASK_SPECS: dict[str, TaskSpec] = read_task_specs()

# The aggregate tables' column order: the paper's (Tables 3-6), then tasks without a report_order.
REPORT_ORDER: tuple[str, ...] = _ordered_by(TASK_SPECS, "report_order")

TASK_TYPES: dict[str, tuple[str, ...]] = {
    kind: tuple(s.name for s in TASK_SPECS.values() if s.kind == kind) for kind in TASK_KINDS
}


class UnknownTaskError(UserError, KeyError, ValueError):
    """A task name or task list naming no known task or group; the message names the closest and the
    known ones. A ``KeyError`` (a lookup) and a ``ValueError`` (a bad list) for callers that catch those."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


def _ii_specs() -> dict[str, TaskSpec]:
    from .ii.names import II_IDS, source_name

    return {
        name: TaskSpec(name, "ii", f"Instruction Induction: {source_name(name)}", "instruction_induction", None,
                       ("input",), folder="instruction_induction")
        for name in II_IDS
    }


II_SPECS: dict[str, TaskSpec] = _ii_specs()


def _ni_specs() -> dict[str, TaskSpec]:
    from .ni.names import NI_IDS, category_of, source_name

    return {
        name: TaskSpec(name, "ni", f"Natural Instructions: {source_name(name)} ({category_of(name)})",
                       "natural_instructions", None, ("input",), folder="natural_instructions")
        for name in NI_IDS
    }


NI_SPECS: dict[str, TaskSpec] = _ni_specs()
ALL_SPECS: dict[str, TaskSpec] = {**TASK_SPECS, **II_SPECS, **NI_SPECS}

# Task groups a task list may name (``--tasks all``, ``--tasks instructeval_ii``, ...).
TASK_GROUPS: dict[str, tuple[str, ...]] = {
    "all": tuple(TASK_SPECS),
    "instructeval": tuple(TASK_SPECS),
    "instructeval_ii": tuple(II_SPECS),
    "ii": tuple(II_SPECS),
    "instructeval_ni": tuple(NI_SPECS),
    "ni": tuple(NI_SPECS),
}


def get_spec(name: str) -> TaskSpec:
    """Look a task up by short id (``agnews``, ``ii_sum``) or harness name (``instructeval_agnews``).

    Raises:
        UnknownTaskError: (a ``KeyError``) naming the closest task and listing the known ones.
    """
    key = str(name).removeprefix("instructeval_")
    try:
        return ALL_SPECS[key]
    except KeyError:
        raise UnknownTaskError(
            f"unknown InstructEval task {name!r}{did_you_mean(key, ALL_SPECS)}; known tasks: {', '.join(ALL_SPECS)}"
        ) from None


def resolve_task_names(values: list[str] | str) -> list[str]:
    """Task ids from comma lists of ids, harness names and groups (``TASK_GROUPS``), in order, once each.

    Example:
        >>> resolve_task_names("ii_sum,instructeval_agnews")
        ['ii_sum', 'agnews']
    """
    if isinstance(values, str):
        values = [values]
    names = [v.strip() for item in values for v in item.split(",") if v.strip()]
    out: list[str] = []
    unknown = []
    for name in names:
        if name in TASK_GROUPS:
            expanded = TASK_GROUPS[name]
        else:
            key = name.removeprefix("instructeval_")
            expanded = (key,) if key in ALL_SPECS else ()
            if not expanded:
                unknown.append(name)
        out.extend(t for t in expanded if t not in out)
    if unknown:
        hint = did_you_mean(unknown[0].removeprefix("instructeval_"), [*ALL_SPECS, *TASK_GROUPS])
        raise UnknownTaskError(
            f"unknown task(s) {unknown}{hint}; known: {', '.join(ALL_SPECS)} (groups: {', '.join(TASK_GROUPS)})"
        )
    return out
