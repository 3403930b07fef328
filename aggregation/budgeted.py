"""Estimates for budgeted sweeps: every instruction's accuracy on the full grid, with intervals.

A variant whose metadata has ``budget`` (``instructeval run --budget F``) was evaluated on the items
``budget["items"]`` of its grid (one (task, setting code), see ``instructeval_tasks.sweep.budget``).
For each (model, task, grid) this module reads the variants' per-sample logs (the primary metric of
the (model, task)), fits the grid's estimator (``instructeval_tasks.estimation``: the label scores'
model where a classification grid's samples give them, else the crossed item-response model,
methods as fixed effects, instruction effects normal, item effects from a fitted discrete
distribution; methods and instructions with one effect per gold class of a classification or
multiple-choice grid, the classes read from the samples' ``target``: ``item_classes`` in
``budget_grids.csv``) and reports:

- each instruction's estimated accuracy ``acc_i`` (observed cells as scored, the others predicted),
  its observed accuracy on its own items, and the probability that it is the grid's best;
- each method's mean of ``acc_i`` over its instructions (what relative gain is computed from), its
  mean relative gain within the grid and its difference to the null method, each with an interval
  and ``P(above null)`` (``method_contrasts``): with the null instruction estimated like the others
  (``--budget-full-methods ''``) the baseline's uncertainty is in the intervals;
- the 5, 25, 50, 75 and 95% quantiles of ``acc_i`` across the grid's instructions: the median over
  the predictive draws of each draw's quantiles (numpy's linear interpolation; on a grid estimated
  from its label scores, the estimates' own quantiles);
- the best instruction (highest ``acc_i``) with its probability of being best.

Intervals: ``n_boot`` posterior predictive draws of the whole grid
(``item_response.predictive_draws``: effects from their approximate posteriors, a Bernoulli outcome
for every unobserved cell; on a grid estimated from its label scores, ``choice_scores``' draws with
their spread from a calibration on held-out margins, ``spread_draws``), percentiles; ``P(best)`` is
the share of draws in which the instruction has the highest accuracy. The generator is seeded from
``"<seed>|irt|<model>|<task>|<grid>"``.

Variants of one instruction in one grid (an adaptive design's rounds) are one row of the grid:
their items must not overlap.

The estimates replace the variants' metric values for the rest of the aggregation (relative gain,
AvgP/MaxP, sensitivities), and every table built from them marks them (``(est.)``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from instructeval_tasks.estimation import ITEM_RESPONSE, Cells, ChoiceGrid, GridFit, estimator_for
from instructeval_tasks.estimation.choice_scores import ChoiceScores, choice_grid
from instructeval_tasks.estimation.item_response import item_classes

from .bootstrap import rng_for
from .budget_validity import resolution
from .harness_budget import design_of
from .issues import AggregationError, IssueLog
from .records import VariantResult
from .relative_gain import method_mean_gains
from .samples import merge_targets, read_sample_targets, read_targets_and_choices

BUDGET_KEY = "budget"
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
DEFAULT_ESTIMATE_DRAWS = 200  # --estimate-draws

GRID_COLUMNS = ["model", "task", "grid", "setting", "metric", "n_instructions", "n_items", "observed_cells",
                "grid_cells", "observed_share", "s_instruction", "s_item", "method_covariate", "item_classes", "n_boot", "design",
                "estimator"]
SCORE_METRICS = {"acc": "log-likelihood", "acc_per_token": "log-likelihood per token"}  # the score each metric argmaxes
INSTRUCTION_COLUMNS = ["model", "task", "grid", "setting", "method", "instruction", "observed_items",
                       "observed_accuracy", "estimate", "ci_low", "ci_high", "p_best", "not_resolved"]
METHOD_COLUMNS = ["model", "task", "grid", "setting", "method", "n_instructions", "estimate", "ci_low", "ci_high",
                  "gain", "gain_low", "gain_high", "vs_null", "vs_null_low", "vs_null_high", "p_above_null"]
QUANTILE_COLUMNS = ["model", "task", "grid", "setting", "quantile", "estimate", "ci_low", "ci_high", "not_resolved"]
BEST_COLUMNS = ["model", "task", "grid", "setting", "method", "instruction", "estimate", "p_best"]


@dataclass(frozen=True)
class GridDraws:
    """One grid's predictive draws (``drawn``: draws x instructions, rows ``keys`` = (method, instruction)),
    its estimator's name, its ``(design, budget)`` (``harness_budget.design_of``) and its items."""

    keys: list[tuple[str, str]]
    drawn: np.ndarray
    estimator: str
    design: tuple[str, float]
    n_items: int


