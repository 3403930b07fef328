"""The run-time parameters of an InstructEval task, read from the harness's task ``metadata``.

``lm_eval --metadata`` (``k=v,...`` or a JSON object) is merged into every task's metadata, together
with the model_args; the runner writes the same keys into each variant's config. Keys:

=====================  =======  ==========================================================
key                    default  meaning
=====================  =======  ==========================================================
``instruction``        --       a literal instruction (data, never a template)
``method``             null     an instruction-bank method (``null``, ``generic``, ...)
``instruction_index``  0        position of the entry in that method's bank for the task
``instruction_id``     --       or the entry's stable id instead of its position
``bank_dir``           --       a bank directory to read instead of the shipped banks
``instruction_encoding``
                       full     how a structured (Natural Instructions) bank entry is
                                rendered: ``prompt``, ``pos_examples``, ``prompt_definition``,
                                ``prompt_avoid``, ``prompt_emphasis``, ``prompt_pos_examples``,
                                ``prompt_definition_pos_examples`` or ``full``; plain entries
                                ignore it (``instruction_banks/README.md``). Natural
                                Instructions tasks render their own header with these or
                                ``definition``, ``pos2``, ``definition_pos2`` (their default),
                                ``definition_pos2_explanations``, ``definition_pos2_neg2``,
                                ``definition_pos2_neg2_explanations``
``prompt_format``      schema   Natural Instructions tasks only: ``schema`` (the project's
                                layout) or ``tk-instruct`` (Tk-Instruct's collator string,
                                byte for byte; ``docs/natural-instructions.md``)
``demo_seed``          0        seed of the fixed, class-balanced demonstration set (>= 0)
``data_dir``           --       local files ``<dir>/<task>/{train,eval}.jsonl``; falls back
                                to ``$INSTRUCTEVAL_DATA_DIR``, then to the HF hub
``test_sample``        --       evaluate a seeded (balanced for classification) sample of
                                N eval items instead of the whole eval split
``test_seed``          0        seed of that sample (>= 0)
``truncate_words``     --       cut text fields to N words + "..." (the original used 100)
``score_tokenizer``    --       tokenizer for ``acc_per_token``; default: the model's
                                ``tokenizer`` or ``pretrained`` (with ``gguf_file``)
``order_seed``         --       reorder the fixed demo set (permutational sensitivity);
                                unset keeps the drawn order (>= 0)
``order_mode``         seeded   ``seeded`` (an independent string-seeded shuffle) or
                                ``original`` (the original's cumulative shuffles)
``perturbation``       --       ``mild_mix``: perturb the test example's text fields (HELM)
``perturbation_seed``  0        seed of the per-document perturbation RNG (>= 0)
``perturbation_mode``  document ``document`` (a string-seeded RNG per document and field) or
                                ``stream`` (the original's single sequential RNG)
``placement``          --       where the instruction goes: ``description`` (plain text, no
                                chat template), ``chat-system`` (the system message; needs
                                ``--apply_chat_template``), ``chat-user`` (the head of the first
                                user turn; needs ``--apply_chat_template``); unset: whatever
                                the harness flags give (no flag: description;
                                ``--apply_chat_template``: chat-system)
=====================  =======  ==========================================================

K, the number of demonstrations, is the harness's ``num_fewshot`` (YAML default 6).

Any other key is an error naming the closest known key (``--metadata instrution=...`` would
otherwise evaluate the null instruction), except the keys the harness adds itself
(``HARNESS_KEYS``), the record-only keys ``instructeval run`` writes (``RECORD_KEYS``) and model
arguments, which the harness merges into the same dict (``model_arg_keys``).

Seeds are non-negative: ``random.Random(-n)`` draws exactly what ``random.Random(n)`` draws, so a
negative seed would silently repeat the draw of its absolute value under another recorded seed.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, fields
from typing import Any, Mapping

from instructeval_tasks.errors import UserError

from .encodings import ALL_ENCODINGS, NI_PROMPT_FORMATS
from .model_arg_keys import backend_parameters, model_args_in_flight

DATA_DIR_ENV = "INSTRUCTEVAL_DATA_DIR"


def resolve_data_dir(data_dir: str | None) -> str | None:
    """The local data folder in effect: ``data_dir`` when given, else ``$INSTRUCTEVAL_DATA_DIR``, else
    None (the HF hub). The one rule for the tasks, sweeps, stock runs and induction alike."""
    return data_dir or os.environ.get(DATA_DIR_ENV) or None

# Put into task metadata by the harness: the YAML's own ``version`` and ``instructeval_task``, the
# task factory's ``config_source`` (and ``_metadata``/``config`` for configs without a dict).
HARNESS_KEYS = frozenset({"version", "instructeval_task", "config_source", "_metadata", "config"})
# Written by ``instructeval run`` into every variant's metadata for the record (the resume check and
# the aggregation read them back from the results); the task itself does not act on them.
RECORD_KEYS = frozenset({"sweep", "variant_fingerprint", "model_label", "run_fingerprint", "budget", "allow_truncation",
                         "fewshot_as_multiturn"})


class OptionError(UserError, ValueError):
    """A metadata value of the wrong type or range; the message names the key and the fix."""


class UnknownOptionError(OptionError):
    """A metadata key that is no InstructEval option, no harness key and no model argument."""


def _int(meta: Mapping[str, Any], key: str, default: int | None, *, minimum: int | None = None) -> int | None:
    value = meta.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise OptionError(f"metadata {key}={value!r}: expected an integer, e.g. --metadata {key}=3")
    try:
        number = int(value)
    except ValueError:
        raise OptionError(f"metadata {key}={value!r}: expected an integer, e.g. --metadata {key}=3") from None
    if minimum is not None and number < minimum:
        raise OptionError(f"metadata {key}={number}: must be >= {minimum}")
    return number


def _seed(meta: Mapping[str, Any], key: str, default: int | None) -> int | None:
    number = _int(meta, key, default)
    if number is not None and number < 0:
        raise OptionError(
            f"metadata {key}={number}: seeds must be >= 0 (random.Random({number}) draws exactly what "
            f"random.Random({-number}) draws, so a negative seed would repeat seed {-number}'s draw); "
            f"use {key}={-number} or another non-negative seed"
        )
    return number


def _identifier(meta: Mapping[str, Any], key: str) -> str | None:
    """A string or integer id (``--metadata instruction_id=3`` arrives as an int)."""
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise OptionError(f"metadata {key}={value!r}: expected a bank entry id (a string)")
    return str(value)


def _str(meta: Mapping[str, Any], key: str) -> str | None:
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise OptionError(
            f"metadata {key}={value!r}: expected a string; pass it as JSON to keep its type, "
            f"e.g. --metadata '{{\"{key}\": \"...\"}}'"
        )
    return value


ORDER_MODES = ("seeded", "original")
# Where an instruction goes in the prompt; the chat ones need the model's chat template.
PLACEMENTS = ("description", "chat-system", "chat-user")
CHAT_PLACEMENTS = ("chat-system", "chat-user")
PERTURBATIONS = ("mild_mix",)
PERTURBATION_MODES = ("document", "stream")


def first_user_turn_prefixed(chat_template: Any, prefix: str) -> Any:
    """``chat_template`` (the harness's ``lm.apply_chat_template``) with ``prefix`` put at the head of
    the first user turn: the ``chat-user`` placement.

        >>> render = first_user_turn_prefixed(lambda messages, **kw: messages, "Be brief. ")
        >>> render([{"role": "system", "content": "s"}, {"role": "user", "content": "Q"}])[1]["content"]
        'Be brief. Q'
    """
    def render(messages, *args: Any, **kwargs: Any):
        messages = [dict(m) for m in messages]
        first = next(i for i, m in enumerate(messages) if m.get("role") == "user")
        messages[first]["content"] = prefix + messages[first]["content"]
        return chat_template(messages, *args, **kwargs)

    return render


def _choice(meta: Mapping[str, Any], key: str, allowed: tuple[str, ...], default: str | None) -> str | None:
    value = meta.get(key, default)
    if value is None or value in allowed:
        return value
    close = difflib.get_close_matches(str(value), allowed, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise OptionError(f"metadata {key}={value!r}: {hint}expected one of {', '.join(allowed)}")


def check_known_keys(meta: Mapping[str, Any]) -> None:
    """Raise :class:`UnknownOptionError` for a key that nothing reads (a typo, most likely).

    Example:
        >>> check_known_keys({"instruction": "Classify.", "pretrained": "gpt2", "version": 1.0})
        >>> check_known_keys({"instrution": "Classify."})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        instructeval_tasks.options.UnknownOptionError: metadata key 'instrution' is not an InstructEval option (did you mean 'instruction'?); ...
    """
    options = [f.name for f in fields(TaskOptions)]
    unknown = [k for k in meta if k not in options and k not in HARNESS_KEYS and k not in RECORD_KEYS]
    if not unknown:
        return
    model_keys = backend_parameters() | model_args_in_flight()
    unknown = [k for k in unknown if k not in model_keys]
    if not unknown:
        return
    key = str(unknown[0])
    close = difflib.get_close_matches(key, options, n=1, cutoff=0.6)
    hint = (
        f"did you mean {close[0]!r}?" if close
        else f"the closest known key is {difflib.get_close_matches(key, options, n=1, cutoff=0.0)[0]!r}"
    )
    others = f" (also unknown: {', '.join(map(repr, unknown[1:]))})" if len(unknown) > 1 else ""
    raise UnknownOptionError(
        f"metadata key {key!r} is not an InstructEval option ({hint}){others}; known keys: "
        f"{', '.join(options)}. Model arguments go in --model_args."
    )


@dataclass(frozen=True)
class TaskOptions:
    """Typed, validated view of the InstructEval keys of a task's metadata."""

    instruction: str | None = None
    method: str | None = None
    instruction_index: int | None = None
    instruction_id: str | None = None
    bank_dir: str | None = None
    instruction_encoding: str | None = None
    prompt_format: str | None = None
    demo_seed: int = 0
    data_dir: str | None = None
    test_sample: int | None = None
    test_seed: int = 0
    truncate_words: int | None = None
    score_tokenizer: str | None = None
    order_seed: int | None = None
    order_mode: str = "seeded"
    perturbation: str | None = None
    perturbation_seed: int = 0
    perturbation_mode: str = "document"
    placement: str | None = None

    @classmethod
    def from_metadata(cls, meta: Mapping[str, Any] | None) -> "TaskOptions":
        meta = dict(meta or {})
        check_known_keys(meta)
        instruction = meta.get("instruction")
        if isinstance(instruction, (int, float)) and not isinstance(instruction, bool):
            # `--metadata instruction=3` arrives as a number; an instruction is text.
            instruction = str(instruction)
        elif instruction is not None and not isinstance(instruction, str):
            raise OptionError(
                f"metadata instruction={instruction!r}: expected a string, got {type(instruction).__name__}; "
                f"pass it as JSON, e.g. --metadata '{{\"instruction\": \"Classify the news.\"}}'"
            )
        data_dir = resolve_data_dir(_str(meta, "data_dir"))
        return cls(
            instruction=instruction,
            method=_str(meta, "method"),
            instruction_index=_int(meta, "instruction_index", None, minimum=0),
            instruction_id=_identifier(meta, "instruction_id"),
            bank_dir=_str(meta, "bank_dir"),
            instruction_encoding=_choice(meta, "instruction_encoding", ALL_ENCODINGS, None),
            prompt_format=_choice(meta, "prompt_format", NI_PROMPT_FORMATS, None),
            demo_seed=_seed(meta, "demo_seed", 0),
            data_dir=data_dir,
            test_sample=_int(meta, "test_sample", None, minimum=1),
            test_seed=_seed(meta, "test_seed", 0),
            truncate_words=_int(meta, "truncate_words", None, minimum=1),
            score_tokenizer=_str(meta, "score_tokenizer"),
            order_seed=_seed(meta, "order_seed", None),
            order_mode=_choice(meta, "order_mode", ORDER_MODES, "seeded"),
            perturbation=_choice(meta, "perturbation", PERTURBATIONS, None),
            perturbation_seed=_seed(meta, "perturbation_seed", 0),
            perturbation_mode=_choice(meta, "perturbation_mode", PERTURBATION_MODES, "document"),
            placement=_choice(meta, "placement", PLACEMENTS, None),
        )

    def as_metadata(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
