"""The protocol facts of each InstructEval task (Ajith et al.; original code ``data/*.py``).

Where the data lives and how it is formatted is in each task's YAML (``dataset_path``, splits,
``doc_to_text``); this table holds what the protocol needs beyond the harness: the task type,
the label used for class balancing, the text fields that are truncated and perturbed (in the
original's order), and the folder name of the local-file layout (``<data_dir>/<local_dir>/``).

``TASK_SPECS`` holds the nine InstructEval tasks (what ``all`` means to the runner); the 24
Instruction Induction tasks (kind ``ii``, ids ``ii_<task>``, ``instructeval_tasks/ii/``) are in
``II_SPECS``; ``get_spec`` knows both (``ALL_SPECS``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .errors import UserError, did_you_mean

TaskKind = Literal["cls", "mcq", "gqa", "ii"]


@dataclass(frozen=True)
class TaskSpec:
    """One InstructEval task.

    Attributes:
        name: short id used in task names (``instructeval_<name>``), bank files and templates.
        kind: ``cls`` (fixed verbalizer), ``mcq`` (per-item choices), ``gqa`` (generation) or
            ``ii`` (Instruction Induction: execution accuracy of generated outputs).
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
    """

    name: str
    kind: TaskKind
    title: str
    local_dir: str
    label_field: str | None
    text_fields: tuple[str, ...]
    original_choice_order: tuple[int, ...] | None = None
    folder: str | None = None

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


TASK_SPECS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec("agnews", "cls", "AG News", "ag_news", "label", ("text",)),
        TaskSpec("anli", "cls", "ANLI (round 1)", "anli", "label", ("premise", "hypothesis")),
        TaskSpec("boolq", "cls", "BoolQ", "boolq", "answer", ("question", "passage"), original_choice_order=(1, 0)),
        TaskSpec("imdb", "cls", "IMDB", "imdb", "label", ("text",)),
        TaskSpec("emotion", "cls", "TweetEval Emotion", "tweet_eval_emotion", "label", ("text",)),
        TaskSpec("cosmosqa", "mcq", "CosmosQA", "cosmos_qa", "label", ("context", "question")),
        TaskSpec("hellaswag", "mcq", "HellaSwag", "hellaswag", "label", ("ctx",)),
        TaskSpec("nq_open", "gqa", "NQ-Open", "nq_open", None, ("question",)),
        TaskSpec("triviaqa", "gqa", "TriviaQA", "trivia_qa", None, ("question",)),
    )
}

TASK_TYPES: dict[str, tuple[str, ...]] = {
    kind: tuple(s.name for s in TASK_SPECS.values() if s.kind == kind) for kind in ("cls", "mcq", "gqa")
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
ALL_SPECS: dict[str, TaskSpec] = {**TASK_SPECS, **II_SPECS}

# Task groups a task list may name (``--tasks all``, ``--tasks instructeval_ii``, ...).
TASK_GROUPS: dict[str, tuple[str, ...]] = {
    "all": tuple(TASK_SPECS),
    "instructeval": tuple(TASK_SPECS),
    "instructeval_ii": tuple(II_SPECS),
    "ii": tuple(II_SPECS),
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
