"""Budgeted sweeps against full grids: how close the item-response estimates come, per budget and design.

The full grids: SmolLM2-135M-Instruct (float32), every bank entry of null, generic, PromptSource and
ad hoc, the paper profile's seeded 100-item test sample: the nine tasks zero-shot, and AG News,
HellaSwag and TweetEval Emotion few-shot (demo set 0, K=6). Their per-item correctness (the primary
metric: ``acc_per_token``, or ``quasi_exact_match`` for NQ-Open and TriviaQA) is kept in caches
(``benchmarks/data/budget_grid_*.json``; a grid of another model, e.g. Qwen2.5-Coder-0.5B-Instruct's
AG News, is keyed ``<task>:<setting>@<model>``) that ``--from-runs DIR`` builds from a finished
full sweep (``--rebuild`` reruns the first cache's sweep, about 2 CPU-hours).

For each budget (5, 10, 25% by default), design (uniform, balanced, adaptive) and seed, cells are
chosen as ``instructeval run --budget F --budget-design D`` chooses them
(``instructeval_tasks.sweep.budget``: ``assign_cells``; the adaptive first slice and
``next_round_cells``); the design ``extended`` is ``instructeval run --budget E --budget-extend F``
(E from ``--extend-from``, default 0.1: the balanced design's cells at E, then the extension's rounds
to F; budgets at or below E are skipped for it), with ``--budget-min-items 1`` unless ``--min-items`` says otherwise (the
budget alone sets each quota: the default minimum, 10 or 5 items, would turn 5% of 100 items into
10% or make the balanced design deal uniform quotas), the aggregation's
estimator is applied (``instructeval_aggregation.budgeted.estimate_grid``), and the estimates are
compared with the full grid's exact accuracies (the items' gold classes, the caches' ``labels``,
given to the fit as the aggregation reads them from the samples' ``target``: ``grid_classes``):

- MAE of per-instruction accuracy, of method means and of the 5/25/50/75/95% quantiles across
  instructions (accuracy points, i.e. x100); instructions and methods count only where estimated:
  the ``--full-methods`` (null) are evaluated on every item and exact (``score_estimates``);
- Spearman correlation between the estimated and the exact instruction ranking;
- best-instruction regret: the exact accuracy of the truly best instruction minus that of the one
  estimated best (points);
- interval coverage: share of exact values inside their 95% interval, for the estimated
  instructions and method means and for the quantiles;
- the share of cells evaluated;
- each estimated method's relative gain within the grid (percent of mu) and difference to the null
  method (points), as the aggregation reports them: MAE and interval coverage (``score_contrasts``;
  with ``--full-methods ''`` the null instruction is estimated too).

Where a grid has label scores, the crossed item-response model on the same cells is printed beside as
``item-resp``. The observed-subset mean (each instruction's accuracy on its own cells, no model) is printed beside
as the baseline (not for the adaptive design: there it is biased by construction), and
so is a reference that no run can compute, ``known-b`` (``known_items_estimate``): the same cells
with every item's effect known exactly from the full grid. Where it misses a target too, the
budget's unseen instruction x item interactions set the limit, not the model.
The second reference, ``simulated`` (``simulated_grid``), asks whether a target is within reach
of these cells at all: the same design and estimator on a grid whose outcomes are redrawn from the
model fitted to the whole real grid (its instructions' and methods' effects, each item's effect drawn
from its posterior), scored against that grid's own exact accuracies. There the model holds exactly,
so a target it misses is one that no better fit of this model can meet on these cells; where the
real grid misses and the simulated one does not, the model's misfit costs the difference.
The targets checked at the end, for the default design (``DEFAULT_DESIGN``) first, then the adaptive, the balanced and the uniform one: at 10%,
method-mean MAE <= 1.0 and quantile MAE <= 1.5 points on every grid, method means never worse than
the subset's on any grid, coverage 90-97% pooled over the grids (and, on its own line, each grid's
coverages outside 90-97%); the adaptive design at 5% at least as good as each design run at 10%,
with each grid's ``allocation_gain`` beside it (below 2, no design at half the cells can match).

The label scores (every cell's per-label log-likelihoods, the labels' token counts) are added to a
cache from a finished full sweep of its grids with ``--add-scores DIR`` (the run's answers must be
the cache's, cell by cell).

Every statistic a report gives for a budgeted grid is checked too (``statistic_checks``), for the
aggregation's estimator and for the crossed item-response model (the harness reports' estimator;
on a grid without label scores the two are one): each instruction's accuracy, the instructions'
min / median / max, the stock prompt's percentile, the sensitivity card's measures
(``draw_statistics.STATISTICS``) and the instruction-effect SD (from draws of the whole grid,
``item_response.predictive_grids``; the label scores' fit draws no grids, so it has none), each
computed draw by draw (estimate: the draws' median; 95% interval: their 2.5 and 97.5% quantiles)
against the same statistic of the full grid's exact accuracies: bias and interval coverage. Pooled
over the grids per estimator, design and budget (``statistic_table``), ``budget_validity.RULE``
says which are resolved (``is_resolved``); ``--write-validity aggregation/budget_validity.json``
writes that table as the reports read it, so that they abstain where a statistic is not resolved.

``--write-page docs/validation/budget.md`` also writes the tables and the verdicts as a page of the
documentation site (``validation_page``), stamped with the commit it measured and the command that
made it. ``--save-results FILE`` keeps every run's scores (after each budget and design);
``--from-results A B ...`` writes the page and the validity file from saved runs of other grids
under the same settings, measuring nothing (a grid added later is run alone and merged).

Usage:
    python benchmarks/budget_validation.py                       # every cache in benchmarks/data
    python benchmarks/budget_validation.py --write-page docs/validation/budget.md --write-validity aggregation/budget_validity.json
    python benchmarks/budget_validation.py --grids qwen:zs --save-results runs/qwen.json   # then --from-results all.json runs/qwen.json
    python benchmarks/budget_validation.py --seeds 10 --budgets 0.1 --grids agnews:zs,emotion:zs
    python benchmarks/budget_validation.py --from-runs runs/full --cache benchmarks/data/budget_grid_smollm2_more.json --build-only
    python benchmarks/budget_validation.py --add-scores runs/full --cache benchmarks/data/budget_grid_smollm2.json
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import re
import shlex
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / "data" / "budget_grid_smollm2.json"
CACHES = "budget_grid_*.json"
TASKS = ("agnews", "hellaswag")
METHODS = ("null", "generic", "promptsource", "adhoc")
METRIC = "acc_per_token"
GENERATION_METRIC = "quasi_exact_match"
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
SWEEP_ARGS = dict(tasks=list(TASKS), methods=list(METHODS), profile="paper",
                  overrides={"instructions_per_method": 1000, "settings": ["zero_shot", "few_shot"], "n_selections": 1})
# The full validation's settings (the command-line defaults); a smaller run's page says it is reduced
DEFAULTS = {"seeds": 10, "draws": 300, "budgets": (0.05, 0.1, 0.25), "designs": ("uniform", "balanced", "adaptive")}


# ------------------------------------------------------------------------------------ the cache


def cache_from_runs(folder: Path) -> dict:
    """The full grids' per-item correctness from a sweep folder (results + samples files)."""
    from instructeval_aggregation import load_runs
    from instructeval_aggregation.samples import read_sample_values

    runs = load_runs([folder])
    errors = [str(i) for i in runs.issues.items if i.level == "error"]
    if errors:
        raise SystemExit("the sweep folder has errors:\n" + "\n".join(errors))
    grids: dict[str, dict] = {}
    for v in sorted(runs.variants, key=lambda v: (v.task, v.setting, v.method, v.instruction)):
        if v.metadata.get("budget"):
            raise SystemExit(f"{v.file}: a budgeted sweep; the cache needs the full grid")
        key = f"{v.task}:{'zs' if v.setting == 'zero_shot' else f'fs-d{v.demo_seed}'}"
        generative = v.task_type == "gqa"
        metric = GENERATION_METRIC if generative else METRIC
        doc_ids, values = read_sample_values(v.samples_path, metric)
        grid = grids.setdefault(key, {"task": v.task, "setting": v.setting, "metric": metric, "labels": None, "rows": []})
        if doc_ids.tolist() != list(range(len(doc_ids))):
            raise SystemExit(f"{v.samples_path}: not a full grid (doc_ids {doc_ids[:5].tolist()}...)")
        if grid["labels"] is None:  # the budget sampler balances classes; answers of open QA are no classes
            grid["labels"] = ["-"] * len(doc_ids) if generative else _labels(v.samples_path)
        grid["rows"].append({"method": v.method, "instruction": v.instruction,
                             "correct": "".join("1" if x >= 0.5 else "0" for x in values)})
    plans = sorted(folder.rglob("sweep.json"))
    plan = json.loads(plans[0].read_text(encoding="utf-8")) if plans else {}
    # model files, dtype, and the data files of every task (sweep/identity.py), from the variants themselves
    identities = [v.metadata.get("run_fingerprint") for v in runs.variants if isinstance(v.metadata.get("run_fingerprint"), dict)]
    run_fp = None
    if identities:
        models = {json.dumps({k: x for k, x in fp.items() if k != "data"}, sort_keys=True) for fp in identities}
        if len(models) != 1:
            raise SystemExit(f"{folder}: variants of different models or settings: {sorted(models)}")
        run_fp = {**json.loads(models.pop()), "data": {k: x for fp in identities for k, x in (fp.get("data") or {}).items()}}
    return {
        "description": "per-item primary metric of every (instruction, item) cell; see benchmarks/budget_validation.py",
        "model": sorted(runs.models),
        "run_fingerprint": run_fp,
        "sweep": {"profile": (plan.get("profile") or {}).get("name"), "methods": plan.get("methods"),
                  "test_sample": (plan.get("profile") or {}).get("test_sample")},
        "grids": grids,
    }


