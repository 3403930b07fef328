"""Leaderboard comparison: where a stock harness score falls among InstructEval instructions, and
whether the stock ranking of models survives a change of instruction.

Per (model, task), with ``s`` the stock score and ``a_1..a_n`` the InstructEval accuracies of the
model's instructions in one setting (few-shot: mean over demo seeds; all methods pooled):

- min, median (``numpy.median``: the mean of the two middle values when ``n`` is even), max;
- spread = ``100 (max - min)`` points;
- percentile of the stock score (mid-rank percentile, ``scipy.stats.percentileofscore(kind="mean")``):
  ``P = 100 (#{a_i < s} + 0.5 #{a_i = s}) / n``, ties within the tie tolerance (default 1e-9).
  E.g. ``a = (0.2, 0.4, 0.4, 0.8)``, ``s = 0.4``: ``P = 100 (1 + 0.5 * 2) / 4 = 50``.

Per task across ``m >= 2`` models, for each instruction ``(method, instruction)`` evaluated for every
one of them (setting by setting):

- Kendall's tau-b between the stock scores and the instruction's accuracies:
  ``tau_b = (C - D) / sqrt((n0 - t_x) (n0 - t_y))``, ``n0 = m (m - 1) / 2``, ``C``/``D`` the
  concordant/discordant pairs, ``t_x``/``t_y`` the pairs tied in the stock scores / in the
  accuracies (ties within the tie tolerance); this is ``scipy.stats.kendalltau``'s default
  (variant ``b``). Undefined (NaN, left out of min and median) when either side is all ties;
- tau min and median over instructions;
- flips: a model pair *flips* under an instruction when the stock scores order it strictly one way
  and the instruction's accuracies strictly the other way (a tie on either side is not a flip).
  Share = pairs that flip under at least one instruction / pairs strictly ordered by the stock scores;
- the instruction that changes the ranking most: lowest tau-b, then most flipped pairs, then the
  first in (method, instruction) order;
- bootstrap CIs (percentile, ``numpy.quantile``) of tau median and the flip share: items resampled
  with replacement, the same items for every model, instruction and the stock task, when every
  model has per-item logs on the same items (``--leaderboard-tasks`` runs); replicate ``b`` recomputes
  every score on its items. Seeded with ``rng_for(seed, "leaderboard", task, setting)``.

One model only: no ranking statistics (said once in the notes).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .bootstrap import resample_counts, rng_for
from .catalog import order_methods, order_tasks
from .issues import AggregationError, IssueLog
from .leaderboard_loading import StockResult
from .samples import read_sample_values

SETTINGS = ("few_shot", "zero_shot")
ONE_MODEL_NOTE = "one model only: no ranking statistics (Kendall's tau, flips) across models"


def kendall_tau_b(x: Sequence[float], y: Sequence[float], tol: float = 1e-9) -> float:
    """Kendall's tau-b of two equal-length sequences (NaN when either is all ties).

    Example (one tie in ``y``): C = 2, D = 0, t_y = 1, n0 = 3: 2 / sqrt(3 * 2) = 0.8165
        >>> round(kendall_tau_b([1, 2, 3], [1, 2, 2]), 4)
        0.8165
    """
    n = len(x)
    if n != len(y) or n < 2:
        return math.nan
    concordant = discordant = tied_x = tied_y = 0
    for i, j in combinations(range(n), 2):
        dx, dy = x[i] - x[j], y[i] - y[j]
        sx = 0 if abs(dx) <= tol else (1 if dx > 0 else -1)
        sy = 0 if abs(dy) <= tol else (1 if dy > 0 else -1)
        if sx == 0:
            tied_x += 1
        if sy == 0:
            tied_y += 1
        if sx and sy:
            concordant += sx == sy
            discordant += sx != sy
    n0 = n * (n - 1) // 2
    denominator = math.sqrt((n0 - tied_x) * (n0 - tied_y))
    return (concordant - discordant) / denominator if denominator else math.nan


def percentile_of(values: Sequence[float], score: float, tol: float = 1e-9) -> float:
    """Mid-rank percentile of ``score`` among ``values`` (see the module docstring).

        >>> percentile_of([0.2, 0.4, 0.4, 0.8], 0.4)
        50.0
    """
    if not len(values):
        return math.nan
    below = sum(1 for v in values if v < score - tol)
    equal = sum(1 for v in values if abs(v - score) <= tol)
    return 100.0 * (below + 0.5 * equal) / len(values)


def flipped_pairs(stock: Sequence[float], acc: Sequence[float], tol: float = 1e-9) -> set[tuple[int, int]]:
    """Index pairs ordered strictly one way by ``stock`` and strictly the other way by ``acc``.

        >>> sorted(flipped_pairs([0.3, 0.5, 0.7], [0.6, 0.5, 0.7]))
        [(0, 1)]
    """
    out = set()
    for i, j in combinations(range(len(stock)), 2):
        ds, da = stock[i] - stock[j], acc[i] - acc[j]
        if abs(ds) > tol and abs(da) > tol and (ds > 0) != (da > 0):
            out.add((i, j))
    return out


def ordered_pairs(stock: Sequence[float], tol: float = 1e-9) -> int:
    return sum(1 for i, j in combinations(range(len(stock)), 2) if abs(stock[i] - stock[j]) > tol)


def ranking_stats(stock: Sequence[float], per_instruction: Mapping[Any, Sequence[float]], tol: float = 1e-9) -> dict[str, Any]:
    """Tau-b min/median, flip share and the most ranking-changing instruction (module docstring).

        >>> r = ranking_stats([0.3, 0.5, 0.7], {"a": [0.1, 0.2, 0.3], "b": [0.6, 0.5, 0.7]})
        >>> r["tau_min"], r["tau_median"], round(r["flip_share"], 4), r["most_changing"]
        (0.3333333333333333, 0.6666666666666666, 0.3333, 'b')
    """
    taus = {key: kendall_tau_b(stock, acc, tol) for key, acc in per_instruction.items()}
    flips = {key: flipped_pairs(stock, acc, tol) for key, acc in per_instruction.items()}
    defined = [t for t in taus.values() if not math.isnan(t)]
    n_ordered = ordered_pairs(stock, tol)
    union = set().union(*flips.values()) if flips else set()
    ranked = sorted(per_instruction, key=lambda k: (math.inf if math.isnan(taus[k]) else taus[k], -len(flips[k])))
    most = ranked[0] if ranked else None
    return {
        "tau_min": min(defined) if defined else math.nan,
        "tau_median": float(np.median(defined)) if defined else math.nan,
        "flip_share": len(union) / n_ordered if n_ordered else math.nan,
        "n_flipped": len(union),
        "n_ordered_pairs": n_ordered,
        "most_changing": most,
        "most_changing_tau": taus[most] if most is not None else math.nan,
        "most_changing_flips": len(flips[most]) if most is not None else 0,
        "taus": taus,
    }


@dataclass
class LeaderboardComparison:
    """The section's numbers (accuracies as fractions; spread in points; percentiles 0-100)."""

    scores: pd.DataFrame
    methods: pd.DataFrame
    rankings: pd.DataFrame
    unmatched: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        def records(frame: pd.DataFrame) -> list[dict]:
            return json.loads(frame.to_json(orient="records")) if not frame.empty else []

        return {
            "scores": records(self.scores),
            "methods": records(self.methods),
            "rankings": records(self.rankings),
            "unmatched": records(self.unmatched),
            "notes": list(self.notes),
        }


