"""How far an instruction moves a harness task's own score (``instructeval run --harness-tasks`` results).

Inputs: results entries whose ``configs[T].metadata.harness`` records a harness-task variant (task,
n-shot, method, instruction, placement, items), and their per-sample logs. The score of a task is its
first metric (``metric_list[0]``) under its first filter (e.g. GSM8K ``exact_match,strict-match``),
as the task's own results table lists it first; the null variant's score is the stock score.

Per (model, harness task, placement, n-shot), over the instructions (the null one included):

- the stock score and the instructions' min / median / max, and the stock score's mid-rank
  percentile among the other instructions' scores;
- the **instruction-effect SD beyond item noise** (``sensitivity_measures.instruction_effect_sd``,
  a two-way random-effects fit of the per-item scores) with the sensitivity card's two-way
  bootstrap interval;
- a **within-item permutation test** of "no instruction moves the score" (``instruction_test``:
  residuals from each item's mean, summed per instruction; ``permutation_p``, the verdict's word;
  valid wherever the cells were fixed before any outcome: not run on the adaptive design's grids),
  and where it finds no effect at 5%, the instruction-effect SD it
  would detect with 80% power (``detectable_sd``, simulated under the crossed model's item distribution);
  on a multiple-choice grid the same test summed per instruction *and gold answer* (``class_shift_p``:
  a shift of answers toward one label counts too, even where the score stays put);
- the stock score against chance (``chance``: ``chance``, ``chance_p``, ``chance_state``);
- per gold answer of a multiple-choice task, each instruction's accuracy and its score at the
  evaluation split's own class mix (``harness_classes``; ``data/harness_classes.csv``).

**Budgeted grids** (``--budget``: each instruction on its own cells, the null one on every item):
the instructions' scores are the item-response model's estimates on the whole grid
(``item_response.instruction_accuracy``; the null score stays the exact stock score), with one
instruction effect per gold answer on a multiple-choice task (the samples' ``target``, the classes
the budget balanced each instruction's items over; ``item_classes`` in ``data/harness_effects.csv``
counts them, 1 for a generation task). Every statistic across instructions (min, median, max, the
stock score's percentile, the sensitivity card's measures, the pair flips) is computed on each
posterior predictive draw of the whole grid (``item_response.predictive_grids``) and reported as the
draws' median with their percentile interval (``draw_statistics``), never from the point estimates,
which are pulled toward their method's mean; the instruction-effect SD is the draws' median of the
two-way estimator with a joint bootstrap interval (replicate b resamples the instructions and items
of draw ``b mod D``). Each is printed only where ``budget_validity`` says the validation resolves it
at the grid's design and budget; elsewhere NaN, and ``not_resolved`` says why and what would
resolve it. Each instruction's score gets the percentile interval of the draws, and its difference
to the stock score (``vs_stock``) an interval and ``P(above stock)`` from the same draws
(``score_rows``; ``data/harness_scores.csv``).

Per (harness task, placement, n-shot) across models (at least 2 models sharing >= 1 instruction):
the stock ranking of the models, each model's rank range over instructions, the probability that a
stock-ordered pair flips under a randomly drawn instruction (the share of instructions that flip
it, with a bootstrap interval over instructions; with a budgeted grid the draws' median share, its
interval from replicates that take draw ``b mod D`` and resample the instructions) and Kendall's
tau-b between the stock ranking and each instruction's (median and minimum).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from instructeval_tasks.estimation.item_response import (ITEM_GRID, Cells, fit_crossed, instruction_accuracy, item_classes,
                                                          predictive_grids)

from .bootstrap import rng_for
from .chance import Chance, chance_of, choice_answers
from .budget_validity import Resolution
from .harness_classes import CLASS_COLUMNS, class_rows
from .harness_budget import design_of, effect_statistics, merged_reasons, resolve
from .harness_methods import harness_methods
from .instruction_test import POWER_SIMULATIONS, detectable_sd, permutation_test
from .issues import IssueLog
from .json_input import BadJson, parse_json_bytes
from .leaderboard import kendall_tau_b, percentile_of
from .loading import (expand_paths, find_samples, label_from_pretrained, parse_model_args, results_stamp,
                      seconds_per_variant, warn_truncated)
from .samples import merge_targets, read_choice_scores, read_sample_targets
from .sensitivity_card import Measure, SensitivityCard, basic_interval, build_card, card_measures
from .sensitivity_measures import mean_square_components


@dataclass
class HarnessResult:
    """One harness-task variant of one model."""

    model: str
    task: str
    placement: str
    num_fewshot: int
    method: str
    instruction_id: str
    instruction: str
    metric: str  # "name,filter"
    value: float
    file: str
    samples_path: str | None
    test_ids: list[int] | None = None
    budget: dict | None = None  # the variant's ``metadata.budget`` record (its cells), if budgeted
    output_type: str | None = None  # the task config's ``output_type`` (``multiple_choice``, ``generate_until``, ...)
    split_classes: dict | None = None  # ``{gold answer: rows}`` of the whole evaluation split (multiple choice)
    seconds: float = math.nan  # its share of the results file's ``total_evaluation_time_seconds`` (wall)


def _metric_key(result: dict, config: dict, preferred: str | None = None) -> str | None:
    """The ``name,filter`` key of the score read: ``preferred``'s where the result has it, else the task's
    first metric of its ``metric_list`` (else the result's first)."""
    metrics = [m.get("metric") for m in (config.get("metric_list") or []) if isinstance(m, dict)]
    keys = [k for k in result if "," in k and "_stderr" not in k]
    if preferred is not None:
        metrics = [preferred] + metrics
    for metric in metrics:
        found = [k for k in keys if k.split(",")[0] == metric]
        if found:
            return found[0]
    return keys[0] if keys else None


def load_harness_results(paths: Iterable[str], issues: IssueLog, *, samples: bool = True,
                         metric: str | None = None) -> list[HarnessResult]:
    """Every harness-task variant in ``paths`` (results files or folders); unreadable files are left to
    ``load_runs``'s issues. ``metric`` (``--harness-metric``): the score to read where a result has it
    (a variant without it keeps its task's first metric, with a warning)."""
    out: list[HarnessResult] = []
    quiet = IssueLog()
    for path in expand_paths(paths, quiet):
        try:
            data = parse_json_bytes(Path(path).read_bytes())
        except (OSError, BadJson):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("results"), dict) or not isinstance(data.get("configs"), dict):
            continue
        stamp = results_stamp(Path(path))
        for name, result in sorted(data["results"].items()):
            config = data["configs"].get(name) or {}
            meta = config.get("metadata") if isinstance(config, dict) else None
            record = meta.get("harness") if isinstance(meta, dict) else None
            if not isinstance(record, dict) or not isinstance(result, dict):
                continue
            key = _metric_key(result, config, metric)
            if metric is not None and key is not None and key.split(",")[0] != metric:
                issues.warn("harness-metric", f"no {metric} in this harness variant's results: it reports {key}", str(path), name)
            value = result.get(key) if key else None
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                issues.warn("harness-metric", f"no numeric score ({key}) for harness variant; left out", str(path), name)
                continue
            warn_truncated(issues, meta, str(path), name)  # --allow-truncation: prompts cut, as for the nine tasks
            model = meta.get("model_label") or label_from_pretrained(
                parse_model_args((data.get("config") or {}).get("model_args")).get("pretrained") or data.get("model_name") or "model")
            sample_path = find_samples(Path(path), name, stamp, data["results"].keys())[0] if samples else None
            out.append(HarnessResult(
                model=str(model), task=str(record.get("task")), placement=str(record.get("placement", "description")),
                num_fewshot=int(record.get("num_fewshot") or 0), method=str(record.get("method")),
                instruction_id=str(record.get("instruction_id")), instruction=str(record.get("instruction", "")),
                metric=key, value=float(value), file=str(path), samples_path=sample_path, test_ids=record.get("test_ids"),
                budget=meta.get("budget") if isinstance(meta.get("budget"), dict) else None,
                output_type=config.get("output_type") if isinstance(config.get("output_type"), str) else None,
                split_classes=record.get("split_classes") if isinstance(record.get("split_classes"), dict) else None,
                seconds=seconds_per_variant(data)))
    return out