def add_choice_scores(cache: dict, folder: Path, score_tokenizer: str | None = None) -> list[str]:
    """Add each grid's label scores (``choice_scores``: every cell's per-label log-likelihoods to 4
    decimals, one string per instruction, items in order and labels within an item; the labels' token
    counts) to ``cache`` from a finished full sweep of the same grids in ``folder``;
    the keys of the grids given them. Every cell's scores must give the cache's answer under its
    metric (the run's correctness is the cache's, cell by cell), else it stops. The token counts
    come from the results' ``choice_token_counts``, or, for results written without them, are
    counted with ``score_tokenizer`` as ``acc_per_token`` counts them."""
    from instructeval_aggregation import load_runs
    from instructeval_aggregation.samples import read_choice_scores

    runs = load_runs([folder])
    by_key: dict[str, dict[str, object]] = {}
    for v in runs.variants:
        if v.task_type == "cls" and not v.metadata.get("budget"):
            key = f"{v.task}:{'zs' if v.setting == 'zero_shot' else f'fs-d{v.demo_seed}'}"
            by_key.setdefault(key, {})[f"{v.method}/{v.instruction}"] = v
    added = []
    for key, variants in sorted(by_key.items()):
        grid = cache["grids"].get(key)
        if grid is None:
            continue
        names = [f"{row['method']}/{row['instruction']}" for row in grid["rows"]]
        if sorted(names) != sorted(variants):
            raise SystemExit(f"{folder}: grid {key} has other instructions than the cache's")
        counts = {json.dumps(v.metadata.get("choice_token_counts"), sort_keys=True) for v in variants.values()}
        token_counts = json.loads(counts.pop()) if len(counts) == 1 else None
        first = read_choice_scores(variants[names[0]].samples_path)
        labels = first.continuations[0]
        grid["metric"] = grid.get("metric") or cache.get("metric")
        if token_counts is None and grid["metric"] == METRIC:
            if not score_tokenizer:
                raise SystemExit(f"{folder}: grid {key}'s results record no choice_token_counts; give --score-tokenizer")
            from transformers import AutoTokenizer

            from instructeval_tasks.scoring import continuation_token_count

            tokenizer = AutoTokenizer.from_pretrained(score_tokenizer)
            context = json.loads(Path(variants[names[0]].samples_path).read_text(encoding="utf-8").splitlines()[0])
            context = next(iter(context["arguments"].values()))["arg_0"]
            token_counts = {label: continuation_token_count(tokenizer, context, label) for label in labels}
        lls = []
        for name, row in zip(names, grid["rows"]):
            scores = read_choice_scores(variants[name].samples_path)
            if scores.doc_ids.tolist() != list(range(len(row["correct"]))) or any(c != labels for c in scores.continuations):
                raise SystemExit(f"{variants[name].samples_path}: not the grid's items and labels")
            lls.append(" ".join(f"{x:.4f}" for x in np.stack(scores.loglikelihoods).ravel()))
        grid["choice_scores"] = {"labels": list(labels), "token_counts": token_counts, "lls": lls,
                                 "run_fingerprint": variants[names[0]].metadata.get("run_fingerprint")}
        from instructeval_tasks.estimation.item_response import Cells

        y, _, method_of, _ = _matrix(grid)
        rows, cols = np.nonzero(np.ones_like(y))
        choice_grid_of(grid, Cells(rows, cols, y[rows, cols], y.shape[0], y.shape[1], method_of))  # stops on a mismatch
        added.append(key)
    return added


def _labels(samples_path: str) -> list:
    """Each item's gold class (the samples' ``target``), in doc_id order: the sampler balances them."""
    from instructeval_tasks.data import read_jsonl

    rows = read_jsonl(Path(samples_path))
    return [str(r["target"]) for r in sorted(rows, key=lambda r: r["doc_id"])]


def rebuild(model_dir: str, data_dir: str, work: Path, threads: int) -> Path:
    import os

    import torch

    from instructeval_tasks.sweep import run_sweep

    os.environ.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if threads:
        torch.set_num_threads(threads)
    report = run_sweep(model="instructeval-hf", model_args=f"pretrained={model_dir},dtype=float32", output=work,
                       data_dir=data_dir, **SWEEP_ARGS)
    return report.output_dir


# ------------------------------------------------------------------------------------ the check


@dataclasses.dataclass
class Scores:
    instr_mae: float
    method_mae: float
    quantile_mae: float
    spearman: float
    regret: float
    coverage: float  # instructions
    method_coverage: float
    quantile_coverage: float
    share: float
    # each estimated method's relative gain within the grid (percent of mu) and difference to null (points)
    gain_mae: float = float("nan")
    null_mae: float = float("nan")
    gain_coverage: float = float("nan")
    null_coverage: float = float("nan")
    # how many intervals each coverage is over (instructions, methods, quantiles): 0 where unknown
    intervals: tuple[int, int, int] = (0, 0, 0)
    # the registered name of the estimator that made these estimates (``estimation.ESTIMATORS``), and
    # every reported statistic of its draws against the full grid (``statistic_checks``)
    estimator: str = ""
    statistics: dict[str, StatisticCheck] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class StatisticCheck:
    """One reported statistic of one budgeted run against the full grid, in points (``stock_percentile``
    in percent): ``bias`` is the estimate (the draws' median) minus the full grid's value, ``abs_error``
    its absolute value, ``covered`` the share of the ``n`` 95% intervals that hold the full grid's value
    (``n`` is the estimated instructions for ``instruction``, else 1), ``truth`` the full grid's value
    (NaN for ``instruction``), ``width`` the intervals' mean width."""

    bias: float
    abs_error: float
    covered: float
    n: int
    truth: float
    width: float


LEVEL = 0.95  # the reports' interval level


def statistic_checks(draws: np.ndarray, truth: np.ndarray, stock: int | None, estimated: np.ndarray, *,
                     sd_draws: np.ndarray | None = None, truth_sd: float = float("nan")) -> dict[str, StatisticCheck]:
    """Every statistic a report gives for a budgeted grid, from the estimator's draws, against the full grid.

    ``draws``: the estimator's predictive draws (``D x m`` accuracies on the full grid); ``truth``: the
    full grid's exact accuracies (``m``); ``stock``: the stock (null) instruction's row. For each
    ``draw_statistics.STATISTICS`` entry, the estimate and 95% interval are ``draw_statistics.summarize``
    of the statistic of every draw and the truth is the same statistic of ``truth``; ``instruction``
    is each ``estimated`` row's accuracy (the draws' median and percentile interval of its column;
    bias and error averaged over those rows); ``instruction_sd`` (only with ``sd_draws``: each draw's
    instruction-effect SD, a fraction, from draws of the whole grid) against ``truth_sd``
    (``sensitivity_measures.instruction_effect_sd`` of the full grid). A statistic without a value
    (no stock row: ``stock_percentile``) is left out.

    Example (one instruction beside the stock row, its draws 0.6 to 0.8, exactly 0.7 on the full grid):
        >>> draws = np.array([[0.5, 0.6], [0.5, 0.7], [0.5, 0.8]])
        >>> checks = statistic_checks(draws, np.array([0.5, 0.7]), 0, np.array([False, True]))
        >>> c = checks["instruction"]; round(c.bias, 6), c.covered, c.n
        (0.0, 1.0, 1)
        >>> c = checks["spread"]; round(c.truth, 6), round(c.bias, 6), c.covered
        (20.0, 0.0, 1.0)
    """
    from instructeval_aggregation.draw_statistics import STATISTICS, statistic_draws, summarize

    alpha = (1.0 - LEVEL) / 2.0

    def check(estimate: float, low: float, high: float, exact: float, scale: float) -> StatisticCheck:
        inside = low - 1e-12 <= exact <= high + 1e-12
        return StatisticCheck(scale * (estimate - exact), scale * abs(estimate - exact), float(inside), 1,
                              scale * exact, scale * (high - low))

    out: dict[str, StatisticCheck] = {}
    rows = np.asarray(estimated, dtype=bool)
    if rows.any():
        low, mid, high = np.quantile(draws[:, rows], [alpha, 0.5, 1.0 - alpha], axis=0)
        exact = truth[rows]
        out["instruction"] = StatisticCheck(
            100 * float(np.mean(mid - exact)), 100 * float(np.mean(np.abs(mid - exact))),
            float(np.mean((exact >= low - 1e-12) & (exact <= high + 1e-12))), int(rows.sum()), float("nan"),
            100 * float(np.mean(high - low)))
    for name in STATISTICS:
        exact = float(STATISTICS[name](truth[None, :].astype(np.float64), stock)[0])
        s = summarize(statistic_draws(name, draws, stock), LEVEL)
        if np.isfinite(exact) and np.isfinite(s.estimate):
            out[name] = check(s.estimate, s.low, s.high, exact, 1.0 if name == "stock_percentile" else 100.0)
    if sd_draws is not None:
        s = summarize(sd_draws, LEVEL)
        out["instruction_sd"] = check(s.estimate, s.low, s.high, truth_sd, 100.0)
    return out


