"""The protocol facts of each InstructEval task (Ajith et al.; original code ``data/*.py``).

Where the data lives and how it is formatted is in each task's YAML (``dataset_path``, splits,
``doc_to_text``); this table holds what the protocol needs beyond the harness: the task type,
the label used for class balancing, the text fields that are truncated and perturbed (in the
original's order), and the folder name of the local-file layout (``<data_dir>/<local_dir>/``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from instructeval_tasks.errors import UserError, did_you_mean

TaskKind = Literal["cls", "mcq", "gqa"]


@dataclass(frozen=True)
class TaskSpec:
    """One InstructEval task.

    Attributes:
        name: short id used in task names (``instructeval_<name>``), bank files and templates.
        kind: ``cls`` (fixed verbalizer), ``mcq`` (per-item choices) or ``gqa`` (generation).
        title: display name.
        local_dir: folder under ``data_dir`` holding ``train.jsonl`` and ``eval.jsonl``.
        label_field: field balanced over when sampling (classification only).
        text_fields: fields truncated and perturbed, in the original code's order.
        original_choice_order: the choice indices in the order the original scores its
            candidates (its template's ``label_map``); an exact tie in ``acc_per_token`` goes to
            the earliest of them, as the original's ``np.argmin`` does. ``None``: the choices are
            already in that order. Only BoolQ differs: choices False, True (HF label order), the
            original's ``{True: 'True', False: 'False'}``.
    """

    name: str
    kind: TaskKind
    title: str
    local_dir: str
    label_field: str | None
    text_fields: tuple[str, ...]
    original_choice_order: tuple[int, ...] | None = None

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


class UnknownTaskError(UserError, KeyError):
    """A task name that is not one of the nine; still a ``KeyError`` for callers that catch that."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


def get_spec(name: str) -> TaskSpec:
    """Look a task up by short id (``agnews``) or harness name (``instructeval_agnews``).

    Raises:
        UnknownTaskError: (a ``KeyError``) naming the closest task and listing the known ones.
    """
    key = str(name).removeprefix("instructeval_")
    try:
        return TASK_SPECS[key]
    except KeyError:
        raise UnknownTaskError(
            f"unknown InstructEval task {name!r}{did_you_mean(key, TASK_SPECS)}; known tasks: {', '.join(TASK_SPECS)}"
        ) from None