SCORE_COLUMNS = ["model", "task", "stock_task", "stock_metric", "num_fewshot", "n_items", "same_items", "stock",
                 "ie_metric"] + [f"{s}_{k}" for s in SETTINGS for k in ("n", "min", "median", "max", "spread", "percentile")]
RANKING_COLUMNS = ["task", "setting", "n_models", "n_instructions", "tau_min", "tau_median", "tau_median_ci_low",
                   "tau_median_ci_high", "flip_share", "flip_share_ci_low", "flip_share_ci_high", "n_flipped",
                   "n_ordered_pairs", "most_changing", "most_changing_tau", "most_changing_flips", "same_items", "n_boot"]


def _same_items(stock: StockResult, variants: Sequence[Any]) -> str:
    """``yes`` / ``no`` / ``unknown``: is the stock score on the InstructEval runs' test items?"""
    ids = {json.dumps(v.metadata.get("test_ids")) for v in variants}
    sources = {v.metadata.get("data_source") for v in variants}
    sizes = {v.n_items for v in variants if v.n_items is not None}
    if stock.from_sweep:
        same = len(ids) == 1 and json.dumps(list(stock.test_ids) if stock.test_ids is not None else None) == next(iter(ids))
        same = same and (stock.data_source is None or sources == {stock.data_source})
        return "yes" if same else "no"
    if stock.n_items is not None and sizes and sizes != {stock.n_items}:
        return "no"
    return "unknown"


def _setting_values(frame: pd.DataFrame, setting: str) -> pd.Series:
    values = frame[setting] if setting in frame else pd.Series(dtype=float)
    return values[values.notna()].astype(float)


