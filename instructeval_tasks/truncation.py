"""Prompts longer than the model's window: how much the harness cuts, and the record of the cuts.

The harness cuts a request that does not fit the model's window from the **left**, and the
instruction is the first thing in an InstructEval prompt: a long instruction (or many long demos)
would be cut away while the results still credit that instruction. Every request is measured with
the model's own tokenisation, as the stock ``hf`` backend (and ``instructeval-hf``) count it:

- loglikelihood: ``len(context) + len(continuation) - 1`` tokens are fed; more than
  ``max_length`` and the excess is cut;
- generation: the context is cut to ``max_length - max_gen_toks`` tokens.

Two callers refuse what does not fit, each before anything is evaluated, and record the cuts when
told to run anyway:

- the sweep (``sweep.window.check_window``; ``instructeval run --allow-truncation``), per variant;
- the ``instructeval-hf`` backend (``backend.window``; ``allow_truncation=True`` in
  ``--model_args``), per task of a plain ``lm_eval`` / ``simple_evaluate`` call. A task the sweep
  has already checked (:func:`mark_checked`) is not measured again.

The record (``truncation`` in the task's config metadata, which ``instructeval aggregate`` reads
and warns about): ``window``, ``items`` (docs with a cut request) of ``of``, ``longest`` (the
longest request in tokens, and its doc), ``instruction_tokens``, ``instruction_cut`` (docs whose
instruction lost tokens), and ``cut``: ``[doc_id, tokens cut, "intact" | "partly cut" |
"cut entirely"]`` per cut doc (the instruction's fate: a left cut reaches it first).

Example:
    >>> cut_tokens("loglikelihood", prompt_tokens=70, window=64)
    5
    >>> cut_tokens("generate_until", prompt_tokens=70, window=64, max_gen_toks=10)
    16
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from .errors import UserError

TRUNCATION_KEY = "truncation"        # the record in a task's config metadata
ALLOW_TRUNCATION_KEY = "allow_truncation"  # in a task's metadata: its cuts are allowed (and recorded)
_CHECKED_ATTR = "_instructeval_window_checked"  # on a task: the id of the LM its window was checked against


class TruncationError(UserError):
    """Prompts that do not fit the model's window (the message says how to run anyway and record the cuts)."""


def cut_tokens(request_type: str, *, prompt_tokens: int, window: int, max_gen_toks: int = 0) -> int:
    """Tokens the harness cuts from the left of one request (see the module docstring)."""
    if request_type == "generate_until":
        return max(0, prompt_tokens - (window - max_gen_toks))
    return max(0, prompt_tokens - 1 - window)


def instruction_fate(context: str, cut: int, instruction: str, instruction_tokens: int, encode: Callable[[str], Any]) -> str:
    """What a left cut of ``cut`` tokens leaves of ``instruction`` in ``context``: ``"intact"``,
    ``"partly cut"`` or ``"cut entirely"``. The instruction's place is counted in tokens where it is
    found in the context (a chat template's header before it), else it is taken to open the prompt.

    Example:
        >>> fate = lambda cut: instruction_fate("ab cd", cut, "ab", 2, list)
        >>> fate(0), fate(1), fate(2)
        ('intact', 'partly cut', 'cut entirely')
    """
    if not instruction_tokens or cut <= 0:
        return "intact"
    start = context.find(instruction)
    before, through = 0, instruction_tokens
    if start >= 0:
        before = len(encode(context[:start])) if start else 0
        through = len(encode(context[:start + len(instruction)]))
    return "intact" if cut <= before else "cut entirely" if cut >= through else "partly cut"


def instruction_text(task: Any) -> str:
    """The instruction at the head of ``task``'s prompts: the description, or (chat-user) the head of
    the first user turn; ``""`` for a task without one."""
    return getattr(task, "_user_instruction", "") or getattr(task, "prompt_description", "") or ""


# Encoding a pair as one string never takes more tokens than encoding its parts apart, plus this
# margin (a special token each, a merge across the join); below it the exact count is not needed.
_MARGIN = 4

# lm-eval's aliases of the generation length, first found wins (``normalize_gen_kwargs``).
_GEN_LENGTH_KEYS = ("max_gen_toks", "max_new_tokens", "max_tokens", "max_completion_tokens")


def max_gen_toks(gen_kwargs: Mapping[str, Any], default: int) -> int:
    """The tokens a generation request may generate, as lm-eval's ``normalize_gen_kwargs`` reads them.

    Example:
        >>> max_gen_toks({"until": ["\\n"], "max_new_tokens": 32}, 256), max_gen_toks({}, 256)
        (32, 256)
    """
    return int(next((gen_kwargs[key] for key in _GEN_LENGTH_KEYS if gen_kwargs.get(key) is not None), default))