def item_response_estimate(cells, n_draws: int, rng: np.random.Generator):
    """``(budgeted.estimate_grid(cells, n_boot=n_draws, level=LEVEL, rng=rng), each draw's
    instruction-effect SD)`` for the crossed item-response model, from one set of draws of the whole
    grid (``item_response.predictive_grids``, whose row means are the estimator's draws): the same
    estimate that ``estimate_grid`` gives without label scores, draw for draw, and the SD
    (``draw_statistics.instruction_sd_draws``) of those very draws, as the harness report computes it."""
    from instructeval_aggregation.budgeted import QUANTILES as QS
    from instructeval_aggregation.budgeted import GridEstimate
    from instructeval_aggregation.draw_statistics import instruction_sd_draws
    from instructeval_tasks.estimation import ESTIMATORS, ITEM_RESPONSE
    from instructeval_tasks.estimation.item_response import predictive_grids

    fit = ESTIMATORS[ITEM_RESPONSE].fit(cells)
    accuracies, sds = [], []
    for grids in predictive_grids(fit.crossed, fit.cells, n_draws, rng):
        accuracies.append(grids.mean(axis=2))
        sds.append(instruction_sd_draws(grids))
    draws, sd = np.concatenate(accuracies), np.concatenate(sds)
    alpha = (1 - LEVEL) / 2

    def interval(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.quantile(values, alpha, axis=0), np.quantile(values, 1 - alpha, axis=0)

    per_draw = np.quantile(draws, QS, axis=1).T  # draws x quantiles
    p_best = np.bincount(np.argmax(draws, axis=1), minlength=cells.n_rows) / n_draws
    estimate = GridEstimate(fit, fit.estimates(), draws, *interval(draws), p_best, np.median(per_draw, axis=0),
                            *interval(per_draw))
    return estimate, sd


def _matrix(grid: dict) -> tuple[np.ndarray, list[str], np.ndarray, list[str]]:
    y = np.array([[int(c) for c in row["correct"]] for row in grid["rows"]], dtype=float)
    names = [f"{row['method']}/{row['instruction']}" for row in grid["rows"]]
    methods = sorted({row["method"] for row in grid["rows"]})
    method_of = np.array([methods.index(row["method"]) for row in grid["rows"]])
    return y, names, method_of, methods


def grid_classes(grid: dict) -> np.ndarray | None:
    """The items' gold classes as the aggregation reads them from the samples (none for open answers)."""
    from instructeval_tasks.estimation.item_response import item_classes

    if grid.get("metric") == GENERATION_METRIC:
        return None
    return item_classes(dict(enumerate(grid["labels"])), len(grid["labels"]))


EXTEND_FROM = 0.1  # --extend-from: the share the design "extended" starts from


def choose_cells(grid: dict, key: str, fraction: float, seed: int, design: str, *, min_items: int,
                 full_methods: tuple[str, ...], extend_from: float = EXTEND_FROM) -> dict[str, list[int]]:
    """The cells ``instructeval run --budget fraction --budget-design design`` evaluates on this grid;
    for the design ``extended``, those of ``--budget extend_from --budget-extend fraction`` (balanced).

    As the runner does: the design's first cells (``grid_cells_of``), then each later round
    (``budget_rounds``: an adaptive design's, an extension's) fitted to every cell chosen before it
    (by the label scores where the cache has them).
    """
    from instructeval_tasks.sweep.budget import (Budget, budget_rounds, grid_cells_of, next_round_cells, observed_cells,
                                                 round_target)

    y, names, _, _ = _matrix(grid)
    full = [name for name, row in zip(names, grid["rows"]) if row["method"] in full_methods]
    if design == "extended":
        budget = Budget(extend_from, seed=seed, min_items=min_items, full_methods=full_methods, design="balanced",
                        extend_to=fraction)
    else:
        budget = Budget(fraction, seed=seed, min_items=min_items, full_methods=full_methods, design=design)
    methods = {name: row["method"] for name, row in zip(names, grid["rows"])}
    first, grid_cells = grid_cells_of(names, grid["labels"], budget, key, full=full, methods=list(methods.values()))
    chosen = {name: list(items) for name, items in first.items()}
    targets = {} if grid.get("metric") == GENERATION_METRIC else dict(enumerate(grid["labels"]))
    for budget_round in budget_rounds(budget):
        target = round_target(budget, budget_round, list(methods.values()), y.shape[1], {"grid_cells": grid_cells})
        observed = {name: {j: y[i, j] for j in chosen[name]} for i, name in enumerate(names)}
        # a grid with label scores: the rounds choose from them, as the runner's do (adaptive.native_grid_cells)
        choice = choice_grid_of(grid, observed_cells(observed, methods, y.shape[1], targets))
        for name, items in next_round_cells(observed, methods, y.shape[1], target, budget_round.rounds_left,
                                            frozen=full, targets=targets, choice=choice).items():
            chosen[name] = sorted(chosen[name] + items)
    return chosen


ESTIMATORS = ("model", "item-resp", "subset", "known-b", "simulated")


_PARSED_SCORES: dict[int, tuple[dict, np.ndarray]] = {}  # id -> (the cache's entry, kept alive; its scores)


def choice_grid_of(grid: dict, cells):
    """The aggregation's label scores of ``cells`` (``instructeval_tasks.estimation.choice_scores.ChoiceGrid``)
    from the cache's ``choice_scores`` (every cell's per-label log-likelihoods, the labels' token
    counts), or ``None`` for a grid without them. As in a budgeted run's samples, only the observed
    cells' scores are given; they must give the cache's answers (``choice_grid``'s check)."""
    from instructeval_tasks.estimation.choice_scores import ChoiceGrid, ChoiceScores, choice_grid

    stored = grid.get("choice_scores")
    if not stored:
        return None
    labels = tuple(stored["labels"])
    if id(stored) not in _PARSED_SCORES:  # the rounds of every seed read them again
        _PARSED_SCORES[id(stored)] = (stored, np.array([[float(x) for x in row.split()] for row in stored["lls"]]).reshape(
            len(grid["rows"]), -1, len(labels)))
    lls = _PARSED_SCORES[id(stored)][1]
    gold = np.array([int(x) for x in grid["labels"]])
    scored = []
    for i in range(cells.n_rows):
        items = np.sort(cells.cols[cells.rows == i])
        scored.append((i, ChoiceScores(items, list(lls[i, items]), [labels] * len(items), gold[items])))
    built = choice_grid(cells, scored, grid["metric"], [stored.get("token_counts")])
    if not isinstance(built, ChoiceGrid):
        raise SystemExit(f"grid {grid['task']}:{grid['setting']}: its choice_scores are not usable: {built}")
    return built
_FULL_FITS: dict[tuple[str, int], object] = {}


def simulated_grid(grid: dict, key: str, seed: int) -> dict:
    """The grid with every outcome redrawn from the item-response model fitted to all of its cells.

    Each item takes one effect from its posterior under the full fit (``b_j`` on the item grid),
    each cell an outcome with ``P(y_ij = 1) = sigmoid(beta_{k(i), c(j)} + u_{i, c(j)} + b_j)``; the
    instructions, methods, labels and metric stay. Seeded by ``(key, seed)`` (string seed).

    Example (a grid the model fits as certain, every instruction right on the first items and wrong
    on the last ones, is redrawn as it is):
        >>> grid = {"rows": [{"method": "null", "instruction": "0", "correct": [1] * 5 + [0] * 5},
        ...                  {"method": "generic", "instruction": "1", "correct": [1] * 5 + [0] * 5}],
        ...         "labels": ["a"] * 10, "metric": METRIC}
        >>> simulated_grid(grid, "doc", 0)["rows"][1]["correct"]
        [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]
    """
    from scipy.special import expit

    from instructeval_aggregation.bootstrap import rng_for
    from instructeval_tasks.estimation.item_response import ITEM_GRID, Cells, fit_crossed, item_points

    y, _, method_of, _ = _matrix(grid)
    m, n = y.shape
    cache_key = (key, id(grid))
    if cache_key not in _FULL_FITS:
        rows, cols = np.nonzero(np.ones_like(y))
        _FULL_FITS[cache_key] = fit_crossed(Cells(rows, cols, y[rows, cols], m, n, method_of, grid_classes(grid)))
    fit = _FULL_FITS[cache_key]
    rng = rng_for("budget-validation-simulated", key, seed)
    points = item_points(fit, rng, 1)[0]
    p = expit(fit.logits()[:, fit.classes] + ITEM_GRID[points][None, :])
    redrawn = rng.random((m, n)) < p
    return {**grid, "rows": [{**row, "correct": [int(v) for v in redrawn[i]]} for i, row in enumerate(grid["rows"])]}


def evaluate_grid(grid: dict, fraction: float, seed: int, n_draws: int, key: str, design: str, *, min_items: int,
                  full_methods: tuple[str, ...], simulated: bool = False,
                  extend_from: float = EXTEND_FROM) -> dict[str, Scores]:
    """Scores against the full grid, for one draw: the item-response estimates (``model``) and, but
    for the adaptive and the extended designs, the observed-subset means (``subset``) and the
    reference ``known-b``; with ``simulated``, the reference ``simulated`` too (the same design and
    estimator on ``simulated_grid``, scored against its own exact accuracies)."""
    if simulated:  # (outcomes redrawn from the crossed model have no label scores: there it is the estimator)
        redrawn = evaluate_grid({k: v for k, v in simulated_grid(grid, key, seed).items() if k != "choice_scores"},
                                fraction, seed, n_draws, key, design,
                                min_items=min_items, full_methods=full_methods, extend_from=extend_from)
        return {**evaluate_grid(grid, fraction, seed, n_draws, key, design, min_items=min_items,
                                full_methods=full_methods, extend_from=extend_from), "simulated": redrawn["model"]}
    from instructeval_aggregation.bootstrap import rng_for
    from instructeval_aggregation.budgeted import QUANTILES as QS
    from instructeval_aggregation.budgeted import estimate_grid
    from instructeval_aggregation.sensitivity_measures import instruction_effect_sd
    from instructeval_tasks.estimation.item_response import Cells

    y, names, method_of, methods = _matrix(grid)
    m, n = y.shape
    chosen = choose_cells(grid, key, fraction, seed, design, min_items=min_items, full_methods=full_methods,
                          extend_from=extend_from)
    rows = np.concatenate([np.full(len(chosen[name]), i) for i, name in enumerate(names)])
    cols = np.concatenate([np.array(chosen[name], dtype=int) for name in names])
    cells = Cells(rows, cols, y[rows, cols], m, n, method_of, grid_classes(grid))
    choice = choice_grid_of(grid, cells)
    seeded = lambda: rng_for("budget-validation", key, fraction, seed, design)  # noqa: E731
    # the crossed model's estimate with its draws' instruction-effect SDs (its draws as estimate_grid's)
    crossed_est, crossed_sd = item_response_estimate(cells, n_draws, seeded())
    est = estimate_grid(cells, n_boot=n_draws, level=0.95, rng=seeded(), choice=choice) if choice else crossed_est
    truth = y.mean(axis=1)
    truth_sd = instruction_effect_sd(y)
    stock = next((i for i, row in enumerate(grid["rows"]) if row["method"] == "null"), None)
    share = cells.y.size / (m * n)
    estimated = [k for k, method in enumerate(methods) if method not in full_methods]

    def plain(values: np.ndarray) -> Scores:  # an estimate without draws: no intervals
        return dataclasses.replace(score_estimates(values, np.quantile(values, QS), truth, method_of, estimated,
                                                   share=share, draws=None, quantile_interval=None),
                                   **contrasts(values, None))

    row_methods = [methods[k] for k in method_of]
    contrasts = lambda values, draws: score_contrasts(values, truth, row_methods, [methods[k] for k in estimated], draws)  # noqa: E731
    def scored(e, sd_draws: np.ndarray | None) -> Scores:
        interval = (e.quantile_low, e.quantile_high) if e.replicates is not None else None
        checks = statistic_checks(e.replicates, truth, stock, np.isin(method_of, estimated), sd_draws=sd_draws,
                                  truth_sd=truth_sd) if e.replicates is not None else {}
        return dataclasses.replace(score_estimates(e.point, e.quantiles, truth, method_of, estimated, share=share,
                                                   draws=e.replicates, quantile_interval=interval),
                                   **contrasts(e.point, e.replicates), estimator=e.fit.name, statistics=checks)

    # the label scores' fit draws accuracies only, not whole grids: no instruction-effect SD there
    model = scored(est, None if choice else crossed_sd)
    # where the grid has label scores, the crossed item-response model on the same cells, beside
    crossed = {"item-resp": scored(crossed_est, crossed_sd)} if choice else {}
    if design in ("adaptive", "extended"):  # the later rounds choose cells by their scores: the subset is biased
        return {"model": model, **crossed}
    subset = np.array([y[i, chosen[name]].mean() for i, name in enumerate(names)])
    known = known_items_estimate(y, [chosen[name] for name in names])
    return {"model": model, **crossed,
            "subset": plain(subset), "known-b": plain(known)}


def score_contrasts(values: np.ndarray, truth: np.ndarray, methods: list[str], estimated: list[str],
                    draws: np.ndarray | None = None) -> dict[str, float]:
    """MAE and interval coverage of the ``estimated`` methods' relative gain within the grid (percent)
    and difference to the null method (points), as the aggregation reports them
    (``budgeted.method_contrasts``, null weight 5); coverages NaN without ``draws``, the difference
    NaN without a null method.

    Example (null estimated 2 points high, generic exact: the difference to null is 2 points off):
        >>> s = score_contrasts(np.array([.52, .6, .7]), np.array([.5, .6, .7]), ["null", "generic", "generic"],
        ...                     ["null", "generic"])
        >>> round(s["null_mae"], 2)
        2.0
    """
    from instructeval_aggregation.budgeted import method_contrasts

    gain, vs_null = method_contrasts(values, methods)
    true_gain, true_vs_null = method_contrasts(truth, methods)
    out = {"gain_mae": float(np.mean([abs(gain[m] - true_gain[m]) for m in estimated])),
           "null_mae": float("nan"), "gain_coverage": float("nan"), "null_coverage": float("nan")}
    compared = [m for m in estimated if m in vs_null]
    if compared:
        out["null_mae"] = 100 * float(np.mean([abs(vs_null[m] - true_vs_null[m]) for m in compared]))
    if draws is not None:
        drawn_gain, drawn_vs_null = method_contrasts(draws, methods)

        def covers(reps: np.ndarray, exact: float) -> bool:
            lo, hi = np.quantile(reps, [0.025, 0.975])
            return bool(lo - 1e-12 <= exact <= hi + 1e-12)

        out["gain_coverage"] = float(np.mean([covers(drawn_gain[m], true_gain[m]) for m in estimated]))
        if compared:
            out["null_coverage"] = float(np.mean([covers(drawn_vs_null[m], true_vs_null[m]) for m in compared]))
    return out


def score_estimates(values: np.ndarray, quantiles: np.ndarray, truth: np.ndarray, method_of: np.ndarray,
                    estimated: list[int], *, share: float, draws: np.ndarray | None = None,
                    quantile_interval: tuple[np.ndarray, np.ndarray] | None = None) -> Scores:
    """One estimate's scores against the full grid's exact accuracies ``truth``.

    Instruction and method errors and coverages count only the ``estimated`` methods (indices into
    the methods of ``method_of``): the instructions of ``--budget-full-methods`` are evaluated on
    every item, so their exact values would add zero errors and intervals that cannot miss. The
    quantiles, the ranking and the regret are across every instruction. ``draws`` (draws x
    instructions) give the intervals; without them the coverages are NaN.

    Example (null exact, three generic instructions, one off by 10 points):
        >>> s = score_estimates(np.array([.5, .6, .7, .9]), np.array([.6]), np.array([.5, .6, .7, .8]),
        ...                     np.array([0, 1, 1, 1]), [1], share=0.5)
        >>> round(s.instr_mae, 2), round(s.method_mae, 2)
        (3.33, 3.33)
    """
    from scipy.stats import spearmanr

    from instructeval_aggregation.budgeted import QUANTILES as QS

    rows = np.isin(method_of, estimated)
    true_methods = np.array([truth[method_of == k].mean() for k in estimated])
    method_values = np.array([values[method_of == k].mean() for k in estimated])
    true_quantiles = np.quantile(truth, QS)

    def inside(values, low, high) -> float:
        return float(np.mean((values >= low - 1e-12) & (values <= high + 1e-12)))

    cover = method_cover = quantile_cover = float("nan")
    if draws is not None:
        lo, hi = np.quantile(draws, [0.025, 0.975], axis=0)
        cover = inside(truth[rows], lo[rows], hi[rows])
        per_method = np.stack([draws[:, method_of == k].mean(axis=1) for k in estimated], axis=1)
        mlo, mhi = np.quantile(per_method, [0.025, 0.975], axis=0)
        method_cover = inside(true_methods, mlo, mhi)
        if quantile_interval is not None:
            quantile_cover = inside(true_quantiles, *quantile_interval)
    with warnings.catch_warnings():  # a grid whose accuracies are all equal has no ranking (rho reported as 0)
        warnings.simplefilter("ignore")
        rho = spearmanr(values, truth).statistic
    return Scores(100 * float(np.mean(np.abs(values[rows] - truth[rows]))),
                  100 * float(np.mean(np.abs(method_values - true_methods))),
                  100 * float(np.mean(np.abs(quantiles - true_quantiles))), float(rho) if np.isfinite(rho) else 0.0,
                  100 * float(truth.max() - truth[int(np.argmax(values))]), cover, method_cover, quantile_cover, share,
                  intervals=(int(rows.sum()), len(estimated), len(QS)) if draws is not None else (0, 0, 0))


def known_items_estimate(y: np.ndarray, chosen: list[list[int]]) -> np.ndarray:
    """The reference estimator ``known-b``: what an estimator additive in instruction and item effects
    could do on these cells if it knew every item's effect exactly (taken from the full grid itself,
    which no budgeted run has): each unobserved cell is the item's mean over all instructions shifted
    by the instruction's mean residual on its own cells, clipped to [0, 1]; observed cells as scored.

        acc_i = (sum_{j observed} y_ij + sum_{j not observed} clip(d_j + r_i, 0, 1)) / n,
        d_j = mean_i' y_i'j,  r_i = mean_{j observed} (y_ij - d_j)

    Its remaining error comes from instruction x item interactions in the cells the design left out,
    so a grid where it misses a target is one where the budget, not the model, sets the limit.
    """
    d = y.mean(axis=0)
    out = np.empty(y.shape[0])
    for i, items in enumerate(chosen):
        r = float(np.mean(y[i, items] - d[items]))
        row = np.clip(d + r, 0.0, 1.0)
        row[items] = y[i, items]
        out[i] = row.mean()
    return out


MODEL = "smollm2"  # the benchmark's own model: its grids' keys name no model


def load_caches(paths: list[Path]) -> dict[str, dict]:
    """Every grid of the caches, keyed ``<task>:<setting code>``, or ``<task>:<setting code>@<model>``
    for a cache of another model than ``MODEL`` (its ``model``); a key in two caches is an error."""
    grids: dict[str, dict] = {}
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        models = data.get("model") or [MODEL]
        suffix = "" if models == [MODEL] else "@" + "+".join(models)
        for key, grid in data["grids"].items():
            key += suffix
            if key in grids:
                raise SystemExit(f"{path}: grid {key} is also in another cache")
            grids[key] = {**grid, "metric": grid.get("metric", data.get("metric")), "cache": path.name}
    return grids


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=None,
                        help=f"one cache file (default: every {CACHES} in benchmarks/data)")
    parser.add_argument("--grids", default="", help="comma list of grid keys to check (default: all)")
    parser.add_argument("--budgets", default=",".join(f"{b:g}" for b in DEFAULTS["budgets"]))
    parser.add_argument("--designs", default=",".join(DEFAULTS["designs"]))
    parser.add_argument("--seeds", type=int, default=DEFAULTS["seeds"],
                        help=f"budget seeds per budget (default {DEFAULTS['seeds']})")
    parser.add_argument("--draws", "--boot", dest="draws", type=int, default=DEFAULTS["draws"],
                        help=f"predictive draws per fit (default {DEFAULTS['draws']})")
    parser.add_argument("--min-items", type=int, default=1,
                        help="--budget-min-items of the draws (default 1: the budget alone sets each quota)")
    parser.add_argument("--full-methods", default="null", help="--budget-full-methods of the draws (default null)")
    parser.add_argument("--extend-from", type=float, default=EXTEND_FROM,
                        help="the --budget the design 'extended' starts from (default 0.1)")
    parser.add_argument("--simulated", action=argparse.BooleanOptionalAction, default=True,
                        help="also score the reference 'simulated' (grids redrawn from the full grid's fit; doubles "
                             "the time; default on)")
    parser.add_argument("--rebuild", action="store_true", help="recompute the first cache's full grid with instructeval run")
    parser.add_argument("--from-runs", type=Path, default=None, help="build --cache from this finished sweep folder")
    parser.add_argument("--model-dir", default=str(ROOT / "models" / "smollm2"))
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--build-only", action="store_true", help="write the cache and stop")
    parser.add_argument("--add-scores", type=Path, default=None, metavar="DIR",
                        help="add the label scores of a finished full sweep of the same grids to --cache, and stop")
    parser.add_argument("--score-tokenizer", default=None,
                        help="with --add-scores, for results without choice_token_counts: the tokenizer that counts "
                             "acc_per_token's continuation tokens")
    parser.add_argument("--write-page", type=Path, default=None, metavar="FILE",
                        help="also write the table and the verdicts as a documentation page, stamped with the commit "
                             "measured and this command (e.g. docs/validation/budget.md)")
    parser.add_argument("--write-validity", type=Path, default=None, metavar="FILE",
                        help="also write which statistics each estimator, design and budget resolves, as the reports "
                             "read it (aggregation/budget_validity.json)")
    parser.add_argument("--save-results", type=Path, default=None, metavar="FILE",
                        help="also save every run's scores (JSON), for --from-results")
    parser.add_argument("--from-results", type=Path, nargs="+", default=None, metavar="FILE",
                        help="measure nothing: the table, the page and the validity file from runs saved by "
                             "--save-results (the same settings, other grids), merged")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "budget_grid")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    if args.add_scores:
        if not args.cache:
            raise SystemExit("--add-scores needs --cache FILE")
        data = json.loads(args.cache.read_text(encoding="utf-8"))
        added = add_choice_scores(data, args.add_scores, args.score_tokenizer)
        args.cache.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{args.cache}: label scores added to {', '.join(added) or 'no grid'}")
        return 0
    if args.rebuild or args.from_runs:
        target = args.cache or CACHE
        folder = args.from_runs or rebuild(args.model_dir, args.data_dir, args.work, args.threads)
        data = cache_from_runs(Path(folder))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"cache written: {target} ({sum(len(g['rows']) for g in data['grids'].values())} variants)")
        if args.build_only:
            return 0
    paths = [args.cache] if args.cache else sorted((HERE / "data").glob(CACHES))
    paths = [p for p in paths if p.exists()]
    if not paths:
        print(f"skip: no cache in {HERE / 'data'}; build one with --rebuild (or --from-runs DIR)")
        return 0
    grids = load_caches(paths)
    shipped = sorted(grids)
    if args.from_results:
        return report_saved(args, grids, shipped, argv)
    if args.grids:
        unknown = sorted(set(args.grids.split(",")) - set(grids))
        if unknown:
            raise SystemExit(f"--grids: unknown {', '.join(unknown)}; known: {', '.join(sorted(grids))}")
        grids = {k: grids[k] for k in args.grids.split(",")}
    budgets = [float(b) for b in args.budgets.split(",")]
    designs = [d for d in args.designs.split(",") if d]
    full_methods = tuple(m for m in args.full_methods.split(",") if m)
    caches = {}
    for path in paths:
        fp = json.loads(path.read_text(encoding="utf-8")).get("run_fingerprint") or {}
        caches[path.name] = (f"{path.name}: model files sha256 {str(fp.get('model_files_sha256'))[:12]}, "
                             f"dtype {fp.get('dtype')}, backend {fp.get('backend')}")
        print(caches[path.name])
    print(f"full grids ({', '.join(p.name for p in paths)}): "
          + "; ".join(f"{k} {len(g['rows'])}x{len(g['labels'])}" for k, g in sorted(grids.items())))
    header = " ".join(f"{name:{align}{width}}" for name, (width, align) in COLUMNS.items())
    print("MAE in accuracy points; regret: exact best minus the exact accuracy of the estimated best")
    print(header)
    print("-" * len(header))
    started = time.monotonic()
    results: dict[tuple[float, str, str, str], list[Scores]] = {}
    # the code measured: before anything is written
    stamp = git_stamp() if args.write_page or args.write_validity or args.save_results else ""
    settings = {"seeds": args.seeds, "budgets": budgets, "designs": designs, "grids": sorted(grids),
                "draws": args.draws, "min_items": args.min_items, "full_methods": list(full_methods),
                "simulated": args.simulated, "extend_from": args.extend_from,
                "caches": [caches[name] for name in sorted({grid["cache"] for grid in grids.values()})]}
    command = page_command("budget_validation.py", sys.argv[1:] if argv is None else argv)

    def save(seconds: float) -> None:
        if args.save_results:
            args.save_results.parent.mkdir(parents=True, exist_ok=True)
            document = results_document(results, stamp=stamp, command=command, settings=settings, seconds=seconds)
            args.save_results.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")

    for fraction in budgets:
        for design in designs:
            if design == "extended" and fraction <= args.extend_from:
                continue
            for key in sorted(grids):
                for seed in range(args.seeds):
                    scores = evaluate_grid(grids[key], fraction, seed, args.draws, key, design,
                                           min_items=args.min_items, full_methods=full_methods,
                                           simulated=args.simulated, extend_from=args.extend_from)
                    for name, value in scores.items():
                        results.setdefault((fraction, design, key, name), []).append(value)
                for name in ESTIMATORS:
                    if (fraction, design, key, name) in results:
                        _row(fraction, key, design, name, results[(fraction, design, key, name)])
            for name in ESTIMATORS:
                pooled = [s for (f, d, _, e), scores in results.items() if f == fraction and d == design and e == name
                          for s in scores]
                if pooled:
                    _row(fraction, "all grids", design, name, pooled)
            print()
            save(time.monotonic() - started)  # each budget and design as it ends: a stopped run keeps them
    seconds = time.monotonic() - started
    print(f"({args.seeds} seeds per budget and design, {args.draws} predictive draws per fit; {seconds:.0f} s)")
    save(seconds)
    if args.save_results:
        print(f"results saved: {args.save_results}")
    report(args, results, grids, settings, shipped, stamp=stamp, command=command, seconds=seconds,
           full=_is_full_run(args, budgets, designs))
    return 0