def compare_leaderboard(
    stock: Sequence[StockResult],
    instructions: pd.DataFrame,
    variants: Sequence[Any],
    issues: IssueLog,
    *,
    item_matrices: Mapping[tuple[str, str], Any] | None = None,
    tol: float = 1e-9,
    n_boot: int = 0,
    level: float = 0.95,
    seed: str = "instructeval",
) -> LeaderboardComparison:
    """Build the comparison from stock results and the aggregation's per-instruction table."""
    notes: list[str] = []
    by_model_task: dict[tuple[str, str], list[Any]] = {}
    for v in variants:
        by_model_task.setdefault((v.model, v.task), []).append(v)
    ie_pairs = set(zip(instructions["model"], instructions["task"])) if not instructions.empty else set()

    chosen: dict[tuple[str, str], StockResult] = {}
    unmatched = []
    for result in sorted(stock, key=lambda r: (r.model, r.task, r.file)):
        key = (result.model, result.task)
        if key not in ie_pairs:
            unmatched.append({"model": result.model, "task": result.task, "stock_task": result.stock_task, "metric": result.metric,
                              "value": result.value, "file": result.file})
            issues.error("leaderboard-unmatched", f"stock {result.stock_task} of model {result.model!r} has no InstructEval run of "
                         f"{result.task} for that model (use --model-alias NAME=LABEL when the names differ); listed, not compared",
                         result.file, result.stock_task)
            continue
        if key in chosen:
            issues.warn("leaderboard-duplicate", f"two stock results for {result.model}/{result.task}; using {chosen[key].file}",
                        result.file, result.stock_task)
            continue
        chosen[key] = result

    score_rows, method_rows = [], []
    task_rank = {t: i for i, t in enumerate(order_tasks({t for _, t in chosen}))}
    same_of: dict[tuple[str, str], str] = {}
    for (model, task), result in sorted(chosen.items(), key=lambda kv: (kv[0][0], task_rank[kv[0][1]])):
        rows = instructions[(instructions["model"] == model) & (instructions["task"] == task)]
        same = same_of[(model, task)] = _same_items(result, by_model_task.get((model, task), []))
        if same == "no":
            issues.warn("leaderboard-items", f"stock {result.stock_task} of {model} was measured on other test items than the "
                        f"InstructEval runs of {task} (other test ids, data source or item count)", result.file, result.stock_task)
        elif same != "yes":
            issues.warn("leaderboard-items", f"stock {result.stock_task} of {model} records no test ids, so whether it was "
                        f"measured on the same test items as the InstructEval runs of {task} cannot be checked",
                        result.file, result.stock_task)
        row = {"model": model, "task": task, "stock_task": result.stock_task, "stock_metric": result.metric,
               "num_fewshot": result.num_fewshot, "n_items": result.n_items, "same_items": same, "stock": result.value,
               "ie_metric": ",".join(sorted(set(rows["metric_name"].dropna()))) if "metric_name" in rows else ""}
        for setting in SETTINGS:
            values = _setting_values(rows, setting)
            row[f"{setting}_n"] = len(values)
            if len(values):
                row.update({f"{setting}_min": values.min(), f"{setting}_median": float(np.median(values)), f"{setting}_max": values.max(),
                            f"{setting}_spread": 100.0 * (values.max() - values.min()),
                            f"{setting}_percentile": percentile_of(list(values), result.value, tol)})
            for method in order_methods(set(rows["method"])):
                part = _setting_values(rows[rows["method"] == method], setting)
                if len(part):
                    method_rows.append({"model": model, "task": task, "setting": setting, "method": method, "n": len(part),
                                        "min": part.min(), "median": float(np.median(part)), "max": part.max(), "stock": result.value})
        score_rows.append(row)
    scores = pd.DataFrame(score_rows).reindex(columns=SCORE_COLUMNS)
    methods = pd.DataFrame(method_rows, columns=["model", "task", "setting", "method", "n", "min", "median", "max", "stock"])

    ranking_rows = []
    models = sorted({m for m, _ in chosen})
    if len(models) < 2:
        if chosen:
            notes.append(ONE_MODEL_NOTE)
    else:
        for task in order_tasks({t for _, t in chosen}):
            task_models = sorted(m for m, t in chosen if t == task)
            if len(task_models) < 2:
                notes.append(f"{task}: one model only ({task_models[0]}): no ranking statistics for this task")
                continue
            for setting in SETTINGS:
                row = _ranking_row(task, setting, task_models, chosen, same_of, instructions, item_matrices or {}, tol, n_boot, level, seed, notes)
                if row is not None:
                    ranking_rows.append(row)
    rankings = pd.DataFrame(ranking_rows, columns=RANKING_COLUMNS)
    return LeaderboardComparison(scores, methods, rankings, pd.DataFrame(unmatched, columns=["model", "task", "stock_task", "metric", "value", "file"]), notes)


