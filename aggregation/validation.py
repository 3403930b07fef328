"""Checks across files: duplicates, protocol agreement within a (model, task), instruction texts.

- the same variant (same :meth:`VariantResult.identity`) twice with the same numbers: ``note duplicate``,
  kept once (a copy with a samples file preferred); with different numbers: ``error
  duplicate-conflict``, every copy dropped;
- variants of one (model, task) that disagree on a :data:`HARD_PROTOCOL` field: ``error
  protocol-mismatch``, the whole (model, task) dropped; on a :data:`SOFT_PROTOCOL` field:
  ``warning protocol-drift``;
- one instruction id with two texts within a (model, task): ``error instruction-conflict``.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from .issues import IssueLog
from .records import VariantResult

# Protocol fields that must agree for all variants of one (model, task); a difference is an error.
HARD_PROTOCOL = ("profile", "num_fewshot", "test_ids", "test_sample", "test_seed", "truncate_words", "template_sha",
                 "scoring_version")
# Differences here are reported as warnings.
SOFT_PROTOCOL = ("sweep", "plugin_version", "data_source")


def _same_numbers(a: VariantResult, b: VariantResult, tol: float = 1e-12) -> bool:
    keys = set(a.metrics) | set(b.metrics)
    return all(k in a.metrics and k in b.metrics and abs(a.metrics[k] - b.metrics[k]) <= tol for k in keys)


def _budget_of(variant: VariantResult) -> Mapping[str, Any] | None:
    budget = variant.metadata.get("budget")
    return budget if isinstance(budget, Mapping) else None


def _budget_text(budget: Mapping[str, Any]) -> str:
    return f"--budget {budget.get('fraction')} seed {budget.get('seed')}"


def _exact_over_budgeted(copies: list[VariantResult], issues: IssueLog) -> list[VariantResult]:
    """Copies of one variant, never merging a budgeted result (an estimate) with an exact one.

    An exact copy wins over budgeted copies (an ``error budget-duplicate`` names both: equal headline
    numbers prove nothing, the budgeted one saw a part of the items); budgeted copies of different
    budgets are an ``error budget-conflict`` and all are dropped.
    """
    budgeted = [c for c in copies if _budget_of(c) is not None]
    if not budgeted:
        return copies
    exact = [c for c in copies if _budget_of(c) is None]
    if exact:
        issues.error(
            "budget-duplicate",
            f"{copies[0].describe()} has an exact result ({'; '.join(f'{c.file}:{c.name}' for c in exact)}) and a "
            f"budgeted one ({'; '.join(f'{c.file}:{c.name} ({_budget_text(_budget_of(c))})' for c in budgeted)}); "
            f"the exact result is kept and the budgeted one dropped: aggregate budgeted and full runs of a model apart",
            budgeted[0].file, budgeted[0].name,
        )
        return exact
    budgets = {json.dumps({k: v for k, v in _budget_of(c).items() if k != "items"}, sort_keys=True, default=str) for c in budgeted}
    if len(budgets) > 1:
        issues.error(
            "budget-conflict",
            f"{copies[0].describe()} comes from sweeps with different budgets "
            f"({'; '.join(f'{c.file}:{c.name} ({_budget_text(_budget_of(c))})' for c in budgeted)}); all copies dropped",
            budgeted[0].file, budgeted[0].name,
        )
        return []
    return copies


def deduplicate(variants: Sequence[VariantResult], issues: IssueLog) -> list[VariantResult]:
    """Merge identical duplicates (prefer one with samples); drop every copy of conflicting ones.

    A budgeted copy (an estimate) is never merged with an exact one: see ``_exact_over_budgeted``.
    """
    groups: dict[tuple, list[VariantResult]] = {}
    for v in variants:
        groups.setdefault(v.identity(), []).append(v)
    out = []
    for key in sorted(groups, key=lambda k: tuple("" if x is None else str(x) for x in k)):
        copies = groups[key]
        if len(copies) == 1:
            out.append(copies[0])
            continue
        copies = _exact_over_budgeted(copies, issues)
        if not copies:
            continue
        if len(copies) == 1:
            out.append(copies[0])
            continue
        where = "; ".join(f"{c.file}:{c.name}" for c in copies)
        if all(_same_numbers(copies[0], c) for c in copies[1:]):
            keep = next((c for c in copies if c.samples_path), copies[0])
            issues.note("duplicate", f"{copies[0].describe()} appears {len(copies)} times with equal numbers ({where}); kept once", keep.file, keep.name)
            out.append(keep)
        else:
            values = "; ".join(f"{c.file}:{c.name} {json.dumps(c.metrics, sort_keys=True)}" for c in copies)
            issues.error(
                "duplicate-conflict",
                f"{copies[0].describe()} appears {len(copies)} times with different numbers; all copies dropped: {values}",
                copies[0].file,
                copies[0].name,
            )
    return out


def check_protocol(variants: Sequence[VariantResult], issues: IssueLog) -> list[VariantResult]:
    """Drop every (model, task) whose variants disagree on a :data:`HARD_PROTOCOL` field."""
    groups: dict[tuple[str, str], list[VariantResult]] = {}
    for v in variants:
        groups.setdefault((v.model, v.task), []).append(v)
    dropped: set[tuple[str, str]] = set()
    for (model, task), members in sorted(groups.items()):
        for key in HARD_PROTOCOL + SOFT_PROTOCOL:
            values: dict[str, list[VariantResult]] = {}
            for v in members:
                value = v.protocol[key]
                if key in ("num_fewshot", "scoring_version") and value is None:  # zero-shot; a plain lm_eval run
                    continue
                values.setdefault(json.dumps(value, sort_keys=True, default=str), []).append(v)
            if len(values) < 2:
                continue
            detail = "; ".join(
                f"{_short(val)} in {len(vs)} variant(s) e.g. {vs[0].file}:{vs[0].name}" for val, vs in sorted(values.items())
            )
            first = sorted(values.values(), key=len)[0][0]
            if key in HARD_PROTOCOL:
                issues.error(
                    "protocol-mismatch",
                    f"{model}/{task}: runs disagree on {key} ({detail}); the whole (model, task) is dropped",
                    first.file,
                    first.name,
                )
                dropped.add((model, task))
            else:
                issues.warn("protocol-drift", f"{model}/{task}: runs differ in {key} ({detail})", first.file, first.name)
    return [v for v in variants if (v.model, v.task) not in dropped]


def check_instructions(variants: Sequence[VariantResult], issues: IssueLog) -> list[VariantResult]:
    """Drop instructions whose id maps to two different texts within one (model, task)."""
    shas: dict[tuple, dict[str, VariantResult]] = {}
    for v in variants:
        sha = v.instruction_sha if v.instruction_sha is not None else (None if v.instruction_text is None else f"text:{v.instruction_text}")
        if sha is not None:
            shas.setdefault((v.model, v.task, v.method, v.instruction), {}).setdefault(sha, v)
    bad = set()
    for key, by_sha in sorted(shas.items()):
        if len(by_sha) > 1:
            examples = "; ".join(f"{s[:24]} in {v.file}:{v.name}" for s, v in sorted(by_sha.items()))
            first = next(iter(by_sha.values()))
            issues.error("instruction-conflict", f"{'/'.join(key)}: one instruction id, different texts ({examples}); dropped", first.file, first.name)
            bad.add(key)
    return [v for v in variants if (v.model, v.task, v.method, v.instruction) not in bad]


def _short(value: str, width: int = 60) -> str:
    return value if len(value) <= width else value[: width - 3] + "..."