@dataclass
class BudgetEstimates:
    """The frames of the "Budgeted estimates" section (fractions in [0, 1])."""

    grids: pd.DataFrame
    instructions: pd.DataFrame
    methods: pd.DataFrame
    quantiles: pd.DataFrame
    best: pd.DataFrame
    level: float
    estimated: set[tuple[str, str]] = field(default_factory=set)  # (task, setting) pairs with estimates
    draws: dict[tuple[str, str, str], list[GridDraws]] = field(default_factory=dict)  # (model, task, setting): its grids

    def summary(self) -> dict[str, Any]:
        def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
            return [{k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in row.items()}
                    for row in frame.to_dict(orient="records")]

        return {
            "note": "estimates of a budgeted sweep (instructeval run --budget; each grid's estimator says how): not exact accuracies",
            "ci_level": self.level,
            "grids": records(self.grids),
            "instructions": records(self.instructions),
            "methods": records(self.methods),
            "quantiles": records(self.quantiles),
            "best": records(self.best),
        }


def is_budgeted(variant: VariantResult) -> bool:
    return isinstance(variant.metadata.get(BUDGET_KEY), Mapping)


def _percentile_ci(replicates: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    alpha = (1 - level) / 2
    return np.quantile(replicates, alpha, axis=0), np.quantile(replicates, 1 - alpha, axis=0)


def _grid_cells(variants: Sequence[VariantResult], metric: str,
                issues: IssueLog) -> tuple[Cells, list[float], list[list[VariantResult]], ChoiceGrid | str] | None:
    """The observed cells of one grid from its variants' samples; ``None`` (with an error) if unusable.

    Returns the cells, each row's observed accuracy, each row's variants (the variants of one
    instruction from several rounds of an adaptive design share a row) and the grid's label scores
    (:func:`choice_grid`), or why the grid has none.
    """
    budgets = [v.metadata[BUDGET_KEY] for v in variants]
    sizes = {b.get("n_items") for b in budgets}
    if len(sizes) != 1 or not isinstance(next(iter(sizes)), int):
        issues.error("budget", f"budgeted variants of grid {budgets[0].get('grid')!r} record different item counts "
                     f"{sorted(map(str, sizes))}: not one sweep's grid", variant=variants[0].name)
        return None
    n_items = next(iter(sizes))
    methods = sorted({v.method for v in variants})
    members: dict[tuple[str, str], list[VariantResult]] = {}
    for v in variants:
        members.setdefault((v.method, v.instruction), []).append(v)
    rows, cols, ys, row_variants = [], [], [], []
    wants_scores = variants[0].task_type == "cls" and metric in SCORE_METRICS
    scored: list[tuple[int, ChoiceScores]] = []
    targets: dict[int, str | None] = {}
    for i, group in enumerate(members.values()):
        seen: set[int] = set()
        for v in group:
            if not v.samples_path:
                issues.error("budget", f"{v.describe()}: budgeted variant without its per-sample log; its accuracy on "
                             f"{len(v.metadata[BUDGET_KEY].get('items') or [])} items cannot be estimated for the grid "
                             f"(run without --no-log-samples)", file=v.file, variant=v.name)
                return None
            try:
                if wants_scores:
                    doc_ids, values, gold, choices = read_targets_and_choices(v.samples_path, metric)
                    scored.append((i, choices))
                else:
                    doc_ids, values, gold = read_sample_targets(v.samples_path, metric)
            except AggregationError as err:
                issues.error("budget", str(err), file=v.samples_path, variant=v.name)
                return None
            recorded = sorted(int(x) for x in v.metadata[BUDGET_KEY].get("items") or [])
            if doc_ids.tolist() != recorded:
                issues.error("budget", f"{v.describe()}: its samples cover doc_ids {doc_ids.tolist()[:8]}... but its budget "
                             f"records items {recorded[:8]}...: samples of another run", file=v.samples_path, variant=v.name)
                return None
            if recorded and (recorded[0] < 0 or recorded[-1] >= n_items):
                issues.error("budget", f"{v.describe()}: budget items outside 0..{n_items - 1}", file=v.file, variant=v.name)
                return None
            if seen.intersection(recorded):
                issues.error("budget", f"{v.describe()}: items {sorted(seen.intersection(recorded))[:8]} were already "
                             f"evaluated for this instruction by another variant of the grid", file=v.file, variant=v.name)
                return None
            seen.update(recorded)
            clash = merge_targets(targets, doc_ids.tolist(), gold)
            if clash:
                doc_id, target, recorded_target = clash
                issues.error("budget", f"{v.describe()}: item {doc_id} has gold answer {target!r} here but "
                             f"{recorded_target!r} in another variant of the grid: samples of different data",
                             file=v.samples_path, variant=v.name)
                return None
            rows.append(np.full(len(doc_ids), i))
            cols.append(doc_ids)
            ys.append(values)
        row_variants.append(group)
    classes = None
    if variants[0].task_type != "gqa":  # open answers are no classes
        classes = item_classes(targets, n_items)
        unknown = [j for j in range(n_items) if targets.get(j) is None]
        if unknown:
            issues.warn("budget", f"grid {budgets[0].get('grid')!r}: the gold answers of items {unknown[:8]} are in no "
                        f"samples file (no instruction evaluated them, or their lines have no target): its estimates "
                        f"use one effect per instruction, not one per gold class", variant=variants[0].name)
    cells = Cells(
        rows=np.concatenate(rows).astype(int),
        cols=np.concatenate(cols).astype(int),
        y=np.concatenate(ys).astype(float),
        n_rows=len(members),
        n_cols=n_items,
        groups=np.array([methods.index(method) for method, _ in members]),
        classes=classes,
    )
    counts = np.bincount(cells.rows, minlength=cells.n_rows)
    sums = np.bincount(cells.rows, cells.y, minlength=cells.n_rows)
    observed = [float(total / count) if count else float("nan") for total, count in zip(sums, counts)]
    choice: ChoiceGrid | str = "not a classification grid scored by acc or acc_per_token"
    if wants_scores:
        choice = choice_grid(cells, scored, metric, [v.metadata.get("choice_token_counts") for v in variants])
    return cells, observed, row_variants, choice


def method_contrasts(accuracy: np.ndarray, methods: Sequence[str],
                     null_weight: float = 5.0) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``(gain, vs_null)`` per method from the instructions' accuracies ``accuracy`` (``(..., m)``:
    one estimate, or one row per predictive draw); ``methods[i]`` is instruction i's method.

        mu        = sum_i w_i x_i / sum_i w_i,   w_i = null_weight for the null method, else 1
        gain_M    = mean_{i in M} 100 (x_i - mu) / mu        (relative_gain.method_mean_gains, within the grid)
        vs_null_M = mean_{i in M} x_i - mean_{i in null} x_i (no entry without a null method, nor for null)

    ``mu = 0`` gives NaN gains. Computed per draw, the intervals carry the baseline's uncertainty.

    Example (null 0.5, generic 0.6 and 0.4, ape 0.7; mu = (5 x 0.5 + 1.7) / 8 = 0.525):
        >>> gain, vs_null = method_contrasts(np.array([0.5, 0.6, 0.4, 0.7]), ["null", "generic", "generic", "ape"])
        >>> {m: round(float(g), 2) for m, g in gain.items()}
        {'ape': 33.33, 'generic': -4.76, 'null': -4.76}
        >>> {m: round(float(d), 3) for m, d in vs_null.items()}
        {'ape': 0.2, 'generic': 0.0}
    """
    x = np.asarray(accuracy, dtype=float)
    gain = method_mean_gains(x, methods, null_weight)
    names = np.asarray(methods)
    vs_null: dict[str, np.ndarray] = {}
    if "null" in gain:
        null = x[..., names == "null"].mean(axis=-1)
        vs_null = {m: x[..., names == m].mean(axis=-1) - null for m in gain if m != "null"}
    return gain, vs_null


@dataclass(frozen=True)
class GridEstimate:
    """One grid's fit: point estimates, predictive draws (``None`` without), intervals, P(best), quantiles."""

    fit: GridFit
    point: np.ndarray
    replicates: np.ndarray | None
    ci_low: np.ndarray
    ci_high: np.ndarray
    p_best: np.ndarray
    quantiles: np.ndarray  # at QUANTILES: the draws' median (``fit.quantiles_from_draws``), else the point estimates'
    quantile_low: np.ndarray  # the quantiles' percentile interval over the draws (NaN without)
    quantile_high: np.ndarray


