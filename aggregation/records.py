"""The records the aggregation works on: one :class:`VariantResult` per evaluated variant, one
:class:`RunInfo` per results file, and the :class:`RunSet` that ``load_runs`` returns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from .catalog import KNOWN_RESULT_METRICS
from .issues import IssueLog


@dataclass(frozen=True)
class RunInfo:
    """One results file: which model, tasks and protocol it holds."""

    file: str
    model: str
    n_variants: int
    tasks: tuple[str, ...]
    profile: str | None
    sweep: Mapping[str, Any]
    lm_eval_version: str | None
    plugin_version: str | None
    limit: Any


@dataclass
class VariantResult:
    """One evaluated variant: a (model, task, instruction) in one setting, with its metric values.

    ``instruction`` is the stable instruction key within the method: ``instruction_id``, else
    ``#<instruction_index>``, else ``sha:<instruction_sha>``.
    """

    name: str
    file: str
    model: str
    task: str
    task_type: str
    method: str
    instruction: str
    instruction_index: int | None
    instruction_sha: str | None
    instruction_text: str | None
    setting: str
    num_fewshot: int
    demo_seed: int | None
    order_seed: int | None
    perturbation: str | None
    perturbation_seed: int | None
    metrics: dict[str, float]
    n_items: int | None
    protocol: dict[str, Any]
    pretrained: str | None = None
    model_num_parameters: float | None = None
    samples_path: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)
    estimated: bool = False  # metric values are item-response estimates of a budgeted sweep (budgeted.py)
    seconds: float = math.nan  # its share of the results file's evaluation time (``loading.seconds_per_variant``)

    def identity(self) -> tuple:
        """What makes two variants the same evaluation (model, task, instruction, setting, seeds).

        Zero-shot ignores the demo and order seeds (no demonstrations are shown). The later rounds
        of an adaptive budget (``budget.round`` > 0) are evaluations of their own: more cells of the
        same instruction and setting.
        """
        base = (self.model, self.task, self.method, self.instruction, self.setting, self.num_fewshot)
        budget_round = self.budget_round
        if budget_round:
            base += (f"budget-round-{budget_round}",)
        if self.setting == "zero_shot":
            return base
        if self.setting == "few_shot":
            return base + (self.demo_seed,)
        if self.setting == "ordering":
            return base + (self.demo_seed, self.order_seed)
        return base + (self.demo_seed, self.order_seed, self.perturbation, self.perturbation_seed)

    @property
    def budget_round(self) -> int:
        """The adaptive-budget round this variant evaluated (0: the first slice, or no adaptive budget)."""
        budget = self.metadata.get("budget")
        value = budget.get("round") if isinstance(budget, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    def describe(self) -> str:
        seeds = ""
        if self.setting != "zero_shot":
            seeds = f" demo_seed={self.demo_seed}"
        if self.order_seed is not None:
            seeds += f" order_seed={self.order_seed}"
        if self.perturbation:
            seeds += f" perturbation={self.perturbation}/{self.perturbation_seed}"
        return f"{self.model}/{self.task}/{self.method}/{self.instruction} {self.setting}{seeds}"


@dataclass
class RunSet:
    """Validated variants from all results files, the files' protocol records and the issues found."""

    variants: list[VariantResult]
    runs: list[RunInfo]
    issues: IssueLog

    def frame(self):
        """One row per variant (pandas DataFrame), metric values as columns ``metric:<name>``."""
        import pandas as pd

        rows = []
        for v in self.variants:
            row = {
                "model": v.model,
                "task": v.task,
                "task_type": v.task_type,
                "method": v.method,
                "instruction": v.instruction,
                "instruction_sha": v.instruction_sha,
                "setting": v.setting,
                "num_fewshot": v.num_fewshot,
                "demo_seed": v.demo_seed,
                "order_seed": v.order_seed,
                "perturbation": v.perturbation,
                "perturbation_seed": v.perturbation_seed,
                "n_items": v.n_items,
                "variant": v.name,
                "file": v.file,
                "samples": v.samples_path,
                "estimated": v.estimated,
                "seconds": v.seconds,
            }
            for name in KNOWN_RESULT_METRICS:
                row[f"metric:{name}"] = v.metrics.get(name, math.nan)
            rows.append(row)
        frame = pd.DataFrame(rows)
        if not frame.empty:
            frame = frame.sort_values(
                ["model", "task", "method", "instruction", "setting", "demo_seed", "order_seed", "variant"],
                na_position="first",
                kind="mergesort",
            ).reset_index(drop=True)
        return frame

    @property
    def models(self) -> list[str]:
        return sorted({v.model for v in self.variants})
