"""The five InstructEval metrics of each (model, task, method, instruction), from variant accuracies.

Let ``a(v)`` be the primary accuracy of variant ``v`` (see :func:`choose_metrics`). For one
instruction of one (model, task):

- zero-shot accuracy ``ZS = a(zero_shot variant)``;
- few-shot accuracy ``FS = mean_s a(few_shot, demo seed s)`` over the demo seeds present;
- perturbation accuracy ``PA = mean_v a(v)`` over its ``perturbed`` variants (one per demo seed;
  several perturbation seeds of one demo seed all count);
- selectional sensitivity ``SS = stdev_s a(few_shot, s)`` -- the sample standard deviation,
  ``sqrt(sum_s (a_s - FS)^2 / (n - ddof))`` with ``ddof = 1`` (``statistics.stdev``, as the original);
- permutational sensitivity ``PS = mean_d stdev_o a(ordering, demo seed d, order seed o)``, the
  mean over the demo sets ``d`` in ``sweep.ordering_demo_seeds`` of the sample SD over that set's
  orderings. One demo set with P orderings is the paper's 1 x P shape; 5 sets x 5 orderings the
  original code's. The unpermuted few-shot variant is not one of the orderings (as in the original).
- worst-case perturbation accuracy (``WC``, needs per-sample logs): see ``samples.build_item_matrix``.

A standard deviation over fewer than 2 values is NaN with a warning (never 0). For PS, demo sets
with fewer than 2 orderings are left out of the mean with a warning; no usable set gives NaN.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Mapping, Sequence

import pandas as pd

from .issues import IssueLog
from .records import VariantResult
from .samples import ItemMatrix

INSTRUCTION_COLUMNS = [
    "model",
    "task",
    "task_type",
    "method",
    "instruction",
    "instruction_text",
    "metric_name",
    "zero_shot",
    "few_shot",
    "perturbed",
    "worst_case",
    "selectional",
    "permutational",
    "n_few_shot",
    "n_perturbed",
    "n_order_sets",
    "n_orderings",
]


def sample_std(values: Sequence[float], ddof: int = 1) -> float:
    """Standard deviation with ``ddof`` (1: sample SD); NaN for fewer than 2 values (never 0).

    Example:
        >>> round(sample_std([0.5, 0.6, 0.7]), 6)   # sqrt((0.01 + 0 + 0.01) / 2)
        0.1
        >>> sample_std([0.5])
        nan
    """
    n = len(values)
    if n < 2 or n - ddof < 1:
        return math.nan
    mean = math.fsum(values) / n
    return math.sqrt(math.fsum((x - mean) ** 2 for x in values) / (n - ddof))


def choose_metrics(
    variants: Sequence[VariantResult],
    issues: IssueLog,
    *,
    choice_metric: str | None = None,
    gqa_metric: str = "quasi_exact_match",
) -> dict[tuple[str, str], str]:
    """The primary accuracy metric of each (model, task).

    CLS/MCQ: ``choice_metric`` when given; otherwise the paper's rule: ``acc_per_token`` (the
    choice with the lowest mean per-token NLL) when *every* variant of the (model, task) reports
    it, else ``acc`` (with a ``metric-fallback`` warning naming how many variants lack
    ``acc_per_token``). ``acc_norm`` is never chosen by default: a variant with neither
    ``acc_per_token`` nor ``acc`` (missing, or not an accuracy such as NaN) is dropped with a
    ``metric-missing`` error that names ``--metric acc_norm`` as the way to score by it, and the
    rule is applied to the rest. GQA: ``gqa_metric`` (``quasi_exact_match``). A forced metric that
    some variant lacks drops that (model, task) with an error.

    Every variant of a returned (model, task) that the caller keeps must report the returned
    metric; the variants dropped here are those without it.
    """
    groups: dict[tuple[str, str], list[VariantResult]] = defaultdict(list)
    for v in variants:
        groups[(v.model, v.task)].append(v)
    out: dict[tuple[str, str], str] = {}
    for (model, task), members in sorted(groups.items()):
        kind = members[0].task_type
        forced = gqa_metric if kind == "gqa" else choice_metric
        if forced:
            lacking = [v for v in members if forced not in v.metrics]
            if lacking:
                issues.error(
                    "metric-missing",
                    f"{model}/{task}: {len(lacking)} of {len(members)} variants lack {forced!r} "
                    f"(e.g. {lacking[0].name}); (model, task) dropped",
                    lacking[0].file,
                    lacking[0].name,
                )
                continue
            out[(model, task)] = forced
            continue
        unscored = [v for v in members if "acc_per_token" not in v.metrics and "acc" not in v.metrics]
        if unscored:
            by_norm = all("acc_norm" in v.metrics for v in members)
            rest = ("the (model, task) is dropped" if len(unscored) == len(members)
                    else "those variants are dropped, the others are scored by the paper's rule")
            issues.error(
                "metric-missing",
                f"{model}/{task}: {len(unscored)} of {len(members)} variants have neither acc_per_token nor acc "
                f"(missing or not a number; e.g. {unscored[0].name}): {rest}"
                + ("; --metric acc_norm scores every variant by acc_norm instead" if by_norm else ""),
                unscored[0].file,
                unscored[0].name,
            )
            members = [v for v in members if v not in unscored]
            if not members:
                continue
        if all("acc_per_token" in v.metrics for v in members):
            out[(model, task)] = "acc_per_token"
        elif all("acc" in v.metrics for v in members):
            out[(model, task)] = "acc"
            have = sum("acc_per_token" in v.metrics for v in members)
            if have:
                issues.warn(
                    "metric-fallback",
                    f"{model}/{task}: acc_per_token is missing or not a number in {len(members) - have} of "
                    f"{len(members)} variants; using acc for all of them",
                )
            else:
                issues.warn(
                    "metric-fallback",
                    f"{model}/{task}: no acc_per_token (no tokenizer was reachable); using acc, "
                    "not the paper's per-token rule",
                )
        else:
            issues.error(
                "metric-missing",
                f"{model}/{task}: no accuracy metric common to all variants (some have acc_per_token but not acc, "
                "others acc but not acc_per_token); dropped: rerun the variants that lack one",
            )
    return out


def _sweep_of(members: Sequence[VariantResult]) -> dict:
    """The sweep record of a (model, task): the first variant's, with ordering seeds unioned."""
    sweeps = [v.protocol.get("_sweep") or {} for v in members]
    sweep = dict(next((s for s in sweeps if s), {}))
    seeds = sorted({int(s) for sw in sweeps for s in (sw.get("ordering_demo_seeds") or [])})
    if seeds:
        sweep["ordering_demo_seeds"] = seeds
    return sweep


