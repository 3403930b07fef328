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
- a **paired permutation test** of "no instruction matters": under that hypothesis an item's scores
  are exchangeable across instructions, so each replicate permutes every item's column of scores;
  the statistic is the between-instruction mean square, ``p = (1 + #{perm >= observed}) / (1 + P)``.

**Budgeted grids** (``--budget``: each instruction on its own cells, the null one on every item):
the instructions' scores are the item-response model's estimates on the whole grid
(``item_response.instruction_accuracy``; the null score stays the exact stock score), with one
instruction effect per gold answer on a multiple-choice task (the samples' ``target``, the classes
the budget balanced each instruction's items over; ``item_classes`` in ``data/harness_effects.csv``
counts them, 1 for a generation task), the
instruction-effect SD is the median over posterior predictive draws of the whole grid
(``item_response.predictive_grids``) of the same two-way estimator, and its interval comes from a
joint bootstrap: replicate b resamples the instructions and items of draw ``b mod D``, so it
holds both the unevaluated cells' uncertainty and the sampling of instructions and items. The
permutation test permutes each item's observed scores among the instructions that scored it.
Each instruction's score gets the percentile interval of the draws, and its difference to the
stock score (``vs_stock``) an interval and ``P(above stock)`` from the same draws
(``score_rows``; ``data/harness_scores.csv``).

Per (harness task, placement, n-shot) across models (at least 2 models sharing >= 1 instruction):
the stock ranking of the models, each model's rank range over instructions, the probability that a
stock-ordered pair flips under a randomly drawn instruction (the share of instructions that flip
it, with a bootstrap interval over instructions) and Kendall's tau-b between the stock ranking and
each instruction's (median and minimum).

Example:
    >>> import numpy as np
    >>> Y = np.array([[1, 1, 0, 1], [1, 1, 0, 1], [1, 1, 0, 1]], dtype=float)
    >>> permutation_p(Y, n_perm=99, seed="s")   # identical instructions: the statistic is 0, p = 1
    1.0
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from instructeval_tasks.estimation.item_response import Cells, fit_crossed, instruction_accuracy, item_classes, predictive_grids

from .bootstrap import rng_for
from .issues import IssueLog
from .json_input import BadJson, parse_json_bytes
from .leaderboard import kendall_tau_b, percentile_of
from .loading import expand_paths, find_samples, label_from_pretrained, parse_model_args, results_stamp, warn_truncated
from .samples import merge_targets, read_sample_targets
from .sensitivity_card import Measure, SensitivityCard, basic_interval, build_card
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


def _metric_key(result: dict, config: dict) -> str | None:
    metrics = [m.get("metric") for m in (config.get("metric_list") or []) if isinstance(m, dict)]
    keys = [k for k in result if "," in k and "_stderr" not in k]
    for metric in metrics:
        found = [k for k in keys if k.split(",")[0] == metric]
        if found:
            return found[0]
    return keys[0] if keys else None


def load_harness_results(paths: Iterable[str], issues: IssueLog, *, samples: bool = True) -> list[HarnessResult]:
    """Every harness-task variant in ``paths`` (results files or folders); unreadable files are left to
    ``load_runs``'s issues."""
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
            key = _metric_key(result, config)
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
                output_type=config.get("output_type") if isinstance(config.get("output_type"), str) else None))
    return out


