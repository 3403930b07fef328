"""Build an InstructEval task without a model and render its prompts: for previews and tests."""

from __future__ import annotations

from typing import Any


def build_task(task: str, metadata: dict[str, Any] | None = None, num_fewshot: int | None = None):
    """The harness task object for ``task`` (``agnews`` or ``instructeval_agnews``) with ``metadata``.

    ``num_fewshot`` overrides the YAML's K as ``lm_eval --num_fewshot`` does (None keeps it).
    """
    from instructeval_tasks import task_manager
    from instructeval_tasks.specs import get_spec

    name = get_spec(task).task_name
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
