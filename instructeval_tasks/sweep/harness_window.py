"""The window check of a harness job (``instructeval run --harness-tasks``): every variant's requests
measured against the model's window before the job's one harness call, as the nine tasks' variants
are (``window``): refused by default, or run and recorded with ``--allow-truncation``.

The requests measured are the evaluation's own: each variant's task builds them exactly as
``simple_evaluate`` will (lm-eval's few-shot seed, the same ``samples`` rows in the same order, the
placement's chat keywords), because a harness task draws each row's demos from one seeded
generator in row order and a chat template changes the prompt and the answer's delimiter. A
budgeted variant's task keeps only its cells' requests, so only its cells are measured. Each
request is counted by ``window``'s rules, in the model's own tokens:

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

Example:
    >>> _max_gen_toks({"until": ["\\n"], "max_new_tokens": 32}, 256), _max_gen_toks({}, 256)
    (32, 256)
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..truncation import ALLOW_TRUNCATION_KEY, TRUNCATION_KEY, TruncationError, cut_tokens, mark_checked

# Encoding a pair as one string takes at most this many tokens more than encoding its parts apart
# (a special token each, a merge across the join); below the window by this much, the exact
# ``_encode_pair`` count is not needed (``window``'s margin).
_MARGIN = 4

# lm-eval's aliases of the generation length, first found wins (``normalize_gen_kwargs``).
_GEN_LENGTH_KEYS = ("max_gen_toks", "max_new_tokens", "max_tokens", "max_completion_tokens")


def _max_gen_toks(gen_kwargs: Mapping[str, Any], default: int) -> int:
    """The tokens a generation request may generate, as lm-eval's ``normalize_gen_kwargs`` reads them."""
    return int(next((gen_kwargs[key] for key in _GEN_LENGTH_KEYS if gen_kwargs.get(key) is not None), default))


def _fate(context: str, cut: int, instruction: str, instruction_tokens: int, encode: Any) -> str:
    """What a left cut of ``cut`` tokens leaves of the instruction in ``context``: ``"intact"``,
    ``"partly cut"`` or ``"cut entirely"``; the instruction's place counted in tokens where it is
    found in the context (a chat template's header before it), else taken to open the prompt."""
    if not instruction_tokens:
        return "intact"
    start = context.find(instruction)
    before, through = 0, instruction_tokens
    if start >= 0:
        before = len(encode(context[:start])) if start else 0
        through = len(encode(context[:start + len(instruction)]))
    return "intact" if cut <= before else "cut entirely" if cut >= through else "partly cut"


