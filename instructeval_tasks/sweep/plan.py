"""The variants of a sweep: tasks x methods x instructions x settings, each a uniquely named task.

Variant names are ``instructeval_<task>__<instruction id>__<setting code>`` with setting codes
``zs`` (zero-shot), ``fs-d<s>`` (few-shot with demo set s), ``pt-d<s>`` (perturbed test inputs with
demo set s) and ``or-d<s>-o<j>`` (ordering j of demo set s). The name is only a label: everything the
aggregation needs is in the variant's metadata, which also carries a fingerprint so that a resumed
sweep recognises finished variants and refuses results of a different protocol under the same name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Sequence

from instructeval_banks import Bank, BankEntry, sample_entries

from ..errors import UserError
from ..fingerprint import fingerprint  # noqa: F401  (the plan's fingerprint; sweep modules import it from here)
from ..specs import get_spec
from .profiles import Profile

# Model_args keys copied into task metadata, as the lm_eval CLI does, so that tasks can load the
# model's tokenizer for acc_per_token.
MODEL_ARG_KEYS = ("pretrained", "tokenizer", "gguf_file", "revision", "trust_remote_code")


class PlanError(UserError, ValueError):
    """Bank entries that cannot form a sweep plan (ids that collide or are not plain names)."""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


def sample_bank_entries(entries: list[BankEntry], n: int, seed: int) -> list[BankEntry]:
    """``n`` entries drawn with ``random.Random(f"instructeval-bank:{method}:{task}:{seed}")``.

    Asking for at least as many entries as the bank has returns all of them in bank order; the draw
    of one (method, task) never depends on another's.
    """
    return list(sample_entries(entries, n, seed))


@dataclass(frozen=True)
class Variant:
    """One evaluation: an instruction of a task in one setting (and demo set / ordering)."""

    task: str
    entry: BankEntry
    setting: str
    demo_seed: int | None = None
    order_seed: int | None = None
    budget_round: int = 0  # an adaptive budget's later rounds: more cells of the same instruction and setting
    placement: str = "description"  # where the instruction goes (options.PLACEMENTS); the chat ones are their own settings
    fewshot_as_multiturn: bool | None = None  # a chat placement's demos as turns (None: lm-eval's default, yes)
    # its task metadata (``protocol_metadata`` with the run's model keys and budget cells), set by the sweep
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def fingerprint(self) -> str:
        return self.metadata["variant_fingerprint"]

    @property
    def method(self) -> str:
        return self.entry.method

    @property
    def round_grid(self) -> str:
        """The grid whose budget rounds it takes part in (``rounds.plan_round``): its ``grid``."""
        return self.grid

    def in_round(self, budget_round: int, metadata: dict[str, Any]) -> "Variant":
        """This variant's cells of a later budget round (``rounds.plan_round``), named ``<name>__r<round>``."""
        return replace(self, budget_round=budget_round, metadata=metadata)

    @property
    def chunk(self) -> str:
        """Variants of one (task, instruction) are evaluated and saved together."""
        return f"{self.task}__{_slug(self.entry.method)}__{_slug(self.entry.id)}"

    @property
    def setting_code(self) -> str:
        if self.setting == "zero_shot":
            return "zs"
        if self.setting == "few_shot":
            return f"fs-d{self.demo_seed}"
        if self.setting == "perturbed":
            return f"pt-d{self.demo_seed}"
        return f"or-d{self.demo_seed}-o{self.order_seed}"

    @property
    def name(self) -> str:
        suffix = f"__r{self.budget_round}" if self.budget_round else ""
        where = "" if self.placement == "description" else f"__{self.placement}"
        return f"instructeval_{self.task}__{_slug(self.entry.id)}__{self.setting_code}{where}{suffix}"

    @property
    def grid(self) -> str:
        """The (task, setting[, placement]) grid of a budget: its instructions x the test items."""
        where = "" if self.placement == "description" else f"@{self.placement}"
        return f"{self.task}:{self.setting_code}{where}"

    def protocol_metadata(self, profile: Profile, *, bank_dir: str | None, data_dir: str | None,
                          ni_prompt_format: str = "schema") -> dict[str, Any]:
        """The variant's task metadata before model keys; its fingerprint covers all of it."""
        meta: dict[str, Any] = {
            "version": 1.0,
            "instructeval_task": self.task,
            "method": self.entry.method,
            "instruction_id": self.entry.id,
            "bank_dir": bank_dir,
            "demo_seed": self.demo_seed if self.demo_seed is not None else 0,
            "order_seed": self.order_seed,
            "order_mode": profile.order_mode,
            "perturbation": "mild_mix" if self.setting == "perturbed" else None,
            "perturbation_seed": profile.perturbation_seed,
            "perturbation_mode": profile.perturbation_mode,
            # Instruction Induction tasks: the whole raw/execute set, as the original protocol.
            "test_sample": None if get_spec(self.task).kind == "ii" else profile.test_sample,
            "test_seed": profile.test_seed,
            # Instruction Induction and Natural Instructions tasks read raw inputs: never truncated (they refuse it).
            "truncate_words": None if get_spec(self.task).kind in ZERO_SHOT_KINDS else profile.truncate_words,
            "data_dir": data_dir,
            "sweep": {**profile.as_dict(), "instruction_text_sha": self.entry.sha},
        }
        if ni_prompt_format != "schema" and get_spec(self.task).kind == "ni":  # the schema's records stay as they were
            meta["prompt_format"] = ni_prompt_format
        if self.placement != "description":  # the description placement's records stay as they were
            meta["placement"] = self.placement
            meta["fewshot_as_multiturn"] = self.fewshot_as_multiturn is not False
        # The fingerprint names what the variant computes, not the sweep around it, so a sweep
        # extended with more selections reuses the variants it already finished.
        identity = {k: v for k, v in meta.items() if k != "sweep"}
        meta["variant_fingerprint"] = fingerprint(
            identity | {"num_fewshot": self.num_fewshot(profile), "instruction_text_sha": self.entry.sha}
        )
        return meta

    def num_fewshot(self, profile: Profile) -> int:
        return 0 if self.setting == "zero_shot" else profile.num_fewshot