@dataclass(frozen=True)
class BudgetedFit:
    """A budgeted grid's crossed item-response fit (``fit``), its point estimates (``accuracy``), the
    accuracies of every predictive draw (``drawn``, draws x instructions), the instruction-effect SD
    (points: the draws' median, with the joint bootstrap's interval) and the item-noise SD (points)."""

    fit: Any
    accuracy: np.ndarray
    drawn: np.ndarray
    sd: Measure
    noise: float
    by_class: np.ndarray | None = None  # draws x instructions x gold classes: accuracy on each class's items


def budgeted_instruction_sd(cells: Cells, *, n_draws: int, n_boot: int, level: float,
                            rng: np.random.Generator) -> tuple[np.ndarray, Measure, float, np.ndarray]:
    """``(estimated accuracies, instruction-effect SD in points with its interval, item-noise SD in points,
    the accuracies of every predictive draw (draws x instructions))`` of a budgeted grid (module doc)."""
    got = fit_budgeted(cells, n_draws=n_draws, n_boot=n_boot, level=level, rng=rng)
    return got.accuracy, got.sd, got.noise, got.drawn


def fit_budgeted(cells: Cells, *, n_draws: int, n_boot: int, level: float, rng: np.random.Generator) -> BudgetedFit:
    """The :class:`BudgetedFit` of ``cells`` (module doc)."""
    fit = fit_crossed(cells)
    accuracy = instruction_accuracy(fit, cells)
    draws = np.concatenate(list(predictive_grids(fit, cells, n_draws, rng)), axis=0).astype(np.float64)
    drawn_accuracy = draws.mean(axis=2)
    by_class = None if cells.classes is None else np.stack(
        [draws[:, :, cells.class_index() == c].mean(axis=2) for c in range(cells.n_classes)], axis=2)
    between, resid = mean_square_components(draws)
    estimate = 100.0 * float(np.median(np.sqrt(np.maximum(between, 0.0))))
    noise = 100.0 * float(np.median(np.sqrt(resid / cells.n_cols)))
    if n_boot <= 0 or cells.n_rows < 2:
        return BudgetedFit(fit, accuracy, drawn_accuracy, Measure(estimate), noise, by_class)
    m, n = cells.n_rows, cells.n_cols
    replicates = []
    batch = max(1, 2_000_000 // max(1, m * n))
    for start in range(0, n_boot, batch):
        size = min(batch, n_boot - start)
        which = (np.arange(start, start + size) % n_draws)[:, None, None]
        rows = rng.integers(0, m, size=(size, m))[:, :, None]
        cols = rng.integers(0, n, size=(size, n))[:, None, :]
        b_between, _ = mean_square_components(draws[which, rows, cols])
        replicates.append(100.0 * np.sqrt(np.maximum(b_between, 0.0)))
    ci_low, ci_high = basic_interval("instruction_sd", estimate, np.concatenate(replicates), level)
    return BudgetedFit(fit, accuracy, drawn_accuracy, Measure(estimate, ci_low, ci_high), noise, by_class)


def score_rows(members: Sequence[HarnessResult], values: Sequence[float], drawn: np.ndarray | None,
               level: float, *, scored_every_item: Sequence[bool] = (),
               resolved: Resolution | None = None) -> list[dict[str, Any]]:
    """Each variant's score and its difference to the stock (null) score of the same grid.

    With ``drawn`` (a budgeted grid's predictive draws, draws x variants) each gets the percentile
    interval of its score, of ``vs_stock`` (its score minus the stock score, draw by draw) and
    ``p_above_stock`` (the share of draws in which it beats the stock score); ``estimated`` is true
    for those not ``scored_every_item``. A full grid's scores are exact on their items and get none.
    Where ``resolved`` says the budget does not resolve an estimated score, its numbers are NaN and
    ``not_resolved`` says why.

    Example (stock 0.50, an instruction at 0.56, exact):
        >>> rows = score_rows([HarnessResult("m", "t", "description", 0, method, iid, "", "acc,none", v, "f", None)
        ...                    for method, iid, v in (("null", "null", .5), ("generic", "g1", .56))], [.5, .56], None, .95)
        >>> round(rows[1]["vs_stock"], 2), rows[1]["estimated"], rows[1]["ci_low"]
        (0.06, False, nan)
    """
    nan = math.nan
    stock = next((i for i, r in enumerate(members) if r.method == "null"), None)
    alpha = (1 - level) / 2
    out = []
    for i, (r, v) in enumerate(zip(members, values)):
        row = {"model": r.model, "task": r.task, "placement": r.placement, "num_fewshot": r.num_fewshot,
               "method": r.method, "instruction": r.instruction_id, "score": v,
               "estimated": drawn is not None and not (i < len(scored_every_item) and scored_every_item[i]),
               "ci_low": nan, "ci_high": nan, "vs_stock": v - values[stock] if stock is not None else nan,
               "vs_stock_low": nan, "vs_stock_high": nan, "p_above_stock": nan, "not_resolved": ""}
        if row["estimated"] and resolved is not None and not resolved.resolved:
            row.update(score=nan, vs_stock=nan, not_resolved=resolved.why)
        elif drawn is not None:
            row["ci_low"], row["ci_high"] = (float(x) for x in np.quantile(drawn[:, i], [alpha, 1 - alpha]))
            if stock is not None and i != stock:
                diff = drawn[:, i] - drawn[:, stock]
                row["vs_stock_low"], row["vs_stock_high"] = (float(x) for x in np.quantile(diff, [alpha, 1 - alpha]))
                row["p_above_stock"] = float(np.mean(diff > 0))
        out.append(row)
    return out


# Posterior predictive draws of a budgeted grid for its instruction-effect SD.
BUDGET_DRAWS = 200
NO_EFFECT_ALPHA = 0.05  # the level at which "no evidence of an instruction effect" is read, and its power computed
ADAPTIVE = "adaptive"
ADAPTIVE_NO_TEST = ("not tested: the adaptive design's later rounds choose cells from the outcomes, under which "
                    "the test's size is not established; deal the cells with --budget-design uniform or balanced")


@dataclass
class HarnessEffects:
    """The section's numbers (scores as fractions; SDs in points)."""

    effects: pd.DataFrame
    rankings: pd.DataFrame
    scores: pd.DataFrame
    pairs: pd.DataFrame = field(default_factory=pd.DataFrame)  # every stock-ordered pair's flip probability
    cards: list[SensitivityCard] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    classes: pd.DataFrame = field(default_factory=pd.DataFrame)  # each instruction's accuracy per gold answer (harness_classes)
    # (model, task, placement, n-shot) -> (the rows' test_ids or None, instruction ids, instructions x items scores
    # (NaN: a cell a budget did not evaluate)): the per-item scores the verdicts (``verdict``) read
    items: dict = field(default_factory=dict, repr=False)
    methods: pd.DataFrame = field(default_factory=pd.DataFrame)  # the instruction-type breakdown (harness_methods)
    chance: dict = field(default_factory=dict, repr=False)  # (model, task, placement, n-shot) -> its stock's ``chance.Chance``
    seconds_per_cell: dict = field(default_factory=dict, repr=False)  # (model, task, placement, n-shot) -> wall s per cell

    def summary(self) -> dict[str, Any]:
        def records(frame: pd.DataFrame) -> list[dict]:
            return json.loads(frame.to_json(orient="records")) if not frame.empty else []

        return {"effects": records(self.effects), "rankings": records(self.rankings), "pairs": records(self.pairs),
                "notes": list(self.notes)}


EFFECT_COLUMNS = ["model", "task", "placement", "num_fewshot", "metric", "n_instructions", "n_items", "stock", "min", "median",
                  "max", "stock_percentile", "instruction_sd", "instruction_sd_low", "instruction_sd_high", "item_noise_sd",
                  "permutation_p", "class_shift_p", "detectable_sd", "cells_share", "item_classes",
                  "chance", "chance_p", "chance_state",
                  "min_low", "min_high", "median_low", "median_high", "max_low", "max_high",
                  "stock_percentile_low", "stock_percentile_high", "budget_design", "budget", "not_resolved"]
SCORE_COLUMNS = ["model", "task", "placement", "num_fewshot", "method", "instruction", "score", "estimated", "ci_low",
                 "ci_high", "vs_stock", "vs_stock_low", "vs_stock_high", "p_above_stock", "not_resolved"]
RANK_COLUMNS = ["task", "placement", "num_fewshot", "metric", "n_models", "n_instructions", "stock_ranking", "rank_ranges",
                "tau_median", "tau_min", "flip_probability_max", "flip_probability_max_low", "flip_probability_max_high",
                "most_flipped_pair", "not_resolved"]


def harness_effects(results: list[HarnessResult], issues: IssueLog, *, n_boot: int, level: float, seed: str,
                    n_perm: int = 1000, n_power: int = POWER_SIMULATIONS) -> HarnessEffects | None:
    """The per-(model, task, placement) effects and the rank stability across models; None without results."""
    if not results:
        return None
    groups: dict[tuple, list[HarnessResult]] = {}
    for r in results:
        groups.setdefault((r.model, r.task, r.placement, r.num_fewshot), []).append(r)
    rows, cards, scores_of_grid = [], [], []
    draws_of_grid: dict[tuple, tuple[list[str], np.ndarray, Resolution]] = {}
    class_of_grid: list[dict[str, Any]] = []
    items_of_grid: dict[tuple, tuple] = {}
    chance_of_grid: dict[tuple, Chance] = {}
    seconds_of_grid: dict[tuple, float] = {}
    for key in sorted(groups):
        model, task, placement, shot = key
        members = sorted(groups[key], key=lambda r: (r.method != "null", r.method, r.instruction_id))
        metrics = {r.metric for r in members}
        where = f"{model}/{task} ({placement}, {shot}-shot)"
        if len(metrics) > 1:
            issues.warn("harness-metric", f"{where}: variants report different first metrics {sorted(metrics)}; left out")
            continue
        # an adaptive budget's later rounds (``<name>__r<k>``) add cells to their instruction's row
        later = [r for r in members if _budget_round(r)]
        members = [r for r in members if not _budget_round(r)]
        if not members:
            issues.warn("harness-budget", f"{where}: later adaptive rounds without their first slice; left out", later[0].file)
            continue
        row, card, grid_scores, drawn = _grid_effects(key, members, later, issues, n_boot=n_boot, level=level, seed=seed,
                                                      n_perm=n_perm, n_power=n_power, class_out=class_of_grid,
                                                      items_out=items_of_grid, chance_out=chance_of_grid,
                                                      seconds_out=seconds_of_grid)
        scores_of_grid += grid_scores
        if card is not None:
            cards.append(card)
        if drawn is not None:
            draws_of_grid[key] = drawn
        rows.append(row)
    effects = pd.DataFrame(rows, columns=EFFECT_COLUMNS)
    scores = pd.DataFrame(scores_of_grid, columns=SCORE_COLUMNS)
    rankings, pairs = _rankings(scores, n_boot=n_boot, level=level, seed=seed, draws=draws_of_grid)
    out = HarnessEffects(effects, rankings, scores, pairs, cards,
                         classes=pd.DataFrame(class_of_grid, columns=CLASS_COLUMNS), items=items_of_grid,
                         chance=chance_of_grid, seconds_per_cell=seconds_of_grid)
    out.methods = harness_methods(out, level)
    return out


def _grid_effects(key: tuple, members: list[HarnessResult], later: list[HarnessResult], issues: IssueLog, *,
                  n_boot: int, level: float, seed: str, n_perm: int, n_power: int, class_out: list[dict[str, Any]],
                  items_out: dict | None = None, chance_out: dict | None = None, seconds_out: dict | None = None):
    """One (model, task, placement, n-shot)'s effects row, its sensitivity card (or None), its score
    rows and, for a budgeted grid, ``(instruction ids, drawn accuracies, their resolution)`` (else
    None); its per-class rows (``harness_classes``) are appended to ``class_out``, its per-item scores
    stored in ``items_out[key]`` (``HarnessEffects.items``)."""
    model, task, placement, shot = key
    where = f"{model}/{task} ({placement}, {shot}-shot)"
    stock_row = next((i for i, r in enumerate(members) if r.method == "null"), None)
    budgeted = any(r.budget for r in members)
    Y, targets = _item_matrix(members, issues, where, budgeted=budgeted, later=later)
    if Y is not None and items_out is not None:
        items_out[key] = (members[0].test_ids, [r.instruction_id for r in members], Y)
    values = [r.value for r in members]
    classes = None
    if Y is not None and members[0].output_type == "multiple_choice":  # the gold answers are classes
        classes = item_classes(targets, Y.shape[1])
    got = design = None
    if budgeted and Y is not None and len(members) >= 2 and Y.shape[1] >= 2:
        unknown = [members[0].test_ids[j] for j in range(Y.shape[1]) if targets.get(j) is None]
        if unknown and members[0].output_type == "multiple_choice":
            issues.warn("harness-budget", f"{where}: the gold answers of rows {unknown[:8]} are "
                        "in no samples file (no instruction scored them, or their lines have no target): its "
                        "estimates use one effect per instruction, not one per gold answer", members[0].file)
        got = fit_budgeted(_cells(Y, members, classes), n_draws=BUDGET_DRAWS, n_boot=n_boot, level=level,
                           rng=rng_for(seed, "harness-budget", *key))
        design = design_of([r.budget for r in [*members, *later] if r.budget])
        # observed scores where an instruction scored every item (the null one), estimates elsewhere
        values = [r.value if np.isfinite(Y[i]).all() else float(got.accuracy[i]) for i, r in enumerate(members)]
    elif budgeted:
        issues.warn("harness-budget", f"{where}: a budgeted grid without its per-item samples: each instruction's "
                    "score is on its own cells only (not comparable); no estimates", members[0].file)
    n_items = Y.shape[1] if Y is not None else None
    instruction_ok = resolve("instruction", design, n_items) if got is not None else None
    grid_scores = score_rows(members, values, got.drawn if got is not None else None, level,
                             scored_every_item=np.isfinite(Y).all(axis=1).tolist() if Y is not None else (),
                             resolved=instruction_ok)
    others = [v for r, v in zip(members, values) if r.method != "null"]
    stock = members[stock_row] if stock_row is not None else None
    row = {"model": model, "task": task, "placement": placement, "num_fewshot": shot, "metric": members[0].metric,
           "n_instructions": len(members), "n_items": n_items,
           "stock": stock.value if stock else math.nan,
           "min": min(others) if others else math.nan, "median": float(np.median(others)) if others else math.nan,
           "max": max(others) if others else math.nan,
           "stock_percentile": percentile_of(others, stock.value) if stock and others else math.nan,
           "instruction_sd": math.nan, "instruction_sd_low": math.nan, "instruction_sd_high": math.nan,
           "item_noise_sd": math.nan, "permutation_p": math.nan, "class_shift_p": math.nan, "detectable_sd": math.nan,
           "chance": math.nan, "chance_p": math.nan, "chance_state": "",
           "cells_share": float(np.isfinite(Y).mean()) if got is not None else (math.nan if budgeted else 1.0),
           "item_classes": (1 if classes is None else int(classes.max()) + 1) if got is not None else math.nan,
           "budget_design": design[0] if design else "", "budget": design[2] if design else math.nan, "not_resolved": ""}
    if Y is not None:
        row.update(_stock_facts(key, members, Y, targets, stock_row, chance_out, seconds_out))
    if Y is None or len(members) < 2 or Y.shape[1] < 2:
        return row, None, grid_scores, None
    setting = "zero_shot" if shot == 0 else "few_shot"
    if classes is not None:
        labels = sorted({t for t in targets.values() if t is not None})
        split = next((r.split_classes for r in members if r.split_classes), None)
        base = {"model": model, "task": task, "placement": placement, "num_fewshot": shot}
        methods = {r.instruction_id: r.method for r in members}
        class_out += [{**base, "method": methods[r["instruction"]], **r} for r in class_rows(
            [r.instruction_id for r in members], Y, classes, labels, split, got.by_class if got is not None else None,
            level, resolved=instruction_ok)]
    if got is not None:
        stats, reasons = effect_statistics(got.drawn, stock_row, level, design, n_items)
        row.update(stats)
        card = build_card(model, task, setting, [(r.method, r.instruction_id) for r in members], None, None,
                          accuracies=np.asarray(values), n_boot=0, level=level, seed=seed, metric=members[0].metric,
                          estimated=True, why_no_items="a budgeted grid: needs every (instruction, item) cell")
        card.measures.update(card_measures(got.drawn, level, design, n_items))
        sd_ok = resolve("instruction_sd", design, n_items)
        sd = got.sd if sd_ok.resolved else Measure(None, why=sd_ok.why)
        if not sd_ok.resolved:
            reasons.append(f"instruction_sd: {sd_ok.why}")
        if not instruction_ok.resolved:
            reasons.append(f"instruction scores: {instruction_ok.why}")
        card.measures["instruction_sd"] = sd
        card.measures["item_noise_sd"] = Measure(got.noise)
        card.placement, card.n_items = placement, int(n_items)
        row.update(item_noise_sd=got.noise, not_resolved=merged_reasons(reasons))
        fit = got.fit
    else:
        card = build_card(model, task, setting, [(r.method, r.instruction_id) for r in members], Y, None,
                          n_boot=n_boot, level=level, seed=seed, metric=members[0].metric)
        card.placement = placement
        sd = card.measures["instruction_sd"]
        row["item_noise_sd"] = card.measures["item_noise_sd"].value
        fit = None
    if sd.value is not None:
        row.update(instruction_sd=sd.value, instruction_sd_low=sd.ci_low if sd.ci_low is not None else math.nan,
                   instruction_sd_high=sd.ci_high if sd.ci_high is not None else math.nan)
    if design is not None and ADAPTIVE in design[0]:  # its cells were chosen from outcomes: no valid test (instruction_test)
        row["not_resolved"] = merged_reasons([*filter(None, row["not_resolved"].split("; ")), f"permutation_p: {ADAPTIVE_NO_TEST}"])
        return row, card, grid_scores, ((ids_of(members), got.drawn, instruction_ok) if got is not None else None)
    # the word's test is on the score (one residual sum per instruction); the per-gold-answer test asks
    # whether answers move between labels, which can happen with the score unmoved (instruction_test)
    row["permutation_p"], row["class_shift_p"], row["detectable_sd"] = instruction_tests(
        Y, classes, fit, n_perm=n_perm, n_power=n_power, seed=seed, key=key, power_rng=rng_for(seed, "harness-power", *key))
    return row, card, grid_scores, ((ids_of(members), got.drawn, instruction_ok) if got is not None else None)


def _stock_facts(key: tuple, members: list[HarnessResult], Y: np.ndarray, targets: dict[int, str | None],
                 stock_row: int | None, chance_out: dict | None, seconds_out: dict | None) -> dict[str, Any]:
    """What the verdict asks of a grid beside its tests: its stock score's chance test (``chance_out[key]``,
    and the effects row's columns it returns) and its wall seconds per cell (``seconds_out[key]``, where
    every variant's results file records its time)."""
    if seconds_out is not None and all(math.isfinite(r.seconds) for r in members) and Y.shape[1]:
        seconds_out[key] = float(np.mean([r.seconds for r in members])) / Y.shape[1]
    if stock_row is None or not np.isfinite(Y[stock_row]).all():
        return {}
    found = stock_chance(members[stock_row], Y[stock_row], targets, members[0].output_type)
    if chance_out is not None:
        chance_out[key] = found
    return {"chance": found.rate, "chance_p": found.p_value, "chance_state": found.state}


def ids_of(members: Sequence[HarnessResult]) -> list[str]:
    return [r.instruction_id for r in members]


def instruction_tests(Y: np.ndarray, classes: np.ndarray | None, fit: Any, *, n_perm: int, n_power: int, seed: str,
                      key: Sequence[object], power_rng: np.random.Generator) -> tuple[float, float, float]:
    """A grid's tests (``instruction_test``): ``(p`` of "no instruction moves the score", ``p`` of the same
    per gold answer (NaN without ``classes``), the SD the score test detects with 80% power where it finds
    nothing (NaN where it rejects or ``n_power`` is 0)``)``; each test's permutations seeded by ``seed``
    and ``key`` (the per-gold-answer test's by ``key + ("classes",)``)."""
    p = permutation_test(Y, None, n_perm=n_perm, seed=seed, key=key).p_value
    class_p = (permutation_test(Y, classes, n_perm=n_perm, seed=seed, key=(*key, "classes")).p_value
               if classes is not None else math.nan)
    detect = _detectable(Y, None, fit, n_power, power_rng) if p > NO_EFFECT_ALPHA and n_power > 0 else math.nan
    return p, class_p, detect


def _detectable(Y: np.ndarray, classes: np.ndarray | None, fit: Any, n_power: int, rng: np.random.Generator) -> float:
    """The instruction-effect SD (points) the test detects with 80% power on ``Y``'s cells
    (``instruction_test.detectable_sd``; the item distribution from the crossed model's ``fit``,
    fitted here for a full grid); NaN where no simulated effect up to the largest is."""
    if fit is None:
        fit = fit_crossed(_cells(Y, [], classes))
    level_logit = float(np.mean(fit.logits() @ fit.class_shares))
    power = detectable_sd(np.isfinite(Y), ITEM_GRID, fit.item_posterior, level_logit, classes=classes,
                          alpha=NO_EFFECT_ALPHA, n_sim=n_power, rng=rng)
    return power.detectable_sd if power.detectable_sd is not None else math.nan


def _cells(Y: np.ndarray, members: list[HarnessResult], classes: np.ndarray | None = None) -> Cells:
    """The observed (non-NaN) cells of ``Y``, instructions grouped by method (one group without
    ``members``), items by ``classes``."""
    rows, cols = np.nonzero(np.isfinite(Y))
    methods = sorted({r.method for r in members})
    groups = np.asarray([methods.index(r.method) for r in members], dtype=int) if members else None
    return Cells(rows=rows, cols=cols, y=Y[rows, cols], n_rows=Y.shape[0], n_cols=Y.shape[1],
                 groups=groups, classes=classes)


def _member_scores(r: HarnessResult, issues: IssueLog, where: str,
                   consequence: str) -> tuple[np.ndarray, np.ndarray, list[str | None]] | None:
    """``(doc ids, scores, gold targets)`` of one variant's samples log under its metric and filter;
    None (with a warning ending in ``consequence`` when it has none, an error when it cannot be read)."""
    if not r.samples_path:
        issues.warn("no-samples", f"{where}: {r.task}__{r.instruction_id} has no samples file; {consequence}", r.file)
        return None
    name, _, filt = r.metric.partition(",")
    try:
        return read_sample_targets(r.samples_path, name, filter_name=filt or "none")
    except Exception as err:  # AggregationError names the file and line
        issues.error("bad-samples", f"{where}: {err}; {consequence}", r.file)  # input dropped (exit 3)
        return None


def _budget_round(r: HarnessResult) -> int:
    """The adaptive-budget round of a variant (0: the first slice, or no adaptive budget)."""
    value = (r.budget or {}).get("round")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _item_matrix(members: list[HarnessResult], issues: IssueLog, where: str, *, budgeted: bool = False,
                 later: Sequence[HarnessResult] = ()) -> tuple[np.ndarray | None, dict[int, str | None]]:
    """``(instructions x items scores, {item: gold target})``; under a budget the items are the
    recorded ``test_ids`` (positions in it), a cell an instruction did not evaluate is NaN, and
    ``later`` rounds fill their instruction's row. Scores None where they cannot be read."""
    if budgeted:
        return _budget_matrix(members, issues, where, later)
    rows, ref = [], None
    targets: dict[int, str | None] = {}
    for r in members:
        scored = _member_scores(r, issues, where, "no item-level effects")
        if scored is None:
            return None, {}
        doc_ids, values, gold = scored
        if ref is None:
            ref = doc_ids
        elif not np.array_equal(ref, doc_ids):
            issues.warn("samples-docs", f"{where}: instructions were scored on different items; no item-level effects", r.file)
            return None, {}
        rows.append(values)
        merge_targets(targets, range(len(doc_ids)), gold)
    return np.vstack(rows), targets


def _budget_matrix(members: list[HarnessResult], issues: IssueLog, where: str,
                   later: Sequence[HarnessResult] = ()) -> tuple[np.ndarray | None, dict[int, str | None]]:
    ids = members[0].test_ids
    if not ids or any(r.test_ids != ids for r in [*members, *later]):
        issues.warn("samples-docs", f"{where}: budgeted instructions were planned on different items; no estimates",
                    members[0].file)
        return None, {}
    position = {int(doc): k for k, doc in enumerate(ids)}
    Y = np.full((len(members), len(ids)), np.nan)
    targets: dict[int, str | None] = {}
    row_of = {(r.method, r.instruction_id): i for i, r in enumerate(members)}
    orphans = [r for r in later if (r.method, r.instruction_id) not in row_of]
    if orphans:
        issues.warn("harness-budget", f"{where}: {orphans[0].task}__{orphans[0].instruction_id} has a later adaptive "
                    "round but no first slice; no estimates", orphans[0].file)
        return None, {}
    for r in [*members, *later]:
        i = row_of[(r.method, r.instruction_id)]
        scored = _member_scores(r, issues, where, "no estimates")
        if scored is None:
            return None, {}
        doc_ids, values, gold = scored
        unknown = [int(d) for d in doc_ids if int(d) not in position]
        if unknown:
            issues.warn("samples-docs", f"{where}: {r.task}__{r.instruction_id} scored rows outside its test_ids "
                        f"({unknown[:3]}); no estimates", r.samples_path)
            return None, {}
        clash = merge_targets(targets, [position[int(d)] for d in doc_ids], gold)
        if clash:
            item, target, recorded_target = clash
            issues.warn("samples-docs", f"{where}: row {ids[item]} has gold answer {target!r} in "
                        f"{r.task}__{r.instruction_id} but {recorded_target!r} in another instruction's "
                        "samples: samples of different data; no estimates", r.samples_path)
            return None, {}
        Y[i, [position[int(d)] for d in doc_ids]] = values
    return Y, targets


PAIR_COLUMNS = ["task", "placement", "num_fewshot", "higher", "lower", "stock_gap", "n_instructions", "flip_probability",
                "ci_low", "ci_high", "not_resolved"]


def _flip_interval(flips: np.ndarray, *, n_boot: int, level: float, rng: np.random.Generator) -> tuple[float, float]:
    """Percentile interval of the flip share over instructions resampled with replacement."""
    if n_boot <= 0 or not len(flips):
        return math.nan, math.nan
    draws = rng.integers(0, len(flips), size=(n_boot, len(flips)))
    reps = flips[draws].mean(axis=1)
    low, high = np.quantile(reps, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(low), float(high)


def _ranking_text(models: list[str], values: list[float], tol: float = 1e-9) -> str:
    """``a > b = c``: models in score order, ties joined by ``=``.

        >>> _ranking_text(["a", "b", "c"], [0.7, 0.5, 0.5])
        'a > b = c'
    """
    text = models[0] if models else ""
    for prev, cur, model in zip(values, values[1:], models[1:]):
        text += (" = " if abs(prev - cur) <= tol else " > ") + model
    return text


def _rankings(scores: pd.DataFrame, *, n_boot: int, level: float, seed: str,
              draws: dict[tuple, tuple[list[str], np.ndarray, Resolution]] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows: list[dict] = []
    pair_rows: list[dict] = []
    if scores.empty:
        return pd.DataFrame(columns=RANK_COLUMNS), pd.DataFrame(columns=PAIR_COLUMNS)
    draws = draws or {}
    for (task, placement, shot), part in scores.groupby(["task", "placement", "num_fewshot"], sort=True):
        if any((model, task, placement, shot) in draws for model in part["model"].unique()):
            got = _budgeted_rankings(part, draws, n_boot=n_boot, level=level, seed=seed)
            if got is not None:
                rows.append(got[0])
                pair_rows += got[1]
            continue
        wide = part.pivot_table(index="instruction", columns="model", values="score", aggfunc="first")
        if wide.shape[1] < 2 or "null" not in wide.index:
            continue
        wide = wide.dropna(axis=0, how="any")
        models = list(wide.columns)
        stock = wide.loc["null"].to_numpy(dtype=float)
        instr = wide.drop(index="null")
        if instr.empty:
            continue
        order = sorted(range(len(models)), key=lambda i: -stock[i])
        ranks = {m: [] for m in models}
        for _, values in instr.iterrows():
            v = values.to_numpy(dtype=float)
            for i, m in enumerate(models):
                ranks[m].append(1 + int(np.sum(v > v[i] + 1e-9)))
        taus = [kendall_tau_b(stock, values.to_numpy(dtype=float)) for _, values in instr.iterrows()]
        taus = [t for t in taus if not math.isnan(t)]
        # per stock-ordered pair: the share of instructions that order it the other way
        flips = {}
        matrix = instr.to_numpy(dtype=float)
        for a in range(len(models)):
            for b in range(a + 1, len(models)):
                ds = stock[a] - stock[b]
                if abs(ds) <= 1e-9:
                    continue
                flips[(a, b)] = np.sign(matrix[:, a] - matrix[:, b]) == -np.sign(ds)
        worst = max(flips, key=lambda p: flips[p].mean()) if flips else None
        intervals = {}
        for pair in sorted(flips):
            intervals[pair] = _flip_interval(flips[pair].astype(float), n_boot=n_boot, level=level,
                                             rng=rng_for(seed, "harness-flip", task, placement, shot, models[pair[0]], models[pair[1]]))
            hi_model, lo_model = (pair[0], pair[1]) if stock[pair[0]] > stock[pair[1]] else (pair[1], pair[0])
            pair_rows.append({"task": task, "placement": placement, "num_fewshot": shot, "higher": models[hi_model],
                              "lower": models[lo_model], "stock_gap": abs(float(stock[pair[0]] - stock[pair[1]])),
                              "n_instructions": len(matrix), "flip_probability": float(flips[pair].mean()),
                              "ci_low": intervals[pair][0], "ci_high": intervals[pair][1], "not_resolved": ""})
        low, high = intervals[worst] if worst is not None else (math.nan, math.nan)
        rows.append({
            "task": task, "placement": placement, "num_fewshot": shot, "metric": "",
            "n_models": len(models), "n_instructions": len(instr) + 1,
            "stock_ranking": _ranking_text([models[i] for i in order], [stock[i] for i in order]),
            "rank_ranges": "; ".join(f"{m}: {min(ranks[m])}-{max(ranks[m])}" for m in (models[i] for i in order)),
            "tau_median": float(np.median(taus)) if taus else math.nan, "tau_min": min(taus) if taus else math.nan,
            "flip_probability_max": float(flips[worst].mean()) if worst is not None else math.nan,
            "flip_probability_max_low": low, "flip_probability_max_high": high,
            "most_flipped_pair": f"{models[worst[0]]} vs {models[worst[1]]}" if worst is not None else "", "not_resolved": "",
        })
    return pd.DataFrame(rows, columns=RANK_COLUMNS), pd.DataFrame(pair_rows, columns=PAIR_COLUMNS)


def _budgeted_rankings(part: pd.DataFrame, draws: dict, *, n_boot: int, level: float,
                       seed: str) -> tuple[dict, list[dict]] | None:
    """The rank-stability row and pair flips of one (task, placement, n-shot) with a budgeted grid,
    from the draws: each model's accuracies per draw (an exact grid's in every draw), a pair's flip
    probability the draws' median share of instructions that order it against the stock scores, its
    interval from replicates that take draw ``b mod D`` and resample the instructions; Kendall's tau
    and the rank ranges the draws' medians. Where a budgeted grid's instruction scores are not
    resolved (``budget_validity``), no number: ``not_resolved`` says why."""
    task, placement, shot = part["task"].iloc[0], part["placement"].iloc[0], int(part["num_fewshot"].iloc[0])
    models = sorted(part["model"].unique())
    ids = sorted(set.intersection(*(set(part.loc[part["model"] == m, "instruction"]) for m in models)))
    if len(models) < 2 or "null" not in ids or len(ids) < 2:
        return None
    ids = ["null"] + [i for i in ids if i != "null"]
    n_draws = max(len(got[1]) for (m, t, p, s), got in draws.items() if (t, p, s) == (task, placement, shot))
    stacks, why = [], ""
    for model in models:
        got = draws.get((model, task, placement, shot))
        if got is None:
            exact = part[part["model"] == model].set_index("instruction")["score"]
            stacks.append(np.broadcast_to(exact.loc[ids].to_numpy(dtype=float), (n_draws, len(ids))))
        else:
            column = {iid: k for k, iid in enumerate(got[0])}
            stacks.append(got[1][:, [column[i] for i in ids]])
            if not got[2].resolved:
                why = why or f"{model}'s instruction scores are {got[2].why}"
    stock = np.array([stack[0, 0] for stack in stacks])
    order = sorted(range(len(models)), key=lambda i: -stock[i])
    base = {"task": task, "placement": placement, "num_fewshot": shot}
    row = {**base, "metric": "", "n_models": len(models), "n_instructions": len(ids),
           "stock_ranking": _ranking_text([models[i] for i in order], [stock[i] for i in order]),
           "rank_ranges": "", "tau_median": math.nan, "tau_min": math.nan, "flip_probability_max": math.nan,
           "flip_probability_max_low": math.nan, "flip_probability_max_high": math.nan, "most_flipped_pair": "",
           "not_resolved": why}
    if why:
        return row, []
    pairs, best = [], None
    for a in range(len(models)):
        for b in range(a + 1, len(models)):
            if abs(stock[a] - stock[b]) <= 1e-9:
                continue
            gap = stacks[a][:, :1] - stacks[b][:, :1]
            flips = np.sign(stacks[a][:, 1:] - stacks[b][:, 1:]) == -np.sign(gap)  # draws x instructions
            share = float(np.median(flips.mean(axis=1)))
            low, high = _joint_interval(flips, n_boot=n_boot, level=level,
                                        rng=rng_for(seed, "harness-flip", task, placement, shot, models[a], models[b]))
            hi_model, lo_model = (a, b) if stock[a] > stock[b] else (b, a)
            pairs.append({**base, "higher": models[hi_model], "lower": models[lo_model],
                          "stock_gap": abs(float(stock[a] - stock[b])), "n_instructions": len(ids) - 1,
                          "flip_probability": share, "ci_low": low, "ci_high": high, "not_resolved": ""})
            if best is None or share > best[0]:
                best = (share, low, high, f"{models[a]} vs {models[b]}")
    matrix = np.stack(stacks, axis=2)  # draws x instructions x models
    taus = np.array([[kendall_tau_b(stock, matrix[d, k]) for k in range(1, len(ids))] for d in range(n_draws)])
    ranks = 1 + (matrix[:, 1:, :, None] < matrix[:, 1:, None, :] - 1e-9).sum(axis=3)  # draws x instructions x models
    row["rank_ranges"] = "; ".join(f"{models[i]}: {np.median(ranks[:, :, i].min(axis=1)):g}-{np.median(ranks[:, :, i].max(axis=1)):g}"
                                   for i in order)
    row["tau_median"] = float(np.median(np.nanmedian(taus, axis=1)))
    row["tau_min"] = float(np.median(np.nanmin(taus, axis=1)))
    if best is not None:
        row.update(flip_probability_max=best[0], flip_probability_max_low=best[1], flip_probability_max_high=best[2],
                   most_flipped_pair=best[3])
    return row, pairs


def _joint_interval(flips: np.ndarray, *, n_boot: int, level: float, rng: np.random.Generator) -> tuple[float, float]:
    """Percentile interval of the flip share over replicates b that take draw ``b mod D`` of ``flips``
    (draws x instructions) and resample its instructions with replacement."""
    if n_boot <= 0 or not flips.shape[1]:
        return math.nan, math.nan
    which = np.arange(n_boot) % flips.shape[0]
    picks = rng.integers(0, flips.shape[1], size=(n_boot, flips.shape[1]))
    reps = flips[which[:, None], picks].mean(axis=1)
    low, high = np.quantile(reps, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(low), float(high)


def stock_chance(stock: HarnessResult, y: np.ndarray, targets: dict[int, str | None], output_type: str) -> Chance:
    """The chance test of a grid's stock scores ``y`` (``chance``): a multiple-choice task's gold answers
    and the model's own (named from its samples' choices); a generation task has no chance rate (only
    the floor)."""
    if output_type != "multiple_choice":
        return chance_of(y, None)
    gold, said = stock_answers(stock, y, targets)
    return chance_of(y, gold, predicted=said)


def stock_answers(stock: HarnessResult, y: np.ndarray, targets: dict[int, str | None]
                  ) -> tuple[list[str | None], list[str | None] | None]:
    """``(gold answers, the model's answers)`` of a multiple-choice variant's rows, each named by its
    choice text where its samples give the choices (else the gold targets as read); the model's answers
    None where the samples cannot name them or naming them does not reproduce the scores ``y``."""
    gold: list[str | None] = [targets.get(j) for j in range(len(y))]
    said = None
    name, _, filt = stock.metric.partition(",")
    try:
        scores = read_choice_scores(stock.samples_path, filter_name=filt or "none") if stock.samples_path else None
    except Exception:  # already read once for the scores; a problem there was reported
        scores = None
    if scores is not None and len(scores.gold) == len(y) and all(
            t is None or t == str(int(g)) or (0 <= g < len(c) and t == str(c[g]).strip())
            for t, g, c in zip(gold, scores.gold, scores.continuations)):  # the same rows, in the same order
        named, said = choice_answers(scores, name)
        if all(g is not None for g in named):
            gold = named
        if said is not None and any((s == g) != (v >= 0.5) for s, g, v in zip(said, gold, y)):
            said = None  # the rule does not reproduce the metric's answers: say nothing of them
    return gold, said