def measure_requests(lm: Any, requests: Sequence[Any], *, instruction: str = "", rows: Sequence[int] | None = None
                     ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``(record, unfit)`` of built requests (lm-eval ``Instance``s) on ``lm``: the ``truncation``
    record of the cut ones (None: nothing cut, or a backend that cannot be measured), and the first
    request no window setting can evaluate (``{"doc_id", "answer_tokens"}`` or ``{"doc_id",
    "max_gen_toks"}``; None: every one can). ``rows``: the ``samples`` the requests were built on
    (a request's ``doc_id`` is its position there); the doc ids given are then the rows, as the
    samples log gives them.

    The record (``window``'s format): ``window``, ``items`` (docs with a cut request) of ``of``,
    ``longest`` (``tokens``, ``doc_id``), ``instruction_tokens``, ``instruction_cut`` (docs whose
    instruction lost tokens), ``cut``: ``[doc_id, tokens cut, fate]`` per cut doc, in doc order.
    """
    window = getattr(lm, "max_length", None)
    if not isinstance(window, int) or not hasattr(lm, "tok_encode"):
        return None, None
    encode = lm.tok_encode
    default_gen = int(getattr(lm, "max_gen_toks", 256) or 256)
    context_tokens: dict[str, int] = {}
    worst: dict[int, tuple[int, str]] = {}  # doc -> (most tokens cut from one of its requests, that context)
    docs: set[int] = set()
    longest: tuple[int, Any] = (0, None)
    unfit: dict[str, Any] | None = None
    for request in requests:
        if request.request_type not in ("loglikelihood", "generate_until"):
            continue  # rolling log-likelihoods are cut into windows by design
        doc, context = request.doc_id if rows is None else rows[request.doc_id], request.args[0]
        docs.add(doc)
        if context not in context_tokens:
            context_tokens[context] = len(encode(context)) if context else 1  # an empty context: one prefix token
        if request.request_type == "generate_until":
            gen_kwargs = request.args[1] if len(request.args) > 1 and isinstance(request.args[1], Mapping) else {}
            max_gen = _max_gen_toks(gen_kwargs, default_gen)
            if max_gen >= window and unfit is None:
                unfit = {"doc_id": doc, "max_gen_toks": max_gen}
            tokens = context_tokens[context]
            cut = cut_tokens("generate_until", prompt_tokens=tokens, window=window, max_gen_toks=max_gen)
        else:
            answer = request.args[1]
            answer_tokens = len(encode(answer))
            tokens = context_tokens[context] + answer_tokens + _MARGIN
            if tokens - 1 > window or answer_tokens + _MARGIN > window:  # near the window: the exact count
                encode_pair = getattr(lm, "_encode_pair", None)
                if context and encode_pair is not None:
                    context_ids, answer_ids = encode_pair(context, answer)
                    tokens, answer_tokens = len(context_ids) + len(answer_ids), len(answer_ids)
                else:
                    tokens = context_tokens[context] + answer_tokens
                if answer_tokens > window and unfit is None:
                    unfit = {"doc_id": doc, "answer_tokens": answer_tokens}
            cut = cut_tokens("loglikelihood", prompt_tokens=tokens, window=window)
        if tokens > longest[0]:
            longest = (tokens, doc)
        if cut > worst.get(doc, (0, ""))[0]:
            worst[doc] = (cut, context)
    if not worst:
        return None, unfit
    instruction_tokens = len(encode(instruction)) if instruction.strip() else 0
    cuts = [[doc, cut, _fate(context, cut, instruction, instruction_tokens, encode)]
            for doc, (cut, context) in sorted(worst.items())]
    record = {
        "window": window,
        "items": len(cuts),
        "of": len(docs),
        "longest": {"tokens": longest[0], "doc_id": longest[1]},
        "instruction_tokens": instruction_tokens,
        "instruction_cut": sum(1 for _, _, fate in cuts if fate != "intact"),
        "cut": cuts,
    }
    return record, unfit


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
    requests = built_requests(task, lm, samples=samples, chat=chat, seed=seed)
    record, unfit = measure_requests(lm, requests, instruction=variant.entry.text or "", rows=samples)
    window = getattr(lm, "max_length", None)
    if unfit is not None:
        if "answer_tokens" in unfit:
            why = (f"the answer of eval row {unfit['doc_id']} alone has {unfit['answer_tokens']} tokens, more than "
                   f"the model's window of {window}")
        else:
            why = (f"max_gen_toks={unfit['max_gen_toks']} (the task's generation_kwargs, else max_gen_toks= in "
                   f"--model_args) leaves no room for a prompt in the model's window of {window} tokens")
        raise TruncationError(
            f"{variant.name}: {why}, so the harness cannot evaluate it, even with --allow-truncation; raise the window "
            f"(max_length= in --model_args) if the model allows it, or leave {variant.task} out of --harness-tasks")
    if record is not None and not allow:
        longest = record["longest"]
        head = (f"the instruction ({record['instruction_tokens']} tokens) first" if record["instruction_tokens"]
                else "the task's own prompt first")
        raise TruncationError(
            f"{variant.name}: {record['items']} of {record['of']} prompts do not fit the model's window of "
            f"{record['window']} tokens (the longest, eval row {longest['doc_id']}, has {longest['tokens']}); the "
            f"harness would cut them from the left, {head}. Shorten the instruction or the demos (fewer shots: "
            f"--harness-tasks {variant.task}:K), raise the window (max_length= in --model_args) if the model allows "
            f"it, or pass --allow-truncation to run anyway and record what was cut")
    mark_checked(task, lm)  # cleared: the instructeval-hf backend does not measure it again
    return record


def record_truncation(task: Any, record: Mapping[str, Any] | None) -> None:
    """Put ``record`` in ``task``'s config metadata (``truncation``), where its results file keeps it."""
    if record:
        task.config.metadata = {**(task.config.metadata or {}), TRUNCATION_KEY: dict(record)}