def estimate_grid(cells: Cells, *, n_boot: int, level: float, rng: np.random.Generator,
                  choice: ChoiceGrid | None = None) -> GridEstimate:
    """Fit ``cells`` by their estimator (``instructeval_tasks.estimation.estimator_for``: the label
    scores' where ``choice``, or the cells, give them, else the crossed item-response model), estimate
    every instruction's accuracy and (``n_boot > 0``) draw the grid ``n_boot`` times.

    Where the fit's estimates are pulled toward their method's (``GridFit.quantiles_from_draws``: the
    crossed model), the quantiles across instructions are the draws' median quantiles (the estimates'
    own are too narrow; the median is the estimate of least expected absolute error and always
    inside the percentile interval); otherwise (the label scores) they are the estimates' own,
    their intervals from the lower to the higher end of the draws' percentile interval and of that
    interval moved by the estimate minus the draws' mean."""
    if choice is not None:
        cells = dataclasses.replace(cells, label_scores=choice)
    fit = estimator_for(cells).fit(cells)
    point = fit.estimates()
    nan = np.full(cells.n_rows, np.nan)
    if not n_boot:
        no_q = np.full(len(QUANTILES), np.nan)
        return GridEstimate(fit, point, None, nan, nan, nan, np.quantile(point, QUANTILES), no_q, no_q)
    draws = fit.draws(n_boot, rng)
    lo, hi = _percentile_ci(draws, level)
    p_best = np.bincount(np.argmax(draws, axis=1), minlength=cells.n_rows) / n_boot
    per_draw = np.quantile(draws, QUANTILES, axis=1).T  # draws x quantiles
    q_lo, q_hi = _percentile_ci(per_draw, level)
    if fit.quantiles_from_draws:
        return GridEstimate(fit, point, draws, lo, hi, p_best, np.median(per_draw, axis=0), q_lo, q_hi)
    own = np.quantile(point, QUANTILES)
    # The draws' quantiles sit where each draw's Bernoulli noise spreads the instructions, the
    # estimates' where the predicted P(correct) leave them; which is nearer the full grid's varies
    # from grid to grid, so the interval spans both (docs/validation/estimators-tried.md).
    shift = own - per_draw.mean(axis=0)
    return GridEstimate(fit, point, draws, lo, hi, p_best, own, np.minimum(q_lo, q_lo + shift), np.maximum(q_hi, q_hi + shift))