# Instruction Induction tasks measure zero-shot execution accuracy on the whole raw/execute set:
# the demo settings (few_shot, perturbed, ordering) are not planned for them, and the profile's
# test_sample and truncate_words do not apply (see protocol_metadata). Natural Instructions tasks
# are zero-shot too (their header carries the task's examples, ``ni_variants``); test_sample applies.
II_SETTINGS = ("zero_shot",)
ZERO_SHOT_KINDS = ("ii", "ni")


def settings_for(entry_task: str, entry: BankEntry, profile: Profile) -> Iterable[Variant]:
    """The variants of one instruction under ``profile``, in a fixed order."""
    if "zero_shot" in profile.settings:
        yield Variant(entry_task, entry, "zero_shot")
    if get_spec(entry_task).kind in ZERO_SHOT_KINDS:
        return
    if "few_shot" in profile.settings:
        for seed in range(profile.n_selections):
            yield Variant(entry_task, entry, "few_shot", demo_seed=seed)
    if "perturbed" in profile.settings:
        for seed in range(profile.n_perturbed_selections):
            yield Variant(entry_task, entry, "perturbed", demo_seed=seed)
    if "ordering" in profile.settings:
        for seed in profile.ordering_demo_seeds:
            for order in range(1, profile.n_orderings + 1):
                yield Variant(entry_task, entry, "ordering", demo_seed=seed, order_seed=order)


def build_plan(
    tasks: list[str],
    methods: list[str],
    profile: Profile,
    bank: Bank,
    *,
    model_label: str | None = None,
    placements: Sequence[str] = ("description",),
    fewshot_as_multiturn: bool | None = None,
    data_dir: str | None = None,
) -> list[Variant]:
    """Every variant of the sweep, grouped by (task, instruction), in a stable order; each setting
    once per placement. A Natural Instructions task adds its header encodings (``ni_variants``, read
    from ``data_dir``) after the bank methods."""
    plan: list[Variant] = []
    for task in tasks:
        spec = get_spec(task)
        chosen = [entry for method in methods for entry in sample_bank_entries(
            bank.entries(method, spec.name, model_label), profile.instructions_per_method, profile.instruction_seed)]
        if spec.kind == "ni":
            from .ni_variants import header_entries

            chosen += header_entries(spec.name, data_dir)
        for entry in chosen:
            for variant in settings_for(spec.name, entry, profile):
                for placement in placements:
                    chat = placement != "description"
                    plan.append(replace(variant, placement=placement,
                                        fewshot_as_multiturn=fewshot_as_multiturn if chat else None))
    for variant in plan:
        if any(sep in variant.entry.id for sep in ("/", "\\")) or variant.entry.id in (".", ".."):
            raise PlanError(
                f"{variant.entry.source_file or 'bank'}: entry id {variant.entry.id!r} ({variant.entry.method}, "
                f"{variant.task}) is not a plain name: "
                f"ids name the sweep's files, so no '/', '\\' or '..'; rename it in the bank"
            )
    names = [v.name for v in plan]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise PlanError(f"variant names collide: {sorted(duplicates)[:5]}; bank entry ids must be unique per task")
    return plan
