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
                                ignore it (``instruction_banks/README.md``)
``demo_seed``          0        seed of the fixed, class-balanced demonstration set
``data_dir``           --       local files ``<dir>/<task>/{train,eval}.jsonl``; falls back
                                to ``$INSTRUCTEVAL_DATA_DIR``, then to the HF hub
``test_sample``        --       evaluate a seeded (balanced for classification) sample of
                                N eval items instead of the whole eval split
``test_seed``          0        seed of that sample
``truncate_words``     --       cut text fields to N words + "..." (the original used 100)
``score_tokenizer``    --       tokenizer for ``acc_per_token``; default: the model's
                                ``tokenizer`` or ``pretrained`` (with ``gguf_file``)
``order_seed``         --       reorder the fixed demo set (permutational sensitivity);
                                unset keeps the drawn order
``order_mode``         seeded   ``seeded`` (an independent string-seeded shuffle) or
                                ``original`` (the original's cumulative shuffles)
``perturbation``       --       ``mild_mix``: perturb the test example's text fields (HELM)
``perturbation_seed``  0        seed of the per-document perturbation RNG
``perturbation_mode``  document ``document`` (a string-seeded RNG per document and field) or
                                ``stream`` (the original's single sequential RNG)
=====================  =======  ==========================================================

K, the number of demonstrations, is the harness's ``num_fewshot`` (YAML default 6).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any, Mapping

from instructeval_banks.structured import ENCODINGS
from instructeval_tasks.errors import UserError

DATA_DIR_ENV = "INSTRUCTEVAL_DATA_DIR"


class OptionError(UserError, ValueError):
    """A metadata value of the wrong type or range; the message names the key and the fix."""


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
PERTURBATIONS = ("mild_mix",)
PERTURBATION_MODES = ("document", "stream")


def _choice(meta: Mapping[str, Any], key: str, allowed: tuple[str, ...], default: str | None) -> str | None:
    value = meta.get(key, default)
    if value is None or value in allowed:
        return value
    raise OptionError(f"metadata {key}={value!r}: expected one of {', '.join(allowed)}")


@dataclass(frozen=True)
class TaskOptions:
    """Typed, validated view of the InstructEval keys of a task's metadata."""

    instruction: str | None = None
    method: str | None = None
    instruction_index: int | None = None
    instruction_id: str | None = None
    bank_dir: str | None = None
    instruction_encoding: str | None = None
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

    @classmethod
    def from_metadata(cls, meta: Mapping[str, Any] | None) -> "TaskOptions":
        meta = dict(meta or {})
        instruction = meta.get("instruction")
        if isinstance(instruction, (int, float)) and not isinstance(instruction, bool):
            # `--metadata instruction=3` arrives as a number; an instruction is text.
            instruction = str(instruction)
        elif instruction is not None and not isinstance(instruction, str):
            raise OptionError(
                f"metadata instruction={instruction!r}: expected a string, got {type(instruction).__name__}; "
                f"pass it as JSON, e.g. --metadata '{{\"instruction\": \"Classify the news.\"}}'"
            )
        data_dir = _str(meta, "data_dir") or os.environ.get(DATA_DIR_ENV) or None
        return cls(
            instruction=instruction,
            method=_str(meta, "method"),
            instruction_index=_int(meta, "instruction_index", None, minimum=0),
            instruction_id=_identifier(meta, "instruction_id"),
            bank_dir=_str(meta, "bank_dir"),
            instruction_encoding=_choice(meta, "instruction_encoding", ENCODINGS, None),
            demo_seed=_int(meta, "demo_seed", 0),
            data_dir=data_dir,
            test_sample=_int(meta, "test_sample", None, minimum=1),
            test_seed=_int(meta, "test_seed", 0),
            truncate_words=_int(meta, "truncate_words", None, minimum=1),
            score_tokenizer=_str(meta, "score_tokenizer"),
            order_seed=_int(meta, "order_seed", None),
            order_mode=_choice(meta, "order_mode", ORDER_MODES, "seeded"),
            perturbation=_choice(meta, "perturbation", PERTURBATIONS, None),
            perturbation_seed=_int(meta, "perturbation_seed", 0),
            perturbation_mode=_choice(meta, "perturbation_mode", PERTURBATION_MODES, "document"),
        )

    def as_metadata(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