def _one_sided(cells: Cells, rows: np.ndarray, method: str) -> str | None:
    """The warning that ``method`` (its instructions: ``rows``) has unobserved cells and its observed
    ones all scored 0 (or all 1), else None. With no outcome of the other kind nothing in the
    method's own cells bounds its estimate, which then rests on the other methods' cells and the
    level's prior (``item_response``). The warning's bound on its unobserved cells is the exact
    one-sided 97.5% limit of a rate seen 0 times in n, ``1 - 0.025 ** (1 / n)``.

        >>> c = Cells(np.array([0, 0, 1, 2, 2]), np.array([0, 1, 0, 0, 1]), np.array([0., 0., 0., 1., 0.]), 3, 2)
        >>> _one_sided(c, np.array([0, 1]), "a"), _one_sided(c, np.array([2]), "b")  # b is observed on every item
        ('no correct answer in the 3 observed cells of a (up to 70.8%)', None)
    """
    seen = np.isin(cells.rows, rows)
    n = int(seen.sum())
    if not n or n == len(rows) * cells.n_cols:
        return None
    values = cells.y[seen]
    if values.max() > 0 and values.min() < 1:
        return None
    kind = "correct" if values.max() <= 0 else "wrong"
    return f"no {kind} answer in the {n} observed cells of {method} (up to {1 - 0.025 ** (1 / n):.1%})"


# Below this many items carrying the grid's rarer outcome (correct, or wrong), the crossed model's
# intervals after the adaptive design's rounds can be too narrow (docs/validation/estimators-tried.md).
FEW_OUTCOME_ITEMS = 10