def report(args: argparse.Namespace, results: dict, grids: dict[str, dict], settings: dict, shipped: list[str], *,
           stamp: str, command: str, seconds: float | None, full: bool, parts: list[dict] | None = None) -> None:
    """The verdicts and the statistics' table on the terminal; the page (``--write-page``) and the
    validity file (``--write-validity``) where asked."""
    verdicts = _verdicts(results, settings["grids"],
                         {key: allocation_gain(_matrix(grids[key])[0]) for key in settings["grids"] if key in grids})
    statistics = statistic_table(results, settings["grids"])
    print()
    for line in statistic_summary_lines(statistics):
        print(line)
    for estimator, design in dict.fromkeys((e, d) for (e, d, _, _) in statistics):
        print(f"\n{estimator}, {design} design:")
        for line in statistic_table_lines(statistics, estimator, design):
            print(line)
    if args.write_page:
        page = validation_page(results, settings=settings, command=command, stamp=stamp, verdicts=verdicts,
                               seconds=seconds, full=full, statistics=statistics,
                               reduced=reductions(settings, shipped), parts=parts)
        args.write_page.parent.mkdir(parents=True, exist_ok=True)
        args.write_page.write_text(page, encoding="utf-8")
        print(f"page written: {args.write_page}")
    if args.write_validity:
        document = validity_document(statistics, stamp=stamp, command=command, settings=settings)
        args.write_validity.parent.mkdir(parents=True, exist_ok=True)
        args.write_validity.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        print(f"validity written: {args.write_validity}")