def measure_requests(lm: Any, requests: Sequence[Any], *, instruction: str = "", rows: Sequence[int] | None = None,
                     context_length: Callable[[str], int] | None = None
                     ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``(record, unfit)`` of built requests (lm-eval ``Instance``s) on ``lm``: the record (module
    docstring) of the cut ones (None: nothing cut, or a backend that cannot be measured: no
    ``max_length`` and ``tok_encode``), and the first request no window setting can evaluate
    (``{"doc_id", "answer_tokens"}`` or ``{"doc_id", "max_gen_toks"}``; None: every one can).

    ``rows``: the ``samples`` the requests were built on (a request's ``doc_id`` is its position
    there), so that the record's doc ids are the rows, as the samples log gives them.
    ``context_length``: a generation context's tokens as the backend encodes it (default
    ``len(lm.tok_encode(context))``). A loglikelihood request counts as the backend's
    ``_encode_pair`` encodes it (one prefix token for an empty context).
    """
    window = getattr(lm, "max_length", None)
    if not isinstance(window, int) or not hasattr(lm, "tok_encode"):
        return None, None
    encode = lm.tok_encode
    context_length = context_length or (lambda context: len(encode(context)))
    default_gen = int(getattr(lm, "max_gen_toks", 256) or 256)
    context_tokens: dict[tuple[str, str], int] = {}  # the requests of a doc share their context
    worst: dict[Any, tuple[int, str]] = {}  # doc -> (most tokens cut from one of its requests, that context)
    docs: set[Any] = set()
    longest: tuple[int, Any] = (0, None)
    unfit: dict[str, Any] | None = None
    for request in requests:
        if request.request_type not in ("loglikelihood", "generate_until"):
            continue  # rolling log-likelihoods are cut into windows by design
        doc, context = request.doc_id if rows is None else rows[request.doc_id], request.args[0]
        docs.add(doc)
        if request.request_type == "generate_until":
            key = ("generate_until", context)
            if key not in context_tokens:
                context_tokens[key] = context_length(context)
            gen_kwargs = request.args[1] if len(request.args) > 1 and isinstance(request.args[1], Mapping) else {}
            max_gen = max_gen_toks(gen_kwargs, default_gen)
            if max_gen >= window and unfit is None:
                unfit = {"doc_id": doc, "max_gen_toks": max_gen}
            tokens = context_tokens[key]
            cut = cut_tokens("generate_until", prompt_tokens=tokens, window=window, max_gen_toks=max_gen)
        else:
            key = ("loglikelihood", context)
            if key not in context_tokens:
                context_tokens[key] = len(encode(context)) if context else 1  # an empty context: one prefix token
            answer = request.args[1]
            answer_tokens = len(encode(answer))
            tokens = context_tokens[key] + answer_tokens + _MARGIN
            if tokens - 1 > window or answer_tokens + _MARGIN > window:  # near the window: the exact count
                encode_pair = getattr(lm, "_encode_pair", None)
                if context and encode_pair is not None:
                    context_ids, answer_ids = encode_pair(context, answer)
                    tokens, answer_tokens = len(context_ids) + len(answer_ids), len(answer_ids)
                else:
                    tokens = context_tokens[key] + answer_tokens
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
    cuts = [[doc, cut, instruction_fate(context, cut, instruction, instruction_tokens, encode)]
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


def unfit_reason(unfit: Mapping[str, Any], window: int, *, item: str = "item") -> str:
    """Why the request ``unfit`` (from :func:`measure_requests`) cannot be evaluated at any setting.

    Example:
        >>> unfit_reason({"doc_id": 3, "answer_tokens": 51}, 48)
        "the answer of item 3 alone has 51 tokens, more than the model's window of 48"
    """
    if "answer_tokens" in unfit:
        return (f"the answer of {item} {unfit['doc_id']} alone has {unfit['answer_tokens']} tokens, more than the "
                f"model's window of {window}")
    return (f"max_gen_toks={unfit['max_gen_toks']} (the task's generation_kwargs, else max_gen_toks= in --model_args) "
            f"leaves no room for a prompt in the model's window of {window} tokens")


def unfit_error(subject: str, unfit: Mapping[str, Any], window: int, *, item: str = "item",
                leave_out: str = "this task out") -> TruncationError:
    """The sweep's refusal of ``subject`` (a variant, a stock run) for the request ``unfit`` that no
    window setting can evaluate, ``--allow-truncation`` or not.

    Example:
        >>> str(unfit_error("v", {"doc_id": 3, "answer_tokens": 51}, 48)).split(", so ")[1][:46]
        'the harness cannot evaluate it, even with --al'
    """
    return TruncationError(
        f"{subject}: {unfit_reason(unfit, window, item=item)}, so the harness cannot evaluate it, even with "
        f"--allow-truncation; raise the window (max_length= in --model_args) if the model allows it, or leave {leave_out}")


def cut_summary(record: Mapping[str, Any], *, item: str = "item") -> str:
    """How many prompts of the record (:func:`measure_requests`) do not fit, and the longest.

    Example:
        >>> cut_summary({"items": 2, "of": 20, "window": 100, "longest": {"doc_id": 7, "tokens": 123}}, item="eval row")
        "2 of 20 prompts do not fit the model's window of 100 tokens (the longest, eval row 7, has 123)"
    """
    longest = record["longest"]
    return (f"{record['items']} of {record['of']} prompts do not fit the model's window of {record['window']} tokens "
            f"(the longest, {item} {longest['doc_id']}, has {longest['tokens']})")


def measure_all(task: Any, lm: Any, doc_ids: Sequence[int] | None = None, *, chat: dict[str, Any] | None = None
                ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``(record, unfit)`` (:func:`measure_requests`) of every request of ``task``'s docs (``doc_ids``:
    positions in its eval docs; all by default), the prompts built as the harness will build them
    (``chat``: ``simple_evaluate``'s chat keywords, a chat placement)."""
    docs = task.eval_docs  # read once (a property); a budgeted variant's few rows are read alone
    positions = range(len(docs)) if doc_ids is None else doc_ids
    k = int(task.config.num_fewshot or 0)
    chat_kwargs: dict[str, Any] = {}
    if chat and chat.get("apply_chat_template"):
        chat_kwargs = {"apply_chat_template": True, "fewshot_as_multiturn": bool(chat.get("fewshot_as_multiturn")),
                       "chat_template": lm.apply_chat_template}
    requests: list[Any] = []
    for position in positions:
        doc = docs[position]
        context = task.fewshot_context(doc, k, **chat_kwargs)
        built = task.construct_requests(doc, context, metadata=(task.config.task, position, 1))
        requests.extend(built if isinstance(built, list) else [built])
    record, unfit = measure_requests(lm, requests, instruction=instruction_text(task))
    if record is not None:
        record["of"] = len(positions)  # every doc measured, whether or not it sent a measured request
    return record, unfit


