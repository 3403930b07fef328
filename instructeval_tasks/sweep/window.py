"""Prompts longer than the model's window: refused by default, or recorded item by item.

The harness cuts a request that does not fit the model's window from the **left**, and the
instruction is the first thing in an InstructEval prompt: a long instruction (or many long demos)
would be cut away while the results still credit that instruction. So before a variant is
evaluated, every request it will send is measured with the model's own tokenisation, as the
stock ``hf`` backend (and ``instructeval-hf``) count it:

- loglikelihood: ``len(context) + len(continuation) - 1`` tokens are fed; more than
  ``max_length`` and the excess is cut;
- generation: the context is cut to ``max_length - max_gen_toks`` tokens.

A variant with any cut request is refused (:class:`TruncationError`, naming the variant, its
longest request and the window). With ``--allow-truncation`` it runs, and its results record,
per item, how many tokens were cut and whether the instruction survived (``truncation`` in the
variant's metadata; the aggregation warns about such variants). A backend without ``max_length``
and ``tok_encode`` (API models) is not measured.

Example:
    >>> cut_tokens("loglikelihood", prompt_tokens=70, window=64)
    5
    >>> cut_tokens("generate_until", prompt_tokens=70, window=64, max_gen_toks=10)
    16
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import UserError

TRUNCATION_KEY = "truncation"        # the per-item record in a variant's metadata
ALLOW_TRUNCATION_KEY = "allow_truncation"  # set in a variant's metadata by --allow-truncation


class TruncationError(UserError):
    """A variant whose prompts do not fit the model's window (run with --allow-truncation to record the cuts)."""


def cut_tokens(request_type: str, *, prompt_tokens: int, window: int, max_gen_toks: int = 0) -> int:
    """Tokens the harness cuts from the left of one request (see the module docstring)."""
    if request_type == "generate_until":
        return max(0, prompt_tokens - (window - max_gen_toks))
    return max(0, prompt_tokens - 1 - window)


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
    measured against ``lm``'s window: the record of the cut ones, or None when nothing is cut or
    the backend cannot be measured.

    The record: ``window``, ``items`` (docs with a cut request) of ``of``, ``longest`` (the longest
    request in tokens, and its doc), ``instruction_tokens``, ``instruction_cut`` (docs whose
    instruction lost tokens), and ``cut``: ``[doc_id, tokens cut, "intact" | "partly cut" |
    "cut entirely"]`` per cut doc (the instruction's fate: a left cut reaches it first).
    ``chat``: ``simple_evaluate``'s chat keywords (a chat placement), the prompt built as it will be.
    """
    window = getattr(lm, "max_length", None)
    if not isinstance(window, int) or not hasattr(lm, "tok_encode"):
        return None
    docs = task.eval_docs  # read once (a property); a budgeted variant's few rows are read alone
    positions = range(len(docs)) if doc_ids is None else doc_ids
    k = int(task.config.num_fewshot or 0)
    # the instruction: the description, or (chat-user) the head of the first user turn
    description = getattr(task, "_user_instruction", "") or getattr(task, "prompt_description", "") or ""
    instruction_tokens = len(lm.tok_encode(description)) if description.strip() else 0
    default_gen = int(getattr(lm, "max_gen_toks", 256) or 256)
    chat_kwargs: dict[str, Any] = {}
    if chat and chat.get("apply_chat_template"):
        chat_kwargs = {"apply_chat_template": True, "fewshot_as_multiturn": bool(chat.get("fewshot_as_multiturn")),
                       "chat_template": lm.apply_chat_template}
    cuts: list[list[Any]] = []
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
            fate = "intact" if not instruction_tokens else "partly cut" if worst < instruction_tokens else "cut entirely"
            cuts.append([position, worst, fate])
    if not cuts:
        return None
    return {
        "window": window,
        "items": len(cuts),
        "of": len(positions),
        "longest": {"tokens": longest[0], "doc_id": longest[1]},
        "instruction_tokens": instruction_tokens,
        "instruction_cut": sum(1 for _, _, fate in cuts if fate != "intact"),
        "cut": cuts,
    }


def check_window(task: Any, lm: Any, variant: str, *, allow: bool, doc_ids: Sequence[int] | None = None,
                 chat: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """``measure``, refusing a variant with a cut request unless ``allow`` (then the record is returned)."""
    record = measure(task, lm, doc_ids, chat=chat)
    if record is None or allow:
        return record
    longest = record["longest"]
    raise TruncationError(
        f"{variant}: {record['items']} of {record['of']} prompts do not fit the model's window of {record['window']} "
        f"tokens (the longest, item {longest['doc_id']}, has {longest['tokens']}); the harness would cut them from the "
        f"left, the instruction ({record['instruction_tokens']} tokens) first. Shorten the instruction or the demos "
        f"(--num-fewshot, --truncate-words), raise the window (max_length= in --model_args) if the model allows it, or "
        f"pass --allow-truncation to run anyway and record what was cut"
    )