# the settings two saved runs must share to be merged (their grids differ)
MERGED_SETTINGS = ("seeds", "budgets", "designs", "draws", "min_items", "full_methods", "simulated", "extend_from")


def results_document(results: dict, *, stamp: str, command: str, settings: dict, seconds: float | None) -> dict:
    """Every run's scores (``--save-results``), with the commit, command and settings that made them."""
    return {"stamp": stamp, "command": command, "settings": settings, "seconds": seconds,
            "results": [{"budget": fraction, "design": design, "grid": key, "estimator": name,
                         "scores": [dataclasses.asdict(s) for s in scores]}
                        for (fraction, design, key, name), scores in results.items()]}


def load_results(paths: list[Path]) -> tuple[dict, dict, list[dict]]:
    """``(results, settings, parts)`` merged from saved runs (``results_document``): their settings
    must agree but for the grids, and no grid may be in two of them."""
    results: dict[tuple[float, str, str, str], list[Scores]] = {}
    settings: dict = {}
    parts: list[dict] = []
    for path in paths:
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise SystemExit(f"--from-results {path}: not a file saved by --save-results ({error})") from None
        mine = document["settings"]
        if settings:
            differ = [f"{k} {mine.get(k)!r} vs {settings.get(k)!r}" for k in MERGED_SETTINGS if mine.get(k) != settings.get(k)]
            if differ:
                raise SystemExit(f"--from-results {path}: measured with other settings than {paths[0]} "
                                 f"({'; '.join(differ)}); rerun it with the same options")
            shared = sorted(set(mine["grids"]) & set(settings["grids"]))
            if shared:
                raise SystemExit(f"--from-results {path}: grid {', '.join(shared)} is also in an earlier file; "
                                 "give each grid's run once")
            settings = {**settings, "grids": sorted(settings["grids"] + mine["grids"]),
                        "caches": sorted(set(settings["caches"]) | set(mine["caches"]))}
        else:
            settings = dict(mine)
        parts.append({"stamp": document["stamp"], "command": document["command"], "grids": mine["grids"],
                      "seconds": document.get("seconds")})
        for entry in document["results"]:
            scores = [Scores(**{**s, "intervals": tuple(s["intervals"]),
                                "statistics": {k: StatisticCheck(**c) for k, c in s["statistics"].items()}})
                      for s in entry["scores"]]
            results[(float(entry["budget"]), entry["design"], entry["grid"], entry["estimator"])] = scores
    return results, settings, parts


def report_saved(args: argparse.Namespace, grids: dict[str, dict], shipped: list[str], argv: list[str] | None) -> int:
    """``--from-results``: the report of saved runs, measuring nothing."""
    results, settings, parts = load_results(args.from_results)
    unknown = sorted(set(settings["grids"]) - set(grids))
    if unknown:
        raise SystemExit(f"--from-results: grid {', '.join(unknown)} is in no cache of {HERE / 'data'}")
    command = page_command("budget_validation.py", sys.argv[1:] if argv is None else argv)
    stamps = {part["stamp"] for part in parts}
    stamp = stamps.pop() if len(stamps) == 1 else "; ".join(part["stamp"] for part in parts)
    full = (not args.cache and set(settings["grids"]) >= set(shipped) and not reductions(settings, shipped))
    report(args, results, grids, settings, shipped, stamp=stamp, command=command,
           seconds=sum(part["seconds"] or 0 for part in parts), full=full, parts=parts)
    return 0


def _mean(scores: list[Scores], field: str) -> float:
    values = [getattr(s, field) for s in scores]
    return float(np.nanmean(values)) if values and not all(np.isnan(values)) else float("nan")


# The table's columns: (width, alignment) of each in the printed table
COLUMNS = {"budget": (6, ">"), "grid": (16, "<"), "design": (8, "<"), "estimator": (9, "<"), "instr": (6, ">"),
           "method": (6, ">"), "quant": (6, ">"), "rho": (5, ">"), "regret": (6, ">"), "cov i/m/q": (14, ">"),
           "share": (6, ">"), "gain%": (6, ">"), "vsnull": (6, ">"), "cov g/n": (9, ">")}


def row_cells(fraction: float, key: str, design: str, name: str, scores: list[Scores]) -> list[str]:
    """One row of the table, a text per ``COLUMNS`` entry: the means over ``scores`` (seeds)."""
    cover = "/".join("  - " if np.isnan(_mean(scores, f)) else f"{_mean(scores, f):.0%}".rjust(4)
                     for f in ("coverage", "method_coverage", "quantile_coverage"))
    contrast_cover = "/".join("  - " if np.isnan(_mean(scores, f)) else f"{_mean(scores, f):.0%}".rjust(4)
                              for f in ("gain_coverage", "null_coverage"))
    return [f"{fraction:.0%}", key, design, name, f"{_mean(scores, 'instr_mae'):.2f}", f"{_mean(scores, 'method_mae'):.2f}",
            f"{_mean(scores, 'quantile_mae'):.2f}", f"{_mean(scores, 'spearman'):.2f}", f"{_mean(scores, 'regret'):.2f}",
            cover, f"{_mean(scores, 'share'):.1%}", f"{_mean(scores, 'gain_mae'):.2f}", f"{_mean(scores, 'null_mae'):.2f}",
            contrast_cover]


def _row(fraction: float, key: str, design: str, name: str, scores: list[Scores]) -> None:
    cells = row_cells(fraction, key, design, name, scores)
    print(" ".join(f"{cell:{align}{width}}" for cell, (width, align) in zip(cells, COLUMNS.values())))


# the Scores fields of the three interval coverages, and what each covers
COVERAGES = {"coverage": "instructions", "method_coverage": "methods", "quantile_coverage": "quantiles"}


def _coverage_on_target(value: float) -> bool:
    """Nominal 95% intervals should cover 90-97% of the exact values."""
    return 0.90 - 1e-9 <= value <= 0.97 + 1e-9  # 27 of 30 is 90%, whatever the mean's rounding


def coverage_misses(results: dict, keys: list[str], *, fraction: float = 0.1, design: str = "uniform") -> list[str]:
    """Per grid, the interval coverages (``design``, item-response estimates, at ``fraction``)
    outside 90-97%, e.g. ``"imdb:zs instructions 88.0%, quantiles 86.0%"``; grids within it are left out.

    Where the scores count their intervals, each coverage also says how many of how many intervals
    covered and the two-sided binomial p-value of that count under a true 95% coverage: a grid's
    3 method means x 10 seeds cover all 30 with probability 0.21 when every interval is exact, so
    100% there is no evidence of intervals too wide, and 24 of 30 (p 0.003) is evidence of too
    narrow ones. The p-value treats the intervals as independent; the instructions of one draw are
    not (they share the fit), so for them it is only a guide.

        >>> s = Scores(1.0, 0.5, 0.5, 0.5, 1.0, 0.95, 0.8, 1.0, 0.1, intervals=(40, 3, 5))
        >>> coverage_misses({(0.1, "uniform", "a", "model"): [s] * 10}, ["a"])
        ['a methods 80.0% (24 of 30, p 0.0033), quantiles 100.0% (50 of 50, p 0.18)']
    """
    from scipy.stats import binomtest

    misses = []
    for key in keys:
        scores = results.get((fraction, design, key, "model"), [])
        if not scores:
            continue
        out = []
        for position, (field, name) in enumerate(COVERAGES.items()):
            value = _mean(scores, field)
            if _coverage_on_target(value):
                continue
            counted = [(getattr(s, field), s.intervals[position]) for s in scores if not np.isnan(getattr(s, field))]
            n = sum(count for _, count in counted)
            if n and all(count for _, count in counted):
                covered = int(round(sum(share * count for share, count in counted)))
                p = binomtest(covered, n, 0.95).pvalue
                out.append(f"{name} {value:.1%} ({covered} of {n}, p {p:.2g})")
            else:
                out.append(f"{name} {value:.1%}")
        if out:
            misses.append(f"{key} " + ", ".join(out))
    return misses