def permutation_p(Y: np.ndarray, *, n_perm: int, seed: str, key: Sequence[Any] = ()) -> float:
    """p-value of "no instruction matters" for ``Y`` (instructions x items), permuting within items.

    ``NaN`` marks a cell not evaluated (a budget): each item's observed scores are permuted among
    the instructions that scored it, and the statistic is ``sum_i n_i (mean_i - mean)^2`` over the
    observed cells (on a full grid proportional to the between-instruction mean square, so the
    same p).
    """
    if np.isnan(Y).any():
        return _masked_permutation_p(Y, n_perm=n_perm, seed=seed, key=key)
    n_inst, n_items = Y.shape

    def stat(values: np.ndarray) -> np.ndarray:  # between-instruction mean square, per leading axis
        means = values.mean(axis=-1)
        return n_items * ((means - means.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1) / (n_inst - 1)

    observed = float(stat(Y))
    rng = rng_for(seed, "harness-permutation", *key, n_inst, n_items)
    exceed = 0
    batch = max(1, 2_000_000 // max(1, n_inst * n_items))
    for start in range(0, n_perm, batch):
        size = min(batch, n_perm - start)
        order = np.argsort(rng.random((size, n_inst, n_items)), axis=1)
        permuted = np.take_along_axis(np.broadcast_to(Y, (size, n_inst, n_items)), order, axis=1)
        exceed += int(np.sum(stat(permuted) >= observed - 1e-12))
    return (1 + exceed) / (1 + n_perm)


def _masked_permutation_p(Y: np.ndarray, *, n_perm: int, seed: str, key: Sequence[Any]) -> float:
    observed_mask = ~np.isnan(Y)
    n_inst, n_items = Y.shape
    counts = observed_mask.sum(axis=-1)
    total = observed_mask.sum()

    def stat(values: np.ndarray) -> np.ndarray:  # values: ... x I x J with NaN where not evaluated
        sums = np.nansum(values, axis=-1)
        means = sums / np.maximum(counts, 1)
        grand = sums.sum(axis=-1, keepdims=True) / total
        return (counts * (means - grand) ** 2).sum(axis=-1)

    observed = float(stat(Y))
    # each column: its observed rows in ascending order receive its observed values in a random order
    target = np.argsort(~observed_mask, axis=0, kind="stable")
    rng = rng_for(seed, "harness-permutation", *key, n_inst, n_items, "masked")
    exceed = 0
    batch = max(1, 2_000_000 // max(1, n_inst * n_items))
    for start in range(0, n_perm, batch):
        size = min(batch, n_perm - start)
        keys = np.where(observed_mask[None], rng.random((size, n_inst, n_items)), np.inf)
        source = np.argsort(keys, axis=1)
        values = np.take_along_axis(np.broadcast_to(Y, (size, n_inst, n_items)), source, axis=1)
        permuted = np.empty((size, n_inst, n_items))
        np.put_along_axis(permuted, np.broadcast_to(target, (size, n_inst, n_items)), values, axis=1)
        exceed += int(np.sum(stat(permuted) >= observed - 1e-12))
    return (1 + exceed) / (1 + n_perm)


def budgeted_instruction_sd(cells: Cells, *, n_draws: int, n_boot: int, level: float,
                            rng: np.random.Generator) -> tuple[np.ndarray, Measure, float, np.ndarray]:
    """``(estimated accuracies, instruction-effect SD in points with its interval, item-noise SD in points,
    the accuracies of every predictive draw (draws x instructions))`` of a budgeted grid (module doc)."""
    fit = fit_crossed(cells)
    accuracy = instruction_accuracy(fit, cells)
    draws = np.concatenate(list(predictive_grids(fit, cells, n_draws, rng)), axis=0).astype(np.float64)
    drawn_accuracy = draws.mean(axis=2)
    between, resid = mean_square_components(draws)
    estimate = 100.0 * float(np.median(np.sqrt(np.maximum(between, 0.0))))
    noise = 100.0 * float(np.median(np.sqrt(resid / cells.n_cols)))
    if n_boot <= 0 or cells.n_rows < 2:
        return accuracy, Measure(estimate), noise, drawn_accuracy
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
    return accuracy, Measure(estimate, ci_low, ci_high), noise, drawn_accuracy


def score_rows(members: Sequence[HarnessResult], values: Sequence[float], drawn: np.ndarray | None,
               level: float, *, scored_every_item: Sequence[bool] = ()) -> list[dict[str, Any]]:
    """Each variant's score and its difference to the stock (null) score of the same grid.

    With ``drawn`` (a budgeted grid's predictive draws, draws x variants) each gets the percentile
    interval of its score, of ``vs_stock`` (its score minus the stock score, draw by draw) and
    ``p_above_stock`` (the share of draws in which it beats the stock score); ``estimated`` is true
    for those not ``scored_every_item``. A full grid's scores are exact on their items and get none.

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
               "vs_stock_low": nan, "vs_stock_high": nan, "p_above_stock": nan}
        if drawn is not None:
            row["ci_low"], row["ci_high"] = (float(x) for x in np.quantile(drawn[:, i], [alpha, 1 - alpha]))
            if stock is not None and i != stock:
                diff = drawn[:, i] - drawn[:, stock]
                row["vs_stock_low"], row["vs_stock_high"] = (float(x) for x in np.quantile(diff, [alpha, 1 - alpha]))
                row["p_above_stock"] = float(np.mean(diff > 0))
        out.append(row)
    return out


# Posterior predictive draws of a budgeted grid for its instruction-effect SD.
BUDGET_DRAWS = 200


@dataclass
class HarnessEffects:
    """The section's numbers (scores as fractions; SDs in points)."""

    effects: pd.DataFrame
    rankings: pd.DataFrame
    scores: pd.DataFrame
    pairs: pd.DataFrame = field(default_factory=pd.DataFrame)  # every stock-ordered pair's flip probability
    cards: list[SensitivityCard] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        def records(frame: pd.DataFrame) -> list[dict]:
            return json.loads(frame.to_json(orient="records")) if not frame.empty else []

        return {"effects": records(self.effects), "rankings": records(self.rankings), "pairs": records(self.pairs),
                "notes": list(self.notes)}


EFFECT_COLUMNS = ["model", "task", "placement", "num_fewshot", "metric", "n_instructions", "n_items", "stock", "min", "median",
                  "max", "stock_percentile", "instruction_sd", "instruction_sd_low", "instruction_sd_high", "item_noise_sd",
                  "permutation_p", "cells_share", "item_classes"]
SCORE_COLUMNS = ["model", "task", "placement", "num_fewshot", "method", "instruction", "score", "estimated", "ci_low",
                 "ci_high", "vs_stock", "vs_stock_low", "vs_stock_high", "p_above_stock"]
RANK_COLUMNS = ["task", "placement", "num_fewshot", "metric", "n_models", "n_instructions", "stock_ranking", "rank_ranges",
                "tau_median", "tau_min", "flip_probability_max", "flip_probability_max_low", "flip_probability_max_high",
                "most_flipped_pair"]


def harness_effects(results: list[HarnessResult], issues: IssueLog, *, n_boot: int, level: float, seed: str,
                    n_perm: int = 1000) -> HarnessEffects | None:
    """The per-(model, task, placement) effects and the rank stability across models; None without results."""
    if not results:
        return None
    groups: dict[tuple, list[HarnessResult]] = {}
    for r in results:
        groups.setdefault((r.model, r.task, r.placement, r.num_fewshot), []).append(r)
    rows, cards, scores_of_grid = [], [], []
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
        stock = next((r for r in members if r.method == "null"), None)
        budgeted = any(r.budget for r in members)
        Y, targets = _item_matrix(members, issues, where, budgeted=budgeted, later=later)
        values = [r.value for r in members]
        estimated = drawn = None
        classes = None
        if budgeted and Y is not None and len(members) >= 2 and Y.shape[1] >= 2:
            if members[0].output_type == "multiple_choice":  # the gold answers are classes, as the budget dealt them
                classes = item_classes(targets, Y.shape[1])
                unknown = [members[0].test_ids[j] for j in range(Y.shape[1]) if targets.get(j) is None]
                if unknown:
                    issues.warn("harness-budget", f"{where}: the gold answers of rows {unknown[:8]} are "
                                "in no samples file (no instruction scored them, or their lines have no target): its "
                                "estimates use one effect per instruction, not one per gold answer", members[0].file)
            cells = _cells(Y, members, classes)
            accuracy, sd, noise, drawn = budgeted_instruction_sd(
                cells, n_draws=BUDGET_DRAWS, n_boot=n_boot, level=level, rng=rng_for(seed, "harness-budget", *key))
            # observed scores where an instruction scored every item (the null one), estimates elsewhere
            values = [r.value if np.isfinite(Y[i]).all() else float(accuracy[i]) for i, r in enumerate(members)]
            estimated = (sd, noise, float(np.isfinite(Y).mean()))
        elif budgeted:
            issues.warn("harness-budget", f"{where}: a budgeted grid without its per-item samples: each instruction's "
                        "score is on its own cells only (not comparable); no estimates", members[0].file)
        others = [v for r, v in zip(members, values) if r.method != "null"]
        scores_of_grid += score_rows(members, values, drawn, level,
                                     scored_every_item=np.isfinite(Y).all(axis=1).tolist() if Y is not None else ())
        row = {"model": model, "task": task, "placement": placement, "num_fewshot": shot, "metric": members[0].metric,
               "n_instructions": len(members), "n_items": Y.shape[1] if Y is not None else None,
               "stock": stock.value if stock else math.nan,
               "min": min(others) if others else math.nan, "median": float(np.median(others)) if others else math.nan,
               "max": max(others) if others else math.nan,
               "stock_percentile": percentile_of(others, stock.value) if stock and others else math.nan,
               "instruction_sd": math.nan, "instruction_sd_low": math.nan, "instruction_sd_high": math.nan,
               "item_noise_sd": math.nan, "permutation_p": math.nan,
               "cells_share": estimated[2] if estimated else (math.nan if budgeted else 1.0),
               "item_classes": (1 if classes is None else int(classes.max()) + 1) if estimated else math.nan}
        if estimated is not None:
            sd, noise, _ = estimated
            card = build_card(model, task, "zero_shot" if shot == 0 else "few_shot",
                              [(r.method, r.instruction_id) for r in members], None, None,
                              accuracies=np.asarray(values), n_boot=n_boot, level=level, seed=seed, metric=members[0].metric,
                              estimated=True, why_no_items="a budgeted grid: needs every (instruction, item) cell")
            card.measures["instruction_sd"] = sd  # estimated from the item-response model's draws of the grid
            card.measures["item_noise_sd"] = Measure(noise)
            card.placement, card.n_items = placement, int(Y.shape[1])
            cards.append(card)
            row.update(instruction_sd=sd.value, instruction_sd_low=sd.ci_low if sd.ci_low is not None else math.nan,
                       instruction_sd_high=sd.ci_high if sd.ci_high is not None else math.nan, item_noise_sd=noise,
                       permutation_p=permutation_p(Y, n_perm=n_perm, seed=seed, key=key))
        elif Y is not None and len(members) >= 2 and Y.shape[1] >= 2:
            setting = "zero_shot" if shot == 0 else "few_shot"
            card = build_card(model, task, setting, [(r.method, r.instruction_id) for r in members], Y, None,
                              n_boot=n_boot, level=level, seed=seed, metric=members[0].metric)
            card.placement = placement
            cards.append(card)
            sd = card.measures["instruction_sd"]
            row.update(instruction_sd=sd.value, instruction_sd_low=sd.ci_low if sd.ci_low is not None else math.nan,
                       instruction_sd_high=sd.ci_high if sd.ci_high is not None else math.nan,
                       item_noise_sd=card.measures["item_noise_sd"].value,
                       permutation_p=permutation_p(Y, n_perm=n_perm, seed=seed, key=key))
        rows.append(row)
    effects = pd.DataFrame(rows, columns=EFFECT_COLUMNS)
    scores = pd.DataFrame(scores_of_grid, columns=SCORE_COLUMNS)
    rankings, pairs = _rankings(scores, n_boot=n_boot, level=level, seed=seed)
    return HarnessEffects(effects, rankings, scores, pairs, cards)


def _cells(Y: np.ndarray, members: list[HarnessResult], classes: np.ndarray | None = None) -> Cells:
    """The observed (non-NaN) cells of ``Y``, instructions grouped by method, items by ``classes``."""
    rows, cols = np.nonzero(np.isfinite(Y))
    methods = sorted({r.method for r in members})
    return Cells(rows=rows, cols=cols, y=Y[rows, cols], n_rows=Y.shape[0], n_cols=Y.shape[1],
                 groups=np.asarray([methods.index(r.method) for r in members], dtype=int), classes=classes)


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
    for r in members:
        scored = _member_scores(r, issues, where, "no item-level effects")
        if scored is None:
            return None, {}
        doc_ids, values, _ = scored
        if ref is None:
            ref = doc_ids
        elif not np.array_equal(ref, doc_ids):
            issues.warn("samples-docs", f"{where}: instructions were scored on different items; no item-level effects", r.file)
            return None, {}
        rows.append(values)
    return np.vstack(rows), {}


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
                "ci_low", "ci_high"]


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


def _rankings(scores: pd.DataFrame, *, n_boot: int, level: float, seed: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows: list[dict] = []
    pair_rows: list[dict] = []
    if scores.empty:
        return pd.DataFrame(columns=RANK_COLUMNS), pd.DataFrame(columns=PAIR_COLUMNS)
    for (task, placement, shot), part in scores.groupby(["task", "placement", "num_fewshot"], sort=True):
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
                              "ci_low": intervals[pair][0], "ci_high": intervals[pair][1]})
        low, high = intervals[worst] if worst is not None else (math.nan, math.nan)
        rows.append({
            "task": task, "placement": placement, "num_fewshot": shot, "metric": "",
            "n_models": len(models), "n_instructions": len(instr) + 1,
            "stock_ranking": _ranking_text([models[i] for i in order], [stock[i] for i in order]),
            "rank_ranges": "; ".join(f"{m}: {min(ranks[m])}-{max(ranks[m])}" for m in (models[i] for i in order)),
            "tau_median": float(np.median(taus)) if taus else math.nan, "tau_min": min(taus) if taus else math.nan,
            "flip_probability_max": float(flips[worst].mean()) if worst is not None else math.nan,
            "flip_probability_max_low": low, "flip_probability_max_high": high,
            "most_flipped_pair": f"{models[worst[0]]} vs {models[worst[1]]}" if worst is not None else "",
        })
    return pd.DataFrame(rows, columns=RANK_COLUMNS), pd.DataFrame(pair_rows, columns=PAIR_COLUMNS)
