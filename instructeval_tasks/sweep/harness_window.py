"""The window check of a harness job (``instructeval run --harness-tasks``): every variant's requests
measured against the model's window before the job's one harness call, as the nine tasks' variants
are (``window``): refused by default, or run and recorded with ``--allow-truncation``.

The requests measured are the evaluation's own: each variant's task builds them exactly as
``simple_evaluate`` will (lm-eval's few-shot seed, the same ``samples`` rows in the same order, the
placement's chat keywords), because a harness task draws each row's demos from one seeded
generator in row order and a chat template changes the prompt and the answer's delimiter. A
budgeted variant's task keeps only its cells' requests, so only its cells are measured. Each
request is counted by ``truncation.measure_requests``' rules, in the model's own tokens:

- loglikelihood: ``len(context) + len(answer) - 1`` tokens are fed (the pair encoded as the
  backend's ``_encode_pair`` does); more than the window and the excess is cut from the left;
- generation: the context is cut to ``window - max_gen_toks`` tokens.

A variant with a cut request is refused (:class:`~.window.TruncationError`: the variant, how many
prompts, the longest, the window, the fix). With ``--allow-truncation`` (``allow_truncation`` in the
variant's metadata) it runs, and its results' metadata records the cuts under ``truncation``, in
the nine tasks' format, its ``doc_id``s those of the samples log (evaluation rows);
``instructeval aggregate`` warns about it. A request that no setting can evaluate --
an answer longer than the window, or a ``max_gen_toks`` that leaves no room for a prompt (lm-eval
stops on an ``AssertionError`` there) -- is refused even with ``--allow-truncation``. A backend
without ``max_length`` and ``tok_encode`` (API models) is not measured.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..truncation import (ALLOW_TRUNCATION_KEY, TRUNCATION_KEY, TruncationError, cut_summary, mark_checked,
                          measure_requests, unfit_error)

def built_requests(task: Any, lm: Any, *, samples: list[int] | None, chat: Mapping[str, Any], seed: int) -> list[Any]:
    """``task``'s requests as ``simple_evaluate(..., samples={name: samples}, fewshot_random_seed=seed,
    **chat)`` builds them (it builds them again, from the same seed)."""
    apply_chat = bool(chat.get("apply_chat_template"))
    task.set_fewshot_seed(seed=seed)
    try:
        task.build_all_requests(
            samples=samples, rank=int(getattr(lm, "rank", 0) or 0), world_size=int(getattr(lm, "world_size", 1) or 1),
            apply_chat_template=apply_chat,
            fewshot_as_multiturn=bool(chat.get("fewshot_as_multiturn", True)),  # simple_evaluate's default
            chat_template=getattr(lm, "apply_chat_template", None) if apply_chat else None,
            tokenizer_name=getattr(lm, "tokenizer_name", "") if apply_chat else "")
        return list(task.instances)
    finally:
        task.set_fewshot_seed(seed=seed)


def measure_built(task: Any, lm: Any, *, instruction: str, samples: list[int] | None, chat: Mapping[str, Any],
                  seed: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``(record, unfit)`` (``truncation.measure_requests``) of ``task``'s requests as the harness call
    builds them (:func:`built_requests`), doc ids the ``samples`` rows."""
    requests = built_requests(task, lm, samples=samples, chat=chat, seed=seed)
    return measure_requests(lm, requests, instruction=instruction, rows=samples)


def check_harness_window(task: Any, lm: Any, variant: Any, *, samples: list[int] | None, chat: Mapping[str, Any],
                         seed: int) -> dict[str, Any] | None:
    """Measure ``variant``'s (a ``HarnessVariant``) built ``task`` (module docstring); refuse what does
    not fit unless the variant allows truncation, then return the record (None: nothing cut). A task
    cleared here is marked (``truncation.mark_checked``): ``instructeval-hf`` does not measure it again.

    Raises:
        TruncationError: a cut request without ``allow_truncation``; a request no window setting can
            evaluate, whatever ``allow_truncation`` says.
    """
    allow = bool(variant.metadata.get(ALLOW_TRUNCATION_KEY))
    record, unfit = measure_built(task, lm, instruction=variant.entry.text or "", samples=samples, chat=chat, seed=seed)
    if unfit is not None:
        raise unfit_error(variant.name, unfit, lm.max_length, item="eval row",
                          leave_out=f"{variant.task} out of --harness-tasks")
    if record is not None and not allow:
        head = (f"the instruction ({record['instruction_tokens']} tokens) first" if record["instruction_tokens"]
                else "the task's own prompt first")
        raise TruncationError(
            f"{variant.name}: {cut_summary(record, item='eval row')}; the harness would cut them from the left, "
            f"{head}. Shorten the instruction or the demos (fewer shots: --harness-tasks {variant.task}:K), raise the "
            f"window (max_length= in --model_args) if the model allows it, or pass --allow-truncation to run anyway "
            f"and record what was cut")
    mark_checked(task, lm)  # cleared: the instructeval-hf backend does not measure it again
    return record


def record_truncation(task: Any, record: Mapping[str, Any] | None) -> None:
    """Put ``record`` in ``task``'s config metadata (``truncation``), where its results file keeps it."""
    if record:
        task.config.metadata = {**(task.config.metadata or {}), TRUNCATION_KEY: dict(record)}
