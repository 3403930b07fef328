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
    >>> cut_record(64, {3: 5}, of=10, longest=(70, 3), instruction_tokens=12)["cut"]
    [[3, 5, 'partly cut']]
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

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


def instruction_fate(cut: int, instruction_tokens: int) -> str:
    """``"intact"``, ``"partly cut"`` or ``"cut entirely"``: what a left cut of ``cut`` tokens leaves of the instruction."""
    if not instruction_tokens:
        return "intact"
    return "partly cut" if cut < instruction_tokens else "cut entirely"


def instruction_text(task: Any) -> str:
    """The instruction at the head of ``task``'s prompts: the description, or (chat-user) the head of
    the first user turn; ``""`` for a task without one."""
    return getattr(task, "_user_instruction", "") or getattr(task, "prompt_description", "") or ""


def cut_record(window: int, cuts: Mapping[int, int], *, of: int, longest: tuple[int, Any],
               instruction_tokens: int) -> dict[str, Any] | None:
    """The record (module docstring) of ``cuts`` (doc id -> the most tokens cut from one of its
    requests; docs without a cut left out) among ``of`` docs; None when nothing is cut."""
    cut = [[doc, tokens, instruction_fate(tokens, instruction_tokens)] for doc, tokens in cuts.items() if tokens]
    if not cut:
        return None
    return {
        "window": window,
        "items": len(cut),
        "of": of,
        "longest": {"tokens": longest[0], "doc_id": longest[1]},
        "instruction_tokens": instruction_tokens,
        "instruction_cut": sum(1 for _, _, fate in cut if fate != "intact"),
        "cut": cut,
    }


def _pair_tokens(lm: Any, context: str, continuation: str) -> int:
    """The tokens of a loglikelihood request as the backend encodes it (``_encode_pair``)."""
    encode_pair = getattr(lm, "_encode_pair", None)
    if encode_pair is not None:
        ctx, cont = encode_pair(context, continuation)
    else:
        ctx, cont = lm.tok_encode(context), lm.tok_encode(continuation)
    return len(ctx) + len(cont)


# Encoding a pair as one string never takes more tokens than encoding its parts apart, plus this
# margin (a special token each, a merge across the join); below it the exact count is not needed.
_MARGIN = 4


def measure(task: Any, lm: Any, doc_ids: Sequence[int] | None = None, *, chat: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Every request of ``task``'s docs (``doc_ids``: positions in its eval docs; all by default)
    measured against ``lm``'s window, the prompts built as the harness will build them: the record
    of the cut ones (module docstring), or None when nothing is cut or the backend cannot be
    measured (no ``max_length`` and ``tok_encode``: API models).

    ``chat``: ``simple_evaluate``'s chat keywords (a chat placement), the prompt built as it will be.
    """
    window = getattr(lm, "max_length", None)
    if not isinstance(window, int) or not hasattr(lm, "tok_encode"):
        return None
    docs = task.eval_docs  # read once (a property); a budgeted variant's few rows are read alone
    positions = range(len(docs)) if doc_ids is None else doc_ids
    k = int(task.config.num_fewshot or 0)
    description = instruction_text(task)
    instruction_tokens = len(lm.tok_encode(description)) if description.strip() else 0
    default_gen = int(getattr(lm, "max_gen_toks", 256) or 256)
    chat_kwargs: dict[str, Any] = {}
    if chat and chat.get("apply_chat_template"):
        chat_kwargs = {"apply_chat_template": True, "fewshot_as_multiturn": bool(chat.get("fewshot_as_multiturn")),
                       "chat_template": lm.apply_chat_template}
    cuts: dict[int, int] = {}
    longest = (0, None)
    for position in positions:
        doc = docs[position]
        context = task.fewshot_context(doc, k, **chat_kwargs)
        requests = task.construct_requests(doc, context, metadata=(task.config.task, position, 1))
        requests = requests if isinstance(requests, list) else [requests]
        worst = 0
        context_tokens: dict[str, int] = {}  # the requests of a doc share their context
        for request in requests:
            context = request.args[0]
            if context not in context_tokens:
                context_tokens[context] = len(lm.tok_encode(context))
            if request.request_type == "generate_until":
                gen_kwargs = request.args[1] if len(request.args) > 1 and isinstance(request.args[1], dict) else {}
                tokens = context_tokens[context]
                cut = cut_tokens("generate_until", prompt_tokens=tokens, window=window,
                                 max_gen_toks=int(gen_kwargs.get("max_gen_toks", default_gen)))
            else:
                bound = context_tokens[context] + len(lm.tok_encode(request.args[1])) + _MARGIN
                tokens = bound if bound - 1 <= window else _pair_tokens(lm, context, request.args[1])
                cut = cut_tokens("loglikelihood", prompt_tokens=tokens, window=window)
            if tokens > longest[0]:
                longest = (tokens, position)
            worst = max(worst, cut)
        if worst:
            cuts[position] = worst
    return cut_record(window, cuts, of=len(positions), longest=longest, instruction_tokens=instruction_tokens)


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