def allocation_gain(y: np.ndarray) -> float:
    """The most that spending a grid's cells where they are needed could cut an estimate's variance
    against spreading them evenly over the items: with ``v_j`` the variance of item j's outcomes
    across instructions (from the full grid: known to no run), an allocation in proportion to
    ``sqrt(v_j)`` (Neyman) against an even one,

        gain = mean(v_j) / mean(sqrt(v_j))^2   (>= 1; items every instruction answers alike raise it)

    An adaptive design at half the cells can match an even one only where the gain is at least 2.

    Example (half the items decided, the others coin flips across instructions):
        >>> y = np.array([[1, 0, 1, 1], [0, 1, 1, 1], [1, 1, 1, 1], [0, 0, 1, 1]], dtype=float)
        >>> allocation_gain(y)
        2.0
    """
    v = y.var(axis=0)
    root = float(np.sqrt(v).mean())
    return float(v.mean() / root**2) if root > 0 else float("inf")


TARGETS = {"method_mae": ("method MAE", 1.0), "quantile_mae": ("quantile MAE", 1.5)}  # at 10%, points


def reach_lines(results: dict, keys: list[str], *, fraction: float = 0.1, design: str = "balanced") -> list[str]:
    """For each grid and target its estimates miss, whether the reference ``simulated`` (the same
    design and estimator where the model holds exactly) misses it too: then these cells cannot carry
    the target; if not, the model's misfit to the real grid costs the difference.

    Example:
        >>> s = lambda method, quant: Scores(1.0, method, quant, 0.5, 1.0, 0.95, 0.95, 0.95, 0.1)
        >>> results = {(0.1, "balanced", "a", "model"): [s(1.6, 0.9)], (0.1, "balanced", "a", "simulated"): [s(1.2, 0.8)],
        ...            (0.1, "balanced", "b", "model"): [s(0.4, 1.9)], (0.1, "balanced", "b", "simulated"): [s(0.5, 1.1)]}
        >>> for line in reach_lines(results, ["a", "b"]): print(line)
        a: method MAE 1.60 > 1.0; simulated 1.20: misses too, the cells cannot carry it where the model holds exactly
        b: quantile MAE 1.90 > 1.5; simulated 1.10: within it, the model's misfit to this grid costs the difference
    """
    lines = []
    for key in keys:
        model, simulated = results.get((fraction, design, key, "model"), []), results.get((fraction, design, key, "simulated"), [])
        if not model or not simulated:
            continue
        for field, (name, target) in TARGETS.items():
            real, reference = _mean(model, field), _mean(simulated, field)
            if real > target:
                lines.append(f"{key}: {name} {real:.2f} > {target}; simulated {reference:.2f}: "
                             + ("misses too, the cells cannot carry it where the model holds exactly" if reference > target
                                else "within it, the model's misfit to this grid costs the difference"))
    return lines


TIE = 0.005  # accuracy points: MAEs closer than the table's precision count as equal


def _verdicts(results: dict, keys: list[str], gains: dict[str, float] | None = None) -> list[str]:
    """The targets of the module doc, per grid, from what was run: for the default design
    (``DEFAULT_DESIGN``) first and, when they were run, the adaptive, balanced and uniform ones (the adaptive design's rounds
    choose cells by their outcomes, so its method means are held against the balanced design's subset).
    Prints them and returns the lines printed."""
    from instructeval_tasks.sweep.budget import DEFAULT_DESIGN

    lines: list[str] = []

    def say(line: str) -> None:
        lines.append(line)
        print(line)

    at = lambda f, d, k, e: results.get((f, d, k, e), [])  # noqa: E731
    designs = [d for d in dict.fromkeys((DEFAULT_DESIGN, "adaptive", "balanced", "uniform")) if at(0.1, d, keys[0], "model")]
    for design in designs:
        say(f"targets at 10% ({design} design, the aggregation's estimates):")
        failures = []
        for key in keys:
            model, subset = at(0.1, design, key, "model"), at(0.1, design, key, "subset") or at(0.1, "balanced", key, "subset")
            mm, qm, sm = _mean(model, "method_mae"), _mean(model, "quantile_mae"), _mean(subset, "method_mae")
            # the subset's means come with the balanced or the design's own run: without them, not compared
            bad = [w for w, ok in (("method MAE > 1.0", mm <= 1.0), ("quantile MAE > 1.5", qm <= 1.5),
                                   ("method means worse than the subset's", np.isnan(sm) or mm <= sm + 1e-9)) if not ok]
            failures += [f"{key}: {w}" for w in bad]
        pooled = [s for k in keys for s in at(0.1, design, k, "model")]
        coverage = {name: _mean(pooled, field) for field, name in COVERAGES.items()}
        failures += [f"coverage of {name} {v:.1%} outside 90-97%" for name, v in coverage.items() if not _coverage_on_target(v)]
        say("  " + ("MET on every grid" if not failures else "NOT MET: " + "; ".join(failures)))
        misses = coverage_misses(results, keys, design=design)
        say("  per grid, coverage " + ("within 90-97% on every grid" if not misses else "outside 90-97%: " + "; ".join(misses)))
        say(f"  relative gain within the grid: MAE {_mean(pooled, 'gain_mae'):.2f} % of mu, coverage "
              f"{_mean(pooled, 'gain_coverage'):.1%}; difference to null: MAE {_mean(pooled, 'null_mae'):.2f} points, "
              f"coverage {_mean(pooled, 'null_coverage'):.1%} (pooled)")
        for key in keys:
            model, known = _mean(at(0.1, design, key, "model"), "method_mae"), _mean(at(0.1, design, key, "known-b"), "method_mae")
            if model > 1.0 and at(0.1, design, key, "known-b"):
                say(f"  {key}: method MAE {model:.2f}; the reference known-b (every item's effect known exactly) "
                      f"{known:.2f}: " + ("it misses too: the budget's unseen instruction x item interactions put the target "
                                           "out of an additive estimator's reach" if known > 1.0
                                          else "the model falls short of what the cells allow"))
        for line in reach_lines(results, keys, design=design):
            say("  " + line)
    for design in [d for d in designs if d != "adaptive"] if at(0.05, "adaptive", keys[0], "model") else ():
        # worse by at least the printed precision: 0.002 against 0.001 points is a tie
        worse = [key for key in keys
                 if _mean(at(0.05, "adaptive", key, "model"), "method_mae") > _mean(at(0.1, design, key, "model"), "method_mae") + TIE
                 or _mean(at(0.05, "adaptive", key, "model"), "quantile_mae") > _mean(at(0.1, design, key, "model"), "quantile_mae") + TIE]
        say(f"adaptive at 5% vs {design} at 10% (method and quantile MAE): "
              + ("at least as good on every grid" if not worse else f"worse on {len(worse)} of {len(keys)} grids: {', '.join(worse)}"))
        if worse and gains:
            below = [f"{key} {gains[key]:.2f}" for key in worse if gains[key] < 2]
            say("  the most a perfect allocation over items could cut the variance (allocation_gain, from the full "
                  "grid): " + ", ".join(f"{key} {gains[key]:.2f}" for key in worse)
                  + (f"; below 2 on {', '.join(below)}: there no design at 5% can match an even one at 10%" if below else ""))
    return lines


# ------------------------------------------------------------------------------------ every reported statistic


# the results' entries whose statistics are validated: the aggregation's estimator and the crossed
# model beside it (the harness reports' estimator); each Scores names its estimator
STATISTIC_ENTRIES = ("model", "item-resp")
# the statistics in the order the tables list them
STATISTIC_ORDER = ("instruction", "min", "median", "max", "stock_percentile", "avgp", "maxp", "minp", "spread", "cps",
                   "q05", "q25", "q50", "q75", "q95", "instruction_sd")


@dataclasses.dataclass(frozen=True)
class StatisticRow:
    """One statistic of one estimator, design and budget, pooled over the grids' runs (seeds):
    ``coverage`` is the share of all intervals that hold the full grid's value, ``grid_coverage`` each
    grid's share and ``worst_grid`` the grid of the lowest; ``bias`` and ``abs_error`` the runs' means
    (points); ``median_relative_bias`` (``instruction_sd`` only) the median of ``bias / truth`` over the
    runs whose full-grid value is at least ``RULE["sd_floor_points"]`` (None where none is);
    ``resolved`` is ``is_resolved``."""

    coverage: float
    grid_coverage: dict[str, float]
    worst_grid: str  # the grid with the smallest grid_p
    grid_p: dict[str, float]  # each grid's one-sided binomial p of its coverage being below RULE["grid_coverage_low"]
    bias: float
    abs_error: float
    width: float
    median_relative_bias: float | None
    runs: int
    resolved: bool

    @property
    def worst_grid_coverage(self) -> float:
        return self.grid_coverage[self.worst_grid]


def grid_p_value(covered: float, n: int, rule: dict | None = None) -> float:
    """The one-sided binomial p-value of ``covered`` hits in ``n`` intervals if the grid's coverage were
    ``RULE["grid_coverage_low"]``: small where the grid's coverage is below it.

    Example (10 intervals: 8 hits are no evidence against 85%, 5 are):
        >>> round(grid_p_value(8, 10), 3), round(grid_p_value(5, 10), 4)
        (0.456, 0.0099)
    """
    from scipy.stats import binom

    from instructeval_aggregation.budget_validity import RULE

    rule = RULE if rule is None else rule
    return float(binom.cdf(int(round(covered)), int(n), rule["grid_coverage_low"]))


def is_resolved(statistic: str, coverage: float, worst_grid_p: float, median_relative_bias: float | None,
                rule: dict | None = None) -> bool:
    """``budget_validity.RULE``: pooled coverage at least ``coverage_low`` (above ``coverage_high`` the
    intervals are conservative: still resolved), no grid whose coverage is below ``grid_coverage_low``
    with evidence (``worst_grid_p``, the smallest ``grid_p_value``, at least ``grid_evidence``), and for
    ``instruction_sd`` a median relative bias within ``sd_bias`` where any grid's SD is at least
    ``sd_floor_points`` (``median_relative_bias`` None: no such run, no bias condition).

    Example:
        >>> is_resolved("max", 0.93, 0.45, None), is_resolved("max", 0.99, 0.01, None)
        (True, False)
        >>> is_resolved("instruction_sd", 0.95, 0.5, -0.35), is_resolved("instruction_sd", 0.95, 0.5, -0.15)
        (False, True)
    """
    from instructeval_aggregation.budget_validity import RULE

    rule = RULE if rule is None else rule
    ok = coverage >= rule["coverage_low"] - 1e-9 and worst_grid_p >= rule["grid_evidence"] - 1e-12
    if statistic == "instruction_sd" and median_relative_bias is not None:
        ok = ok and abs(median_relative_bias) <= rule["sd_bias"] + 1e-9
    return bool(ok)


