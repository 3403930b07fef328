"""Build an InstructEval task without a model and render its prompts: for previews and tests."""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Iterator


class _NoScoringNotes(logging.Filter):
    """Drops the task's "acc_per_token is not reported" warning: a preview scores nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "is not reported" not in str(record.msg)


@contextlib.contextmanager
def _quiet_scoring_notes() -> Iterator[None]:
    logger = logging.getLogger("instructeval_tasks.task")
    note_filter = _NoScoringNotes()
    logger.addFilter(note_filter)
    try:
        yield
    finally:
        logger.removeFilter(note_filter)


def build_task(task: str, metadata: dict[str, Any] | None = None, num_fewshot: int | None = None):
    """The harness task object for ``task`` (``agnews`` or ``instructeval_agnews``) with ``metadata``.

    ``num_fewshot`` overrides the YAML's K as ``lm_eval --num_fewshot`` does (None keeps it). The
    task's warning that ``acc_per_token`` cannot be scored without a tokenizer is not shown: a
    preview scores nothing.
    """
    from instructeval_tasks import task_manager
    from instructeval_tasks.specs import get_spec

    name = get_spec(task).task_name
    with _quiet_scoring_notes():  # no model, so no tokenizer for acc_per_token: nothing to warn about
        loaded = task_manager(metadata=dict(metadata or {})).load([name])
    task_obj = loaded["tasks"][name]
    if num_fewshot is not None:
        task_obj.set_config(key="num_fewshot", value=num_fewshot)
    return task_obj


def render_prompt(task_obj, doc_index: int = 0) -> tuple[str, list[str]]:
    """``(context, continuations)`` of one eval document, exactly as the harness will request them."""
    doc = task_obj.eval_docs[doc_index]
    context = task_obj.fewshot_context(doc, int(task_obj.config.num_fewshot or 0))
    requests = task_obj.construct_requests(doc, context, metadata=(task_obj.config.task, doc_index, 1))
    if not isinstance(requests, list):
        return context, []
    return context, [req.arguments[1] for req in requests]
