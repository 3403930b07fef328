"""The inducers of ``instructeval induce --method``: one registry, read by the CLI and ``run_induce``.

An inducer computes one file per (model, task) from the train split: a bank of an induced
selection method (``instructeval_tasks.selection_methods``: low perplexity, APE, RLPrompt), or
another result about instructions (``execution_accuracy``: scores of a pool). Each inducer's module
owns its computation and its bank writer, ``induce_<name>(lm, job) -> (file text, one-line summary)``.
Adding one is its module and an entry here.

Example:
    >>> list(INDUCERS)
    ['low_perplexity', 'ape', 'execution_accuracy', 'rlprompt']
    >>> get_inducer("ape").produces, get_inducer("execution_accuracy").suffix
    ('ape', '.json')
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import UserError, did_you_mean


@dataclass(frozen=True)
class Inducer:
    """One ``--method`` of ``instructeval induce``.

    Attributes:
        name: the ``--method`` value and the output folder (``<output>/<name>/<model label>/``).
        summary: what it computes, for ``--help``.
        runner: ``"module:function"`` computing one task, ``function(lm, job) -> (text, summary)``
            (imported when run: RLPrompt's imports torch).
        reads: the ``InduceSettings`` fields it reads (recorded, and in its fingerprint).
        produces: the selection method whose bank it writes, or ``None`` (a ``.json`` result).
        uses_pool: it scores a candidate pool (``--candidates``).
        kinds: the task kinds it accepts, and why not the others.
        finish: ``"module:function"`` called with the written path (e.g. to drop a checkpoint), or ``None``.
    """

    name: str
    summary: str
    runner: str
    reads: tuple[str, ...]
    produces: str | None
    uses_pool: bool = False
    kinds: tuple[str, ...] = ("cls", "mcq", "gqa", "ii")
    kinds_reason: str = ""
    finish: str | None = None

    @property
    def suffix(self) -> str:
        return ".yaml" if self.produces else ".json"

    def run(self, lm: Any, job: Any) -> tuple[str, str]:
        return _resolve(self.runner)(lm, job)

    def finished(self, path: Path) -> None:
        if self.finish:
            _resolve(self.finish)(path)


def _resolve(target: str) -> Callable[..., Any]:
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)


_APE_READS = ("k", "truncate_words", "n_demo_sets", "n_demos", "demo_seed", "greedy", "n_samples", "temperature",
              "max_gen_toks", "sample_seed", "max_chars", "n_exec", "exec_seed")
_RLPROMPT_READS = ("k", "truncate_words", "n_exec", "exec_seed", "steps", "prompt_batch", "inputs_per_step",
                   "prompt_tokens", "seed", "learning_rate", "top_k", "finalists", "policy_model")

INDUCERS: dict[str, Inducer] = {
    inducer.name: inducer
    for inducer in (
        Inducer("low_perplexity", "SPELL: the k candidates with the lowest perplexity on train inputs",
                "instructeval_tasks.induce.perplexity:induce_low_perplexity",
                ("k", "candidates", "n_inputs", "input_seed", "truncate_words"), "low_perplexity", uses_pool=True),
        Inducer("ape", "APE: generated candidates, the k best by execution accuracy on held-out train rows",
                "instructeval_tasks.induce.ape:induce_ape", _APE_READS, "ape"),
        Inducer("execution_accuracy", "the execution accuracy of every entry of a candidate pool",
                "instructeval_tasks.induce.execution:induce_execution_accuracy",
                ("candidates", "truncate_words", "n_exec", "exec_seed"), None, uses_pool=True),
        Inducer("rlprompt", "RLPrompt: a policy trained on this model's reward, the k best prompts on held-out rows",
                "instructeval_tasks.induce.rlprompt_bank:induce_rlprompt", _RLPROMPT_READS, "rlprompt",
                kinds=("cls", "mcq"),
                kinds_reason="the RLPrompt reward scores fixed choices, and the paper has no RLPrompt instructions "
                             "for NQ-Open/TriviaQA",
                finish="instructeval_tasks.induce.rlprompt_bank:discard_checkpoint"),
    )
}


class UnknownInducerError(UserError, ValueError):
    """An ``--method`` naming no inducer."""


def get_inducer(name: str) -> Inducer:
    try:
        return INDUCERS[name]
    except KeyError:
        raise UnknownInducerError(
            f"unknown induce method {name!r}{did_you_mean(str(name), INDUCERS)}; known: {', '.join(INDUCERS)}"
        ) from None
