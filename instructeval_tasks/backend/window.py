"""The window check of ``instructeval-hf``: prompts longer than ``max_length`` are refused before the
first forward pass of an evaluation, or (``allow_truncation=True``) run and recorded per task.

The harness cuts a request that does not fit the window from the left, the instruction first, and
still credits the instruction with the score. At the first request call (``loglikelihood`` or
``generate_until``) of an lm-eval ``evaluate`` call, every request of every task of that evaluation
(their ``Instance`` objects are all built by then) is measured with this model's own encoding, by
the rules of ``instructeval_tasks.truncation``: a loglikelihood request as ``loglikelihood`` encodes
it (``_encode_pair``; one prefix token for an empty context), a generation context as
``tok_batch_encode`` encodes it, with the ``max_gen_toks`` that lm-eval's ``normalize_gen_kwargs`` reads.

- A task with a cut request is refused (:class:`~instructeval_tasks.truncation.TruncationError`:
  the task, how many of its prompts are cut, the longest, the window and the fix). Under the
  ``lm_eval`` CLI that is one line on stderr, ``lm_eval: error: ...``, and exit code 2; elsewhere
  (``simple_evaluate`` in a program) the exception propagates.
- A task is allowed by ``allow_truncation=True`` in ``--model_args`` (every task), or by
  ``allow_truncation: true`` in its own metadata (what a sweep run with ``--allow-truncation``
  sets). It runs, with a warning, and its record (``truncation`` in its config metadata: items cut
  of how many, tokens cut per item, the instruction intact, partly cut or cut entirely; doc ids as
  the samples log gives them) is written into the results file, where ``instructeval aggregate``
  warns about it. The instruction is an InstructEval task's (its description, or the head of the
  first user turn), else the task's own description; the cut is taken to reach it first.
- A request no setting can evaluate -- an answer longer than the window, or a ``max_gen_toks``
  that leaves no room for a prompt -- is refused even when truncation is allowed.

Not measured: tasks the sweep has already checked against this model (``truncation.mark_checked``:
``instructeval run`` refuses or records its variants itself) or whose cuts it has recorded;
requests sent outside lm-eval's ``evaluate`` (a direct ``lm.loglikelihood(...)``, as the induction
methods make); rolling log-likelihoods (cut into windows by design); seq2seq models.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, Mapping

from lm_eval.utils import apply_template

from ..truncation import (ALLOW_TRUNCATION_KEY, TruncationError, checked, instruction_text, measure_requests,
                          record_cuts, recorded_cuts, unfit_reason)
from .generation import context_ids

log = logging.getLogger(__name__)

MEASURED = ("loglikelihood", "generate_until")


def evaluation_tasks() -> Mapping[str, Any] | None:
    """The tasks (name -> task) of the lm-eval ``evaluate`` call that is running this request, or None.

    The harness passes a model nothing but the requests; ``evaluate``'s own locals are the one
    record of the tasks they came from (``eval_tasks``: a dict in lm-eval 0.4.13, a list of
    ``TaskOutput`` in earlier releases)."""
    frame = sys._getframe(1)
    try:
        while frame is not None:
            if frame.f_code.co_name == "evaluate" and frame.f_globals.get("__name__") == "lm_eval.evaluator":
                tasks = frame.f_locals.get("eval_tasks")
                if isinstance(tasks, Mapping):
                    return tasks
                if isinstance(tasks, list):
                    return {t.task_name: t.task for t in tasks if getattr(t, "task", None) is not None}
                return None
            frame = frame.f_back
        return None
    finally:
        del frame


def under_lm_eval_cli() -> bool:
    """Whether this process is the ``lm_eval`` command (its ``cli_evaluate`` is on the stack)."""
    frame = sys._getframe(1)
    try:
        while frame is not None:
            path = Path(frame.f_code.co_filename)
            if frame.f_code.co_name == "cli_evaluate" and path.name == "__main__.py" and path.parent.name == "lm_eval":
                return True
            frame = frame.f_back
        return False
    finally:
        del frame


def as_bool(value: Any) -> bool:
    """A boolean model argument or metadata value: strings ``0``, ``false``, ``no``, ``off`` and ``""``
    are false (as lm-eval passes ``--model_args`` values), anything else by its truth."""
    if isinstance(value, str):
        return value.strip().lower() not in ("0", "false", "no", "off", "")
    return bool(value)


def allowed_by_task(task: Any) -> bool:
    """``allow_truncation`` is true in the task's metadata."""
    metadata = getattr(getattr(task, "config", None), "metadata", None)
    return isinstance(metadata, Mapping) and as_bool(metadata.get(ALLOW_TRUNCATION_KEY, False))