def _ranking_row(task, setting, models, chosen, same_of, instructions, matrices, tol, n_boot, level, seed, notes) -> dict | None:
    part = instructions[(instructions["task"] == task) & instructions["model"].isin(models)]
    part = part[part[setting].notna()] if setting in part else part.iloc[0:0]
    per_key: dict[tuple[str, str], dict[str, float]] = {}
    for r in part.itertuples(index=False):
        per_key.setdefault((r.method, r.instruction), {})[r.model] = float(getattr(r, setting))
    common = {k: v for k, v in per_key.items() if set(v) == set(models)}
    if not common:
        if per_key:
            notes.append(f"{task} {setting}: no instruction was evaluated for every model; no ranking statistics")
        return None
    method_rank = {m: i for i, m in enumerate(order_methods({k[0] for k in common}))}
    keys = sorted(common, key=lambda k: (method_rank[k[0]], k[1]))
    stock_scores = [chosen[(m, task)].value for m in models]
    stats = ranking_stats(stock_scores, {k: [common[k][m] for m in models] for k in keys}, tol)
    same = all(same_of[(m, task)] == "yes" for m in models)
    row = {"task": task, "setting": setting, "n_models": len(models), "n_instructions": len(keys),
           "tau_min": stats["tau_min"], "tau_median": stats["tau_median"], "flip_share": stats["flip_share"],
           "n_flipped": stats["n_flipped"], "n_ordered_pairs": stats["n_ordered_pairs"],
           "most_changing": "/".join(stats["most_changing"]) if stats["most_changing"] else "",
           "most_changing_tau": stats["most_changing_tau"], "most_changing_flips": stats["most_changing_flips"],
           "same_items": "yes" if same else "no", "n_boot": 0,
           "tau_median_ci_low": math.nan, "tau_median_ci_high": math.nan, "flip_share_ci_low": math.nan, "flip_share_ci_high": math.nan}
    if n_boot > 0:
        ci = _bootstrap(task, setting, models, keys, chosen, matrices, tol, n_boot, level, seed)
        if ci is None:
            notes.append(f"{task} {setting}: no bootstrap CIs (they need per-item logs of every model and the stock task on the same items)")
        else:
            row.update(ci, n_boot=n_boot)
    return row


def _bootstrap(task, setting, models, keys, chosen, matrices, tol, n_boot, level, seed) -> dict | None:
    stock_items, acc_items, doc_ref = [], {k: [] for k in keys}, None
    for model in models:
        result, matrix = chosen[(model, task)], matrices.get((model, task))
        if matrix is None or not result.samples_path or not result.from_sweep:
            return None
        try:
            doc_ids, values = read_sample_values(result.samples_path, result.metric, filter_name=result.filter)
        except AggregationError:
            return None
        if result.doc_ids_are_rows:  # eval rows -> positions in the test sample (the InstructEval doc ids)
            position = {row: i for i, row in enumerate(result.test_ids or ())}
            if any(int(d) not in position for d in doc_ids):
                return None
            doc_ids = np.array([position[int(d)] for d in doc_ids])
            order = np.argsort(doc_ids, kind="stable")
            doc_ids, values = doc_ids[order], values[order]
        if abs(float(values.mean()) - result.value) > 1e-6 or not np.array_equal(doc_ids, matrix.doc_ids):
            return None
        if doc_ref is None:
            doc_ref = doc_ids
        elif not np.array_equal(doc_ref, doc_ids):
            return None
        rows_of = matrix.metric_rows.get(setting, {})
        if any(k not in rows_of for k in keys):
            return None
        stock_items.append(values)
        for k in keys:
            acc_items[k].append(matrix.values[rows_of[k]])  # (rows, items): mean over rows of row means
    n = len(doc_ref)
    counts = resample_counts(rng_for(seed, "leaderboard", task, setting), n, n_boot)
    stock_b = np.stack([counts @ v / n for v in stock_items], axis=1)  # (B, models)
    acc_b = {k: np.stack([(counts @ rows.T / n).mean(axis=1) for rows in acc_items[k]], axis=1) for k in keys}
    tau_med, flip = [], []
    for b in range(n_boot):
        stats = ranking_stats(list(stock_b[b]), {k: list(acc_b[k][b]) for k in keys}, tol)
        tau_med.append(stats["tau_median"])
        flip.append(stats["flip_share"])
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2

    def interval(values: Iterable[float]) -> tuple[float, float]:
        good = np.array([v for v in values if not math.isnan(v)])
        return (float(np.quantile(good, lo_q)), float(np.quantile(good, hi_q))) if good.size else (math.nan, math.nan)

    (tl, th), (fl, fh) = interval(tau_med), interval(flip)
    return {"tau_median_ci_low": tl, "tau_median_ci_high": th, "flip_share_ci_low": fl, "flip_share_ci_high": fh}