def _few_outcome_items(cells: Cells) -> str | None:
    """Where the observed cells' rarer outcome (correct, or wrong) falls on fewer than
    ``FEW_OUTCOME_ITEMS`` items, a note that says so (example below), else None. The
    crossed model's effects then rest on those few items, where an instruction's answer is more
    its own than the model's additive effects say, and the adaptive design's rounds (chosen by that
    model) leave unobserved just the cells it is surest of.

        >>> c = Cells(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 2]), np.array([1., 0., 0., 0.]), 2, 12)
        >>> _few_outcome_items(c)
        'its observed correct answers fall on 1 of 12 items'
    """
    scores, observed = cells.matrices()
    right = int((observed & (scores > 0)).any(axis=0).sum())
    wrong = int((observed & (scores < 1)).any(axis=0).sum())
    kind, count = ("correct", right) if right <= wrong else ("wrong", wrong)
    if count >= FEW_OUTCOME_ITEMS:
        return None
    return f"its observed {kind} answers fall on {count} of {cells.n_cols} items"


def _estimator_detail(choice: ChoiceGrid | str, metric: str) -> str:
    """What the grid's estimator was fitted to, for its ``estimator`` column: the label scores, or
    why the grid has none.

    Example:
        >>> grid = ChoiceGrid(np.zeros((1, 1, 4)), np.zeros(1, dtype=int), ("a", "b", "c", "d"))
        >>> _estimator_detail(grid, "acc_per_token"), _estimator_detail("no label scores", "acc")
        ('log-likelihood per token of 4 labels', 'no label scores')
    """
    if isinstance(choice, ChoiceGrid):
        return f"{SCORE_METRICS[metric]} of {len(choice.labels)} labels"
    return choice


def _design_of(members: Sequence[VariantResult]) -> str:
    """The ``--budget-design`` the grid's cells were dealt by (a record without one is uniform), and
    the shares ``--budget-extend`` brought it to, as ``budget_report._design_words`` reads them."""
    design = ",".join(sorted({str(v.metadata[BUDGET_KEY].get("design", "uniform")) for v in members}))
    shares = sorted({float(v.metadata[BUDGET_KEY]["extend"]) for v in members
                     if isinstance(v.metadata[BUDGET_KEY].get("extend"), (int, float))})
    return design + "".join(f", extended to {share:g}" for share in shares)