def task_instruction(task: Any, doc: Any) -> str:
    """What heads ``task``'s prompts: an InstructEval task's instruction, else the task's description
    (rendered for ``doc``, as the harness renders it per document); ``""`` for neither."""
    if hasattr(task, "prompt_description"):  # InstructEvalTask: its instruction, whatever its placement
        return instruction_text(task)
    description = getattr(getattr(task, "config", None), "description", None)
    if not isinstance(description, str) or not description.strip():
        return ""
    try:
        return apply_template(description, doc if isinstance(doc, dict) else {})
    except Exception:  # a template that needs more than the document: its text as written
        return description


def measure_task(lm: Any, task: Any) -> tuple[dict[str, Any] | None, str | None]:
    """``(record, unfit)`` of ``task``'s built requests on ``lm``: the ``truncation`` record of the cut
    ones (None: nothing cut), and why a request cannot be evaluated at any setting (None: all can)."""
    instances = [instance for instance in task.instances if instance.request_type in MEASURED]
    if not instances:
        return None, None
    record, unfit = measure_requests(lm, instances, instruction=task_instruction(task, instances[0].doc),
                                     context_length=lambda context: len(context_ids(lm, context)))
    if unfit is None:
        return record, None
    return record, (f"{unfit_reason(unfit, lm.max_length)}; raise the window (max_length= in --model_args) if the "
                    f"model allows it, or leave this task out")


def _refusal(name: str, record: Mapping[str, Any], others: list[str]) -> str:
    longest = record["longest"]
    head = (f", the instruction ({record['instruction_tokens']} tokens) first, and the scores would be credited to an "
            f"instruction the model never saw in full" if record["instruction_tokens"] else ", the start of the prompt first")
    more = f"; so do prompts of {len(others)} more task(s): {', '.join(others)}" if others else ""
    return (f"instructeval-hf: task {name}: {record['items']} of {record['of']} prompts do not fit the model's window "
            f"of {record['window']} tokens (the longest, item {longest['doc_id']}, has {longest['tokens']} tokens){more}; "
            f"the harness would cut them from the left{head}. Shorten the instruction or the demos (--num_fewshot), "
            f"raise the window (max_length= in --model_args) if the model allows it, or add allow_truncation=True to "
            f"--model_args to run anyway and record what was cut in the results")


def _stop(message: str) -> None:
    """Raise the refusal: under the ``lm_eval`` CLI one line on stderr and exit code 2."""
    error = TruncationError(message)
    if under_lm_eval_cli():
        print(f"lm_eval: error: {message}", file=sys.stderr, flush=True)
        raise SystemExit(2) from error
    raise error


def check_evaluation(lm: Any) -> None:
    """Measure the running evaluation's tasks once, before its first forward pass (module docstring).

    ``lm`` keeps the evaluation it checked (``_ie_window_tasks``), so the later request calls of the
    same evaluation pass at once; ``get_model_info`` (called when the evaluation ends) forgets it."""
    tasks = evaluation_tasks()
    if tasks is None or lm._ie_window_tasks is tasks:
        return
    lm._ie_window_tasks = tasks
    if getattr(lm, "backend", "causal") != "causal":
        return
    measured: list[tuple[str, Any, dict[str, Any]]] = []
    for name, task in tasks.items():
        if checked(task, lm) or recorded_cuts(task) or not getattr(task, "instances", None):
            continue  # the sweep measured it (and recorded its cuts); or nothing to measure
        record, unfit = measure_task(lm, task)
        if unfit:
            _stop(f"instructeval-hf: task {name}: {unfit}")
        if record is not None:
            measured.append((name, task, record))
    refused = [(name, record) for name, task, record in measured if not (lm.allow_truncation or allowed_by_task(task))]
    if refused:
        name, record = refused[0]
        _stop(_refusal(name, record, [other for other, _ in refused[1:]]))
    for name, task, record in measured:
        record_cuts(task, record)
        log.warning("instructeval-hf: task %s: %d of %d prompts cut to the window of %d tokens (allow_truncation); the "
                    "instruction lost tokens in %d of them (%d cut entirely); recorded as 'truncation' in the task's "
                    "metadata in the results", name, record["items"], record["of"], record["window"],
                    record["instruction_cut"], sum(1 for _, _, fate in record["cut"] if fate == "cut entirely"))