def statistic_row(statistic: str, by_grid: dict[str, list[StatisticCheck]], rule: dict | None = None) -> StatisticRow:
    """The pooled row of one statistic from each grid's runs (``StatisticRow``)."""
    from instructeval_aggregation.budget_validity import RULE

    rule = RULE if rule is None else rule
    checks = [c for runs in by_grid.values() for c in runs]
    share = lambda runs: sum(c.covered * c.n for c in runs) / sum(c.n for c in runs)  # noqa: E731
    grid_coverage = {key: float(share(runs)) for key, runs in sorted(by_grid.items())}
    grid_p = {key: grid_p_value(sum(c.covered * c.n for c in runs), sum(c.n for c in runs), rule)
              for key, runs in sorted(by_grid.items())}
    worst = min(grid_p, key=lambda key: (grid_p[key], grid_coverage[key], key))
    relative = [c.bias / c.truth for c in checks if statistic == "instruction_sd" and c.truth >= rule["sd_floor_points"]]
    median_relative = float(np.median(relative)) if relative else None
    coverage = float(share(checks))
    return StatisticRow(coverage, grid_coverage, worst, grid_p, float(np.mean([c.bias for c in checks])),
                        float(np.mean([c.abs_error for c in checks])), float(np.mean([c.width for c in checks])),
                        median_relative, len(checks),
                        is_resolved(statistic, coverage, grid_p[worst], median_relative, rule))


def statistic_table(results: dict, keys: list[str] | None = None) -> dict[tuple[str, str, float, str], StatisticRow]:
    """``(estimator, design, budget, statistic) -> StatisticRow`` over the grids ``keys`` (default all),
    the estimator by its registered name (``Scores.estimator``: the label scores' model where a grid has
    them, ``item-response`` on every grid), in the tables' order."""
    from instructeval_tasks.estimation import ESTIMATORS

    groups: dict[tuple[str, str, float, str], dict[str, list[StatisticCheck]]] = {}
    for (fraction, design, key, entry), scores in results.items():
        if entry not in STATISTIC_ENTRIES or (keys is not None and key not in keys):
            continue
        for s in scores:
            for statistic, check in s.statistics.items():
                groups.setdefault((s.estimator, design, fraction, statistic), {}).setdefault(key, []).append(check)
    names = list(ESTIMATORS)[::-1]  # item-response first: it serves every grid and the harness reports
    designs = list(dict.fromkeys(design for (_, design, _, _) in groups))

    def order(group: tuple[str, str, float, str]) -> tuple:
        estimator, design, fraction, statistic = group
        return (names.index(estimator) if estimator in names else len(names), estimator, designs.index(design),
                STATISTIC_ORDER.index(statistic) if statistic in STATISTIC_ORDER else len(STATISTIC_ORDER), statistic,
                fraction)

    return {group: statistic_row(group[3], groups[group]) for group in sorted(groups, key=order)}


def budget_key(fraction: float) -> str:
    """A budget as ``budget_validity.json`` keys it: ``0.05``, ``0.1``, ``0.25``."""
    return f"{fraction:g}"


def validity_document(table: dict[tuple[str, str, float, str], StatisticRow], *, stamp: str, command: str,
                      settings: dict) -> dict:
    """``aggregation/budget_validity.json`` (``budget_validity``'s module doc): the commit measured, the
    command, the settings, ``budget_validity.RULE`` and, per estimator, design, budget and statistic,
    the pooled coverage, the worst grid's, the SD's median relative bias and ``resolved``."""
    from instructeval_aggregation.budget_validity import RULE

    resolved: dict[str, dict[str, dict[str, dict[str, dict]]]] = {}
    for (estimator, design, fraction, statistic), row in table.items():
        resolved.setdefault(estimator, {}).setdefault(design, {}).setdefault(budget_key(fraction), {})[statistic] = {
            "coverage": round(row.coverage, 4), "worst_grid_coverage": round(row.worst_grid_coverage, 4),
            "worst_grid_p": round(row.grid_p[row.worst_grid], 4),
            "worst_grid": row.worst_grid,
            "median_relative_bias": None if row.median_relative_bias is None else round(row.median_relative_bias, 4),
            "resolved": row.resolved}
    return {"measured_at": stamp, "command": command,
            "settings": {k: v for k, v in settings.items() if k != "caches"}, "rule": dict(RULE), "resolved": resolved}


STATISTIC_COLUMNS = ("statistic", "budget", "coverage", "worst grid", "bias", "abs err", "SD rel. bias", "width",
                     "runs", "resolved")

STATISTIC_LEGEND = """\
Every statistic a report gives for a budgeted grid, computed draw by draw from the estimator's
predictive draws (`aggregation/draw_statistics.py`: the estimate is the draws' median, the 95%
interval their 2.5 and 97.5% quantiles), against the same statistic of the full grid's exact
accuracies:

- **instruction**: each estimated instruction's accuracy (the fully evaluated null instruction is
  exact and not counted); **min**, **median**, **max**: across the instructions other than the stock
  (null) one; **stock_percentile**: the stock score's mid-rank percentile among them (in percent);
  **avgp**, **maxp**, **minp**, **spread**, **cps**, **q05** ... **q95**: the sensitivity card's
  measures over every instruction; **instruction_sd**: the instruction-effect SD beyond item noise
  (`sensitivity_measures.instruction_effect_sd`), from draws of the whole grid
  (`item_response.predictive_grids`). The label scores' fit (`choice scores`) draws accuracies, not
  whole grids: it has no instruction_sd row.
- **coverage**: the share of the 95% intervals, over every grid and seed (and instruction), that
  hold the full grid's value; **worst grid**: the coverage and name of the grid with the strongest
  evidence of a coverage below {grid:.0%} (the smallest one-sided binomial p-value of its intervals' hits).
- **bias**: the mean of estimate minus full-grid value (accuracy points; percentile points for
  stock_percentile); **abs err**: its mean absolute value; **SD rel. bias**: instruction_sd's median
  of bias / full-grid value over the runs whose full-grid SD is at least {floor:g} point (`-`: none);
  **width**: the intervals' mean width; **runs**: the grid x seed runs pooled.
- **resolved** (`aggregation/budget_validity.py`, `RULE`): pooled coverage at least {low:.0%}, no grid
  whose coverage is below {grid:.0%} with evidence (one-sided binomial p < {ev:g} of its hits), and for
  instruction_sd the median relative bias within +-{sd:.0%};
  a coverage above {high:.0%} is still resolved but conservative (marked *wide*). A report prints a
  statistic at a budget only where this table resolves it (`aggregation/budget_validity.json`,
  written with this page by `--write-validity`), and says `not resolved` elsewhere."""


def statistic_summary_lines(table: dict[tuple[str, str, float, str], StatisticRow]) -> list[str]:
    """Per estimator, design and budget: which statistics are resolved (a Markdown table)."""
    lines = ["| estimator | design | budget | resolved | not resolved |", "|:---|:---|---:|:---|:---|"]
    cells: dict[tuple[str, str, float], tuple[list[str], list[str]]] = {}
    for (estimator, design, fraction, statistic), row in table.items():
        yes, no = cells.setdefault((estimator, design, fraction), ([], []))
        (yes if row.resolved else no).append(statistic)
    for (estimator, design, fraction), (yes, no) in cells.items():  # in the table's order
        lines.append(f"| {estimator} | {design} | {fraction:.0%} | {', '.join(yes) or '-'} | {', '.join(no) or '-'} |")
    return lines


def statistic_table_lines(table: dict[tuple[str, str, float, str], StatisticRow], estimator: str, design: str,
                          rule: dict | None = None) -> list[str]:
    """One estimator's and design's rows (statistic x budget) as a Markdown table."""
    from instructeval_aggregation.budget_validity import RULE

    rule = RULE if rule is None else rule
    lines = ["| " + " | ".join(STATISTIC_COLUMNS) + " |",
             "|" + "|".join(":---" if c in ("statistic", "worst grid", "resolved") else "---:" for c in STATISTIC_COLUMNS) + "|"]
    for (name, d, fraction, statistic), row in table.items():
        if name != estimator or d != design:
            continue
        wide = " *wide*" if row.coverage > rule["coverage_high"] + 1e-9 else ""
        relative = "-" if row.median_relative_bias is None else f"{row.median_relative_bias:+.0%}"
        lines.append(f"| {statistic} | {fraction:.0%} | {row.coverage:.1%}{wide} | {row.worst_grid_coverage:.0%} "
                     f"({row.worst_grid}) | {row.bias:+.2f} | {row.abs_error:.2f} | "
                     f"{relative if statistic == 'instruction_sd' else ''} | {row.width:.2f} | {row.runs} | "
                     f"{'yes' if row.resolved else 'no'} |")
    return lines


def grid_rule_chance(seeds: int, grids: int, rule: dict | None = None) -> tuple[float, float]:
    """The chance that intervals of exactly 95% coverage fail the rule's per-grid condition (their
    hits' binomial p-value against ``grid_coverage_low`` below ``grid_evidence``) on one grid of
    ``seeds`` runs of one statistic, and on at least one of ``grids`` grids (runs independent): how
    often a statistic whose intervals are right is called not resolved by the per-grid condition alone.

    Example (10 seeds: 6 of 10 or fewer fail):
        >>> [round(p, 4) for p in grid_rule_chance(10, 13)]
        [0.001, 0.0133]
    """
    from scipy.stats import binom

    fail = [k for k in range(seeds + 1) if grid_p_value(k, seeds, rule) < (rule or {}).get("grid_evidence", 0.05)]
    one = float(binom.cdf(max(fail), seeds, 0.95)) if fail else 0.0
    return one, 1.0 - (1.0 - one) ** grids