def estimate_budgeted(
    variants: list[VariantResult],
    metric_of: Mapping[tuple[str, str], str],
    issues: IssueLog,
    *,
    n_boot: int = DEFAULT_ESTIMATE_DRAWS,
    level: float = 0.95,
    seed: str = "instructeval",
    method_covariate: bool = True,
    null_weight: float = 5.0,
) -> tuple[list[VariantResult], BudgetEstimates | None]:
    """Variants with budgeted ones' metric values replaced by estimates, and the estimates' frames.

    Budgeted variants of a grid that cannot be estimated (a missing or mismatched samples file) are
    dropped with an error naming the file: their observed accuracy is on a subset of the items.
    """
    groups: dict[tuple[str, str, str], list[VariantResult]] = {}
    for v in variants:
        if is_budgeted(v):
            groups.setdefault((v.model, v.task, str(v.metadata[BUDGET_KEY].get("grid"))), []).append(v)
    if not groups:
        return variants, None
    replaced: dict[tuple[str, str], VariantResult] = {}  # (model, variant name): names repeat across models
    dropped: set[tuple[str, str]] = set()
    grid_rows, instr_rows, method_rows, quant_rows, best_rows = [], [], [], [], []
    draws_of: dict[tuple[str, str, str], list[GridDraws]] = {}
    estimated: set[tuple[str, str]] = set()
    for (model, task, grid), members in sorted(groups.items()):
        members = sorted(members, key=lambda v: (v.method, v.instruction, v.name))
        metric = metric_of[(model, task)]
        built = _grid_cells(members, metric, issues)
        if built is None:
            dropped.update((v.model, v.name) for v in members)
            continue
        cells, observed, row_variants, choice = built
        if not method_covariate:
            cells = dataclasses.replace(cells, groups=None)
        # ("irt": the label the draws have always been seeded with, so the same --seed gives the same draws)
        est = estimate_grid(cells, n_boot=n_boot, level=level, rng=rng_for(seed, "irt", model, task, grid),
                            choice=choice if isinstance(choice, ChoiceGrid) else None)
        fit, point, draws = est.fit, est.point, est.replicates
        setting, design = members[0].setting, _design_of(members)
        nan = float("nan")
        estimated.add((task, setting))
        base = {"model": model, "task": task, "grid": grid, "setting": setting}
        grid_rows.append({**base, "metric": metric, "n_instructions": cells.n_rows, "n_items": cells.n_cols,
                          "observed_cells": int(cells.y.size), "grid_cells": cells.n_rows * cells.n_cols,
                          "observed_share": cells.y.size / max(cells.n_rows * cells.n_cols, 1),
                          "s_instruction": fit.s_instruction,
                          "s_item": fit.s_item, "method_covariate": method_covariate,
                          "item_classes": cells.n_classes,
                          "n_boot": n_boot, "design": design,
                          "estimator": f"{fit.name} ({_estimator_detail(choice, metric)})"})
        lo, hi, p_best = est.ci_low, est.ci_high, est.p_best
        row_method = [group[0].method for group in row_variants]
        grid_design = design_of([v.metadata[BUDGET_KEY] for v in members])
        if draws is not None:
            draws_of.setdefault((model, task, setting), []).append(GridDraws(
                [(g[0].method, g[0].instruction) for g in row_variants], draws, fit.name, grid_design, cells.n_cols))
        one = resolution("instruction", fit.name, grid_design[0], grid_design[1], cells.n_cols, nominal=grid_design[2])
        full = np.isin(np.arange(cells.n_rows), np.flatnonzero(np.bincount(cells.rows, minlength=cells.n_rows) == cells.n_cols))
        for i, group in enumerate(row_variants):
            shown = one.resolved or full[i]  # an instruction scored on every item is exact
            instr_rows.append({**base, "method": group[0].method, "instruction": group[0].instruction,
                               "observed_items": int(np.sum(cells.rows == i)), "observed_accuracy": observed[i],
                               "estimate": float(point[i]) if shown else nan, "ci_low": float(lo[i]) if shown else nan,
                               "ci_high": float(hi[i]) if shown else nan, "p_best": float(p_best[i]),
                               "not_resolved": "" if shown else one.why})
            for v in group:
                replaced[(v.model, v.name)] = dataclasses.replace(v, metrics={**v.metrics, metric: float(point[i])},
                                                                  estimated=True)
        gain, vs_null = method_contrasts(point, row_method, null_weight)
        gain_draws, vs_null_draws = method_contrasts(draws, row_method, null_weight) if draws is not None else ({}, {})

        def interval(reps: np.ndarray | None) -> tuple[float, float]:
            if reps is None or np.isnan(reps).any():
                return nan, nan
            return tuple(float(x[0]) for x in _percentile_ci(reps[:, None], level))  # type: ignore[return-value]

        unsupported = []
        for method in sorted(set(row_method)):
            rows = np.array([i for i, name in enumerate(row_method) if name == method])
            one_sided = _one_sided(cells, rows, method)
            if one_sided:
                unsupported.append(one_sided)
            m_lo, m_hi = interval(draws[:, rows].mean(axis=1) if draws is not None else None)
            g_lo, g_hi = interval(gain_draws.get(method))
            d_lo, d_hi = interval(vs_null_draws.get(method))
            above = vs_null_draws.get(method)
            method_rows.append({**base, "method": method, "n_instructions": len(rows),
                                "estimate": float(point[rows].mean()), "ci_low": m_lo, "ci_high": m_hi,
                                "gain": float(gain[method]), "gain_low": g_lo, "gain_high": g_hi,
                                "vs_null": float(vs_null.get(method, nan)), "vs_null_low": d_lo, "vs_null_high": d_hi,
                                "p_above_null": float(np.mean(above > 0)) if above is not None else nan})
        if unsupported:
            issues.warn("budget", f"grid {grid!r} of {model}: " + "; ".join(unsupported) + ": such a method's "
                        "estimate and interval are the model's extrapolation from the other cells (the bound: the "
                        "share of its unobserved cells that could differ, 95%, were they like its observed ones); "
                        "--budget-extend adds cells")
        few = _few_outcome_items(cells) if fit.name == ITEM_RESPONSE and "adaptive" in design else None
        if few:
            issues.warn("budget", f"grid {grid!r} of {model}: {few}: the adaptive design's intervals can be too "
                        f"narrow on such grids (SmolLM2's TriviaQA at 5%: 90% of the method means and 80% of the "
                        f"quantiles covered; at 10% 97% and 94%): they may understate the uncertainty; a "
                        f"larger --budget (or --budget-extend) observes more of the items that decide the grid")
        for k, q in enumerate(QUANTILES):
            verdict = resolution(f"q{round(q * 100):02d}", fit.name, grid_design[0], grid_design[1], cells.n_cols,
                                 nominal=grid_design[2])
            values = (est.quantiles[k], est.quantile_low[k], est.quantile_high[k]) if verdict.resolved else (nan,) * 3
            quant_rows.append({**base, "quantile": q, "estimate": float(values[0]), "ci_low": float(values[1]),
                               "ci_high": float(values[2]), "not_resolved": verdict.why or ""})
        top = int(np.argmax(point))
        best_rows.append({**base, "method": row_variants[top][0].method, "instruction": row_variants[top][0].instruction,
                          "estimate": float(point[top]), "p_best": float(p_best[top])})
    # an instruction's later rounds live on in its first-round variant's estimate
    out = [replaced.get((v.model, v.name), v) for v in variants
           if (v.model, v.name) not in dropped and not (is_budgeted(v) and v.budget_round)]
    if not grid_rows:
        return out, None
    return out, BudgetEstimates(
        grids=pd.DataFrame(grid_rows, columns=GRID_COLUMNS),
        instructions=pd.DataFrame(instr_rows, columns=INSTRUCTION_COLUMNS),
        methods=pd.DataFrame(method_rows, columns=METHOD_COLUMNS),
        quantiles=pd.DataFrame(quant_rows, columns=QUANTILE_COLUMNS),
        best=pd.DataFrame(best_rows, columns=BEST_COLUMNS),
        level=level,
        estimated=estimated,
        draws=draws_of,
    )


