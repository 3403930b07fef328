"""Prompts longer than the model's window, in a sweep: refused by default, or recorded item by item.

The harness cuts a request that does not fit the model's window from the **left**, and the
instruction is the first thing in an InstructEval prompt. So before a variant is evaluated, every
request it will send is measured with the model's own tokenisation (``instructeval_tasks.truncation``,
whose rules and record this module re-exports):

- loglikelihood: ``len(context) + len(continuation) - 1`` tokens are fed; more than
  ``max_length`` and the excess is cut;
- generation: the context is cut to ``max_length - max_gen_toks`` tokens.

A variant with any cut request is refused (:class:`TruncationError`, naming the variant, its
longest request and the window). With ``--allow-truncation`` it runs, and its results record,
per item, how many tokens were cut and whether the instruction survived (``truncation`` in the
variant's metadata; the aggregation warns about such variants). A backend without ``max_length``
and ``tok_encode`` (API models) is not measured. A variant cleared here is marked, so the
``instructeval-hf`` backend does not measure (or refuse) it a second time.

Example:
    >>> cut_tokens("loglikelihood", prompt_tokens=70, window=64)
    5
    >>> cut_tokens("generate_until", prompt_tokens=70, window=64, max_gen_toks=10)
    16
"""

from __future__ import annotations

from typing import Any, Sequence

from ..truncation import (ALLOW_TRUNCATION_KEY, TRUNCATION_KEY, TruncationError, cut_summary, cut_tokens, mark_checked,
                          measure, measure_all, unfit_error)

__all__ = ["ALLOW_TRUNCATION_KEY", "TRUNCATION_KEY", "TruncationError", "check_window", "cut_tokens", "measure"]


def check_window(task: Any, lm: Any, variant: str, *, allow: bool, doc_ids: Sequence[int] | None = None,
                 chat: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """``measure``, refusing a variant with a cut request unless ``allow`` (then the record is returned).

    Raises:
        TruncationError: a cut request without ``allow``; a request no window setting can evaluate
            (an answer longer than the window, a ``max_gen_toks`` that leaves no room for a prompt),
            whatever ``allow`` says.
    """
    record, unfit = measure_all(task, lm, doc_ids, chat=chat)
    if unfit is not None:
        raise unfit_error(variant, unfit, lm.max_length)
    if record is not None and not allow:
        raise TruncationError(
            f"{variant}: {cut_summary(record)}; the harness would cut them from the left, the instruction "
            f"({record['instruction_tokens']} tokens) first. Shorten the instruction or the demos (--num-fewshot, "
            f"--truncate-words), raise the window (max_length= in --model_args) if the model allows it, or pass "
            f"--allow-truncation to run anyway and record what was cut"
        )
    mark_checked(task, lm)
    return record
