"""The knobs of the inducers (``InduceSettings``) and what one inducer gets for one task (``InduceJob``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable

from ..specs import TaskSpec
from .common import DEFAULT_CANDIDATES, DEFAULT_TRUNCATE_WORDS
from .registry import get_inducer


@dataclass(frozen=True)
class InduceSettings:
    """The knobs of the induce methods (each method reads its own; all are recorded)."""

    k: int = 5                       # instructions kept per (model, task)
    candidates: tuple[str, ...] = DEFAULT_CANDIDATES  # low_perplexity / execution_accuracy pool
    n_inputs: int = 16               # low_perplexity: train inputs per candidate
    input_seed: int = 0
    truncate_words: int | None = DEFAULT_TRUNCATE_WORDS  # text fields cut to N words + "..." (None: no cut)
    n_demo_sets: int = 4             # ape: demonstration sets
    n_demos: int = 5                 # ape: pairs per set (the meta-prompt's "five")
    demo_seed: int = 0
    greedy: bool = True              # ape: one greedy completion per set
    n_samples: int = 2               # ape: sampled completions per set
    temperature: float = 0.7
    max_gen_toks: int = 50
    sample_seed: int = 0
    max_chars: int = 300             # ape: longer cleaned candidates are dropped
    n_exec: int = 32                 # ape / execution_accuracy: held-out train rows
    exec_seed: int = 0
    steps: int = 50                  # rlprompt: training steps (RLPrompt: 12000; CPU scale here)
    prompt_batch: int = 4            # rlprompt: prompts sampled per step (--batch-size)
    inputs_per_step: int = 4         # rlprompt: train rows every prompt of a step is scored on
    prompt_tokens: int = 5           # rlprompt: tokens per prompt
    seed: int = 0                    # rlprompt: MLP init, sampling and input draws
    learning_rate: float = 5e-5      # rlprompt: Adam (RLPrompt's few-shot classification config)
    top_k: int = 256                 # rlprompt: top-k sampling of prompt tokens
    finalists: int = 8               # rlprompt: best sampled prompts re-scored on the held-out slice
    policy_model: str | None = None  # rlprompt: policy LM (default: the evaluated model)
    checkpoint_every: int = 10       # rlprompt: steps between checkpoints (not a result setting)

    def override(self, **changes: Any) -> "InduceSettings":
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise ValueError(f"unknown induce setting(s) {sorted(unknown)}; known: {sorted(known)}")
        changes = {key: value for key, value in changes.items() if value is not None}
        if isinstance(changes.get("candidates"), str):
            changes["candidates"] = tuple(c.strip() for c in changes["candidates"].split(",") if c.strip())
        elif "candidates" in changes:
            changes["candidates"] = tuple(changes["candidates"])
        out = replace(self, **changes)
        for name in ("k", "n_inputs", "n_demo_sets", "n_demos", "max_gen_toks", "n_exec", "max_chars", "steps",
                     "prompt_batch", "inputs_per_step", "prompt_tokens", "top_k", "finalists", "checkpoint_every"):
            if getattr(out, name) < 1:
                raise ValueError(f"induce setting {name} must be >= 1, got {getattr(out, name)}")
        if out.n_samples < 0 or (out.n_samples == 0 and not out.greedy):
            raise ValueError("ape needs a greedy completion or n_samples >= 1")
        if out.n_samples and out.temperature <= 0:
            raise ValueError("sampled completions need temperature > 0")
        return out

    def for_method(self, method: str) -> dict[str, Any]:
        """The settings that inducer ``method`` reads (its registry entry's ``reads``; they enter its fingerprint)."""
        values = asdict(self)
        return {name: list(values[name]) if isinstance(values[name], tuple) else values[name]
                for name in get_inducer(method).reads}


@dataclass
class InduceJob:
    """One (inducer, task) of a run: the task's train rows and settings, where the bank goes.

    Attributes:
        spec: the task.
        rows: its train rows (the evaluation split is never read).
        source: where the rows came from (recorded).
        label: the model label (bank folder and entry ids).
        settings: the run's settings (``truncate_words`` cleared for Instruction Induction tasks).
        settings_fp: the fingerprint of everything the result depends on (resume check).
        model, args_dict: the harness backend and its arguments (recorded).
        pool: the candidate instructions (inducers with ``uses_pool``), else ``None``.
        path: the file the result is written to.
        overwrite, progress, echo: the run's flags and its line writer.
    """

    spec: TaskSpec
    rows: list[dict[str, Any]]
    source: str
    label: str
    settings: InduceSettings
    settings_fp: str
    model: str
    args_dict: dict[str, Any]
    pool: list[Any] | None
    path: Path
    overwrite: bool = False
    progress: bool = True
    echo: Callable[[str], None] = print