def maxp_from_draws(maxp: pd.DataFrame, acc_long: pd.DataFrame, budget: BudgetEstimates | None,
                    level: float) -> tuple[pd.DataFrame, list[str]]:
    """The MaxP cells (``relative_gain.two_level_mean(acc_long, "value", how="max")``: per (metric, task,
    method) the mean over models of the best instruction's accuracy) with each budgeted model's best
    taken from its grid's draws: per draw the max over the method's instructions, the draws' median
    (the point estimates' max is pulled toward the method's mean). Where the budget validation does
    not resolve ``maxp`` at the grid's design and budget (``budget_validity``), the cell is NaN and a
    note says why. A setting of several grids (demo sets) averages its grids' draws, draw by draw.
    Returns the cells and the notes.
    """
    if budget is None or not budget.draws or maxp.empty:
        return maxp, []
    per_model = acc_long.groupby(["metric", "task", "method", "model"], sort=True)["value"].max()
    notes: list[str] = []
    for (model, task, setting), grids in sorted(budget.draws.items()):
        keys = sorted(grids[0].keys)
        if any(sorted(g.keys) != keys for g in grids):
            per_model.loc[[k for k in per_model.index if k[0] == setting and k[1] == task and k[3] == model]] = np.nan
            notes.append(f"{model} {task} {setting}: its grids (demo sets) hold different instructions; MaxP not estimated")
            continue
        # an instruction's accuracy in a setting of several grids (demo sets) is its mean over them, draw by
        # draw (independent fits: draw d of each)
        n = min(len(g.drawn) for g in grids)
        drawn = np.mean([g.drawn[:n][:, [g.keys.index(k) for k in keys]] for g in grids], axis=0)
        verdicts = [resolution("maxp", g.estimator, g.design[0], g.design[1], g.n_items, nominal=g.design[-1]) for g in grids]
        unresolved = next((v for v in verdicts if not v.resolved), None)
        for method in sorted({m for m, _ in keys}):
            key = (setting, task, method, model)
            if key not in per_model.index:
                continue
            rows = [i for i, (m, _) in enumerate(keys) if m == method]
            per_model.loc[key] = np.nan if unresolved else 100.0 * float(np.median(drawn[:, rows].max(axis=1)))
        if unresolved:
            notes.append(f"{model} {task} {setting}: MaxP {unresolved.why}")
    frame = per_model.rename("best").reset_index()
    cells = frame.groupby(["metric", "task", "method"], sort=True).agg(
        value=("best", lambda s: float(s.mean()) if s.notna().all() else np.nan), n_models=("best", "count")).reset_index()
    out = maxp.drop(columns=["value"]).merge(cells[["metric", "task", "method", "value"]], on=["metric", "task", "method"],
                                              how="left")
    return out[list(maxp.columns)], notes