def measure(task: Any, lm: Any, doc_ids: Sequence[int] | None = None, *, chat: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The record of :func:`measure_all` (the cut requests of ``task``'s docs), or None when nothing is
    cut or the backend cannot be measured."""
    return measure_all(task, lm, doc_ids, chat=chat)[0]


def mark_checked(task: Any, lm: Any) -> None:
    """Note on ``task`` that its prompts were measured against ``lm``'s window and cleared (nothing
    cut, or the cuts allowed and recorded): ``instructeval-hf`` does not measure them again."""
    setattr(task, _CHECKED_ATTR, id(lm))


def checked(task: Any, lm: Any) -> bool:
    """Whether :func:`mark_checked` cleared ``task`` for this very ``lm``."""
    return getattr(task, _CHECKED_ATTR, None) == id(lm)


def recorded_cuts(task: Any) -> Mapping[str, Any] | None:
    """The ``truncation`` record ``task`` already carries (a sweep's, which ran it with
    ``--allow-truncation``), or None."""
    record = getattr(task, "truncation", None)
    if not record:
        metadata = getattr(getattr(task, "config", None), "metadata", None)
        record = metadata.get(TRUNCATION_KEY) if isinstance(metadata, Mapping) else None
    return record if isinstance(record, Mapping) and record else None


def record_cuts(task: Any, record: Mapping[str, Any]) -> None:
    """Put ``record`` where the results file keeps it: the task's config metadata (``truncation``),
    through ``InstructEvalTask.truncation`` for the nine tasks. A record already there (the sweep's)
    is kept."""
    if hasattr(task, "truncation"):  # InstructEvalTask: its protocol record carries it
        if not task.truncation:
            task.truncation = dict(record)
        return
    config = task.config
    if not isinstance(config.metadata, dict):
        config.metadata = dict(config.metadata or {})
    config.metadata.setdefault(TRUNCATION_KEY, dict(record))