class _Collector:
    """Groups repeated warnings into one per (model, task, code)."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str, str], list[str]] = defaultdict(list)

    def add(self, model: str, task: str, code: str, what: str) -> None:
        self.items[(model, task, code)].append(what)

    def flush(self, issues: IssueLog, messages: Mapping[str, str]) -> None:
        for (model, task, code), whats in sorted(self.items.items()):
            listed = ", ".join(whats[:8]) + (f", ... ({len(whats)} in all)" if len(whats) > 8 else "")
            issues.warn(code, f"{model}/{task}: {messages[code]}: {listed}")


_MESSAGES = {
    "small-group-selectional": "selectional sensitivity is NaN (fewer than 2 few-shot demo seeds) for",
    "small-group-permutational": "demo set(s) with fewer than 2 orderings left out of permutational sensitivity",
    "incomplete": "fewer variants than the sweep (or the other instructions) planned",
    "ordering-extra": "ordering variants of demo sets not in sweep.ordering_demo_seeds are ignored",
    "missing-setting": "instructions without a setting that other instructions of the (model, task) have",
}


def per_instruction(
    variants: Sequence[VariantResult],
    metrics: Mapping[tuple[str, str], str],
    issues: IssueLog,
    *,
    ddof: int = 1,
    item_matrices: Mapping[tuple[str, str], ItemMatrix] | None = None,
) -> pd.DataFrame:
    """One row per (model, task, method, instruction) with the metrics of the module docstring.

    Accuracies and SDs are fractions in [0, 1] (tables multiply by 100).
    """
    groups: dict[tuple[str, str], list[VariantResult]] = defaultdict(list)
    for v in variants:
        if (v.model, v.task) in metrics:
            groups[(v.model, v.task)].append(v)
    collector = _Collector()
    rows = []
    for (model, task), members in sorted(groups.items()):
        metric = metrics[(model, task)]
        sweep = _sweep_of(members)
        order_seeds = sweep.get("ordering_demo_seeds")
        by_instruction: dict[tuple[str, str], list[VariantResult]] = defaultdict(list)
        for v in members:
            by_instruction[(v.method, v.instruction)].append(v)
        worst = item_matrices.get((model, task)).point("worst_case") if item_matrices and (model, task) in item_matrices else {}
        group_rows = []
        for (method, instruction), vs in sorted(by_instruction.items()):
            label = f"{method}/{instruction}"
            zs = [v.metrics[metric] for v in vs if v.setting == "zero_shot"]
            fs = [v.metrics[metric] for v in sorted((v for v in vs if v.setting == "few_shot"), key=lambda v: v.demo_seed)]
            pt = [v.metrics[metric] for v in vs if v.setting == "perturbed"]
            orderings: dict[int, list[float]] = defaultdict(list)
            for v in vs:
                if v.setting == "ordering":
                    orderings[v.demo_seed].append(v.metrics[metric])
            selectional = sample_std(fs, ddof) if fs else math.nan
            if fs and math.isnan(selectional):
                collector.add(model, task, "small-group-selectional", label)
            sets = sorted(orderings) if not order_seeds else [d for d in order_seeds if d in orderings]
            extra = sorted(set(orderings) - set(sets))
            if extra:
                collector.add(model, task, "ordering-extra", f"{label} (demo sets {extra})")
            sds = []
            for d in sets:
                sd = sample_std(orderings[d], ddof)
                if math.isnan(sd):
                    collector.add(model, task, "small-group-permutational", f"{label} (demo set {d}: {len(orderings[d])} ordering)")
                else:
                    sds.append(sd)
            permutational = math.fsum(sds) / len(sds) if sds else math.nan
            text = next((v.instruction_text for v in vs if v.instruction_text is not None), None)
            group_rows.append(
                {
                    "model": model,
                    "task": task,
                    "task_type": vs[0].task_type,
                    "method": method,
                    "instruction": instruction,
                    "instruction_text": text,
                    "metric_name": metric,
                    "zero_shot": zs[0] if zs else math.nan,
                    "few_shot": math.fsum(fs) / len(fs) if fs else math.nan,
                    "perturbed": math.fsum(pt) / len(pt) if pt else math.nan,
                    "worst_case": worst.get((method, instruction), math.nan),
                    "selectional": selectional,
                    "permutational": permutational,
                    "n_few_shot": len(fs),
                    "n_perturbed": len(pt),
                    "n_order_sets": len(sds),
                    "n_orderings": min((len(orderings[d]) for d in sets), default=0),
                }
            )
        _check_complete(group_rows, sweep, model, task, collector)
        rows.extend(group_rows)
    collector.flush(issues, _MESSAGES)
    frame = pd.DataFrame(rows, columns=INSTRUCTION_COLUMNS)
    for col in ("n_few_shot", "n_perturbed", "n_order_sets", "n_orderings"):
        frame[col] = frame[col].astype("int64")
    return frame


def _check_complete(rows: list[dict], sweep: Mapping, model: str, task: str, collector: _Collector) -> None:
    """Warn about instructions with fewer variants than the sweep (or the fullest instruction) has."""
    for setting in ("zero_shot", "few_shot", "perturbed", "permutational"):
        have = [r for r in rows if not math.isnan(r[setting])]
        if have and len(have) < len(rows):
            lacking = [f"{r['method']}/{r['instruction']} ({setting})" for r in rows if math.isnan(r[setting])]
            if setting != "permutational" or any(r["n_orderings"] for r in rows):
                for what in lacking:
                    collector.add(model, task, "missing-setting", what)
    expected = {
        "n_few_shot": sweep.get("n_selections"),
        "n_perturbed": sweep.get("n_perturbed_selections", sweep.get("n_selections")),
        "n_orderings": sweep.get("n_orderings"),
    }
    for key, want in expected.items():
        observed = [r[key] for r in rows if r[key]]
        if not observed:
            continue
        target = want if isinstance(want, int) and want > 0 else max(observed)
        for r in rows:
            if 0 < r[key] < target:
                collector.add(model, task, "incomplete", f"{r['method']}/{r['instruction']} ({key.removeprefix('n_')}: {r[key]} of {target})")
    seeds = sweep.get("ordering_demo_seeds")
    if seeds:
        for r in rows:
            if 0 < r["n_order_sets"] < len(seeds) and r["n_orderings"]:
                collector.add(model, task, "incomplete", f"{r['method']}/{r['instruction']} (ordering demo sets: {r['n_order_sets']} of {len(seeds)})")