def statistic_section(table: dict[tuple[str, str, float, str], StatisticRow], settings: dict | None = None) -> list[str]:
    """The page's first section: which statistics each design resolves, then every row."""
    from instructeval_aggregation.budget_validity import RULE

    lines = ["## Every reported statistic", "",
             STATISTIC_LEGEND.format(floor=RULE["sd_floor_points"], low=RULE["coverage_low"], high=RULE["coverage_high"],
                                     grid=RULE["grid_coverage_low"], ev=RULE["grid_evidence"], sd=RULE["sd_bias"]), ""]
    if settings:
        one, some = grid_rule_chance(settings["seeds"], len(settings["grids"]))
        lines += [f"With {settings['seeds']} seeds a grid's coverage of one statistic counts {settings['seeds']} "
                  f"intervals: intervals that hold the full grid's value exactly 95% of the time fail the per-grid "
                  f"condition on a grid with probability {one:.1%}, and on at least one of "
                  f"{len(settings['grids'])} grids with probability {some:.1%}: the per-grid condition asks for "
                  "evidence of a coverage below it, not for each grid's few intervals to clear it.", ""]
    lines += ["### Resolved where", "", *statistic_summary_lines(table), ""]
    for estimator, design in dict.fromkeys((e, d) for (e, d, _, _) in table):
        lines += [f"### {estimator}, {design} design", "", *statistic_table_lines(table, estimator, design), ""]
    return lines


# ------------------------------------------------------------------------------------ the page


UNKNOWN_COMMIT = "an unknown commit (not a git checkout)"


def page_command(script: str, argv: list[str]) -> str:
    """The command line a generated page quotes: ``python benchmarks/<script> ...``, an absolute path
    argument made relative to the current folder (a page names no folder of the machine it ran on).

        >>> page_command("x.py", ["--out", str(Path.cwd() / "runs" / "a.json")])
        'python benchmarks/x.py --out runs/a.json'
        >>> page_command("x.py", ["--run", f"m={Path.cwd() / 'a'},{Path.cwd() / 'b'}"])
        'python benchmarks/x.py --run m=a,b'
    """
    def relative(path: str) -> str:  # a path in the clone as from its root (where the commands run), else from here
        inside = Path(path).resolve().is_relative_to(ROOT)
        return str(Path(path).resolve().relative_to(ROOT)) if inside else os.path.relpath(path)

    def portable(arg: str) -> str:  # NAME=PATH,PATH arguments too
        return re.sub(r"(?<![\w.~])(/[^,=\s]+)", lambda m: relative(m.group(1)), arg)

    return shlex.join(["python", f"benchmarks/{script}", *(portable(a) for a in argv)])


def git_stamp(root: Path = ROOT) -> str:
    """The commit a run measures: ``git rev-parse --short HEAD``, followed by ``with uncommitted
    changes`` where tracked files differ from it (``git status --porcelain --untracked-files=no``);
    ``UNKNOWN_COMMIT`` outside one."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except OSError:  # no git program
        return UNKNOWN_COMMIT
    if head.returncode != 0 or not head.stdout.strip():
        return UNKNOWN_COMMIT
    return head.stdout.strip() + (" with uncommitted changes" if dirty.stdout.strip() else "")


def table_rows(results: dict, budgets: list[float], designs: list[str], keys: list[str]):
    """``(fraction, grid, design, estimator, scores)`` of every row of the table, in the printed
    order: per budget and design, each grid's estimators, then every estimator pooled ("all grids")."""
    for fraction in budgets:
        for design in designs:
            for key in keys:
                for name in ESTIMATORS:
                    if (fraction, design, key, name) in results:
                        yield fraction, key, design, name, results[(fraction, design, key, name)]
            for name in ESTIMATORS:
                pooled = [s for (f, d, k, e), scores in results.items()
                          if f == fraction and d == design and e == name and k in keys for s in scores]
                if pooled:
                    yield fraction, "all grids", design, name, pooled


FULL_COMMAND = ("python benchmarks/budget_validation.py --write-page docs/validation/budget.md "
                "--write-validity aggregation/budget_validity.json")

LEGEND = """\
- **estimator**: `model` is the aggregation's estimator (the label scores' model where a grid has
  them, else the crossed item-response model); `item-resp` the crossed model on the same cells,
  beside it; `subset` each instruction's plain mean on its own cells (not for the designs whose
  rounds choose cells by their outcomes); `known-b` and `simulated` the references of the script's
  docstring.
- **instr**, **method**, **quant**: mean absolute error of the instructions' accuracies, of the
  method means and of the 5/25/50/75/95% quantiles across instructions, in accuracy points; the
  fully evaluated methods (`--budget-full-methods`) are exact and not counted.
- **rho**: Spearman correlation of the estimated and the exact ranking of the instructions;
  **regret**: the exact best accuracy minus the exact accuracy of the instruction estimated best.
- **cov i/m/q**: the share of exact values inside their 95% interval (instructions, method means,
  quantiles); **share**: the share of the grid's cells evaluated.
- **gain%**, **vsnull**: mean absolute error of each method's relative gain within the grid (% of mu)
  and of its difference to null (points); **cov g/n**: their intervals' coverage."""


def validation_page(results: dict, *, settings: dict, command: str, stamp: str, verdicts: list[str],
                    seconds: float | None = None, full: bool = False, date: str | None = None,
                    statistics: dict | None = None, reduced: list[str] | None = None,
                    parts: list[dict] | None = None) -> str:
    """The table and the verdicts of a run as a Markdown page of the documentation site, stamped with
    the commit measured (``git_stamp``) and the command that made it. ``settings``: ``seeds``,
    ``budgets``, ``designs``, ``grids`` (keys, in order), ``draws``, ``min_items``, ``full_methods``,
    ``simulated``, ``caches`` (one description each). ``statistics`` (``statistic_table``) comes first,
    as the page's answer. A run smaller than the benchmark's defaults (``full`` false) says so, how
    (``reduced``: one phrase per difference, ``reductions``), and gives the command of the full one.
    A page merged from saved runs (``--from-results``) lists each of its ``parts`` (``stamp``,
    ``command``, ``grids``, ``seconds``) with the command that merged them (``command``)."""
    date = date or datetime.date.today().isoformat()
    took = f", in {seconds:.0f} s" if seconds is not None else ""

    def commit_of(stamp: str) -> str:
        head, _, dirty = stamp.partition(" ")
        return stamp if stamp == UNKNOWN_COMMIT else f"commit `{head}`" + (f" {dirty}" if dirty else "")

    budgets = ", ".join(f"{b:.0%}" for b in settings["budgets"])
    full_methods = ",".join(settings["full_methods"]) or "''"
    lines = ["# Budgeted estimates against full grids", "",
             "*Generated by `benchmarks/budget_validation.py --write-page`: edit the script or rerun it, not this page.*", ""]
    if parts:
        lines += [f"Measured on {date} by {'the first command' if len(parts) == 1 else f'the first {len(parts)} commands'}"
                  " (their runs saved); the last writes this page from them:", ""]
        lines += [f"- {commit_of(part['stamp'])}, grids {', '.join(part['grids'])}"
                  + (f", in {part['seconds']:.0f} s" if part.get("seconds") is not None else "") for part in parts]
        lines += ["", "```bash", *(part["command"] for part in parts), command, "```", ""]
    else:
        lines += [f"Measured at {commit_of(stamp)} on {date}{took}, by", "", "```bash", command, "```", ""]
    lines += [f"**Settings:** {settings['seeds']} seed{'s' if settings['seeds'] != 1 else ''} per budget and design; "
              f"budgets {budgets}; designs {', '.join(settings['designs'])}; grids {', '.join(settings['grids'])}; "
              f"{settings['draws']} predictive draws per fit; `--budget-min-items {settings['min_items']}`; "
              f"`--budget-full-methods {full_methods}`; the reference `simulated` "
              f"{'on' if settings['simulated'] else 'off'}.", "",
              "**Full grids:** " + "; ".join(settings["caches"]) + " (`benchmarks/data`).", ""]
    if full:
        lines += ["To regenerate this page, rerun its command.", ""]
    else:
        how = (f"This run is reduced from the benchmark's defaults: {'; '.join(reduced)}." if reduced else
               "These settings are smaller than the benchmark's defaults: the table is a sample of the "
               "validation, not its result (a single seed's errors and coverages vary far more than their "
               "means over seeds).")
        lines += ['!!! note "A reduced run"',
                  f"    {how} The full table (every cache, budgets "
                  + ", ".join(f"{b:.0%}" for b in DEFAULTS["budgets"]) + ", the "
                  + ", ".join(DEFAULTS["designs"]) + f" designs, {DEFAULTS['seeds']} seeds, {DEFAULTS['draws']} draws, "
                  "the reference `simulated`) takes several CPU hours:", "",
                  "    ```bash", f"    {FULL_COMMAND}", "    ```", ""]
    if statistics:
        lines += statistic_section(statistics, settings)
    lines += ["## The table", "", LEGEND, ""]
    lines.append("| " + " | ".join(COLUMNS) + " |")
    lines.append("|" + "|".join("---:" if align == ">" else ":---" for _, align in COLUMNS.values()) + "|")
    for fraction, key, design, name, scores in table_rows(results, settings["budgets"], settings["designs"],
                                                          settings["grids"]):
        cells = [" ".join(cell.split()).replace(" /", "/").replace("/ ", "/")
                 for cell in row_cells(fraction, key, design, name, scores)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Targets", "", "```text", *verdicts, "```", ""]
    return "\n".join(lines)


def reductions(settings: dict, shipped: list[str]) -> list[str]:
    """How a run's ``settings`` fall short of the benchmark's defaults (``DEFAULTS``, every grid of
    ``shipped``), one phrase each; empty for a full run.

    Example:
        >>> reductions({"seeds": 10, "draws": 200, "simulated": False, "budgets": [0.05, 0.1, 0.25],
        ...             "designs": ["uniform", "balanced", "adaptive"], "grids": ["a"]}, ["a", "b"])
        ['200 predictive draws per fit instead of 300', "the reference `simulated` off (it doubles the time; only the targets' section uses it)", 'grids a (of a, b)']
    """
    out = []
    if settings["seeds"] < DEFAULTS["seeds"]:
        out.append(f"{settings['seeds']} seeds instead of {DEFAULTS['seeds']}")
    if settings["draws"] < DEFAULTS["draws"]:
        out.append(f"{settings['draws']} predictive draws per fit instead of {DEFAULTS['draws']}")
    if not settings["simulated"]:
        out.append("the reference `simulated` off (it doubles the time; only the targets' section uses it)")
    missing = [f"{b:.0%}" for b in DEFAULTS["budgets"] if b not in settings["budgets"]]
    if missing:
        out.append(f"budgets without {', '.join(missing)}")
    missing = [d for d in DEFAULTS["designs"] if d not in settings["designs"]]
    if missing:
        out.append(f"designs without {', '.join(missing)}")
    if set(shipped) - set(settings["grids"]):
        out.append(f"grids {', '.join(settings['grids'])} (of {', '.join(shipped)})")
    return out


def _is_full_run(args: argparse.Namespace, budgets: list[float], designs: list[str]) -> bool:
    """Whether a run covers at least the benchmark's defaults (``DEFAULTS``)."""
    return (args.cache is None and not args.grids and args.seeds >= DEFAULTS["seeds"] and args.draws >= DEFAULTS["draws"]
            and args.simulated and set(DEFAULTS["budgets"]) <= set(budgets) and set(DEFAULTS["designs"]) <= set(designs))


if __name__ == "__main__":
    sys.exit(main())
