"""``aggregate(runset) -> Aggregates``: from validated variants to every table of the report.

Steps (each in its own module): primary metric per (model, task) and per-instruction metrics
(``per_instruction``), item matrices from per-sample logs (``samples``), relative gains and cell
means (``relative_gain``), model families and sizes (``registry``), bootstrap intervals and paired
tests (``bootstrap``), and the tables (``summaries``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from .bootstrap import bootstrap_cells, paired_tests
from .budgeted import DEFAULT_ESTIMATE_DRAWS, BudgetEstimates, estimate_budgeted, is_budgeted, maxp_from_draws
from .estimate_marks import mark_estimates
from .catalog import ACCURACY_METRICS, GENERATION_METRICS, METRIC_TITLES, SENSITIVITY_METRICS, order_methods, order_tasks
from .issues import AggregationError, Issue, IssueLog
from .records import RunInfo, RunSet
from .per_instruction import choose_metrics, per_instruction
from .registry import Registry, resolve_models
from .relative_gain import accuracy_long, gain_cells, relative_gains, sensitivity_long, two_level_mean
from .samples import ItemMatrix, build_item_matrix
from .sensitivity_card import build_cards
from .summaries import grouped_cells, grouped_table, main_table, range_table, significance_table, type_averages, wins_table
from .tables import Table


@dataclass(frozen=True)
class AggregateOptions:
    """Knobs of the aggregation (CLI flags of the same names).

    Attributes:
        metric: primary metric of CLS/MCQ tasks (``acc_per_token``, ``acc``, ``acc_norm``); default:
            ``acc_per_token`` when every variant of the (model, task) has it, else ``acc``.
        gqa_metric: primary metric of generation tasks.
        null_weight: weight of the null instruction in the baseline mu (original: 5).
        ddof: delta degrees of freedom of the sensitivities' SD (1: sample SD, as the original).
        scale_threshold_b: billions of parameters splitting small from big models (paper: 6).
        model_registries: extra registry YAML files (tried before the built-in one).
        n_boot: bootstrap replicates (0: no intervals or tests).
        ci_level: confidence level of the intervals.
        seed: string seed of every resampling (recorded in the outputs).
        alpha: significance level of the "A beats B" summary tables.
        tie_tolerance: values this close to the best are tied (bold and shared wins).
        decimals: decimals printed in Markdown/LaTeX.
        strict: warnings count as errors (raise before anything is written).
        use_samples: read per-sample logs (intervals, tests, worst-case accuracy).
        estimate_draws: predictive draws of the budgeted sweeps' estimates, for their intervals (0: none).
        estimate_method_effect: the budgeted sweeps' estimators have a method effect (``budgeted.py``).
    """

    metric: str | None = None
    gqa_metric: str = "quasi_exact_match"
    null_weight: float = 5.0
    ddof: int = 1
    scale_threshold_b: float = 6.0
    model_registries: tuple[str, ...] = ()
    n_boot: int = 1000
    ci_level: float = 0.95
    seed: str = "instructeval"
    alpha: float = 0.05
    tie_tolerance: float = 1e-9
    decimals: int = 3
    strict: bool = False
    use_samples: bool = True
    estimate_draws: int = DEFAULT_ESTIMATE_DRAWS
    estimate_method_effect: bool = True

    def validate(self) -> None:
        if self.metric not in (None, "acc_per_token", "acc", "acc_norm"):
            raise AggregationError(f"--metric {self.metric!r}: expected acc_per_token, acc or acc_norm")
        if self.null_weight <= 0 or not math.isfinite(self.null_weight):
            raise AggregationError("--null-weight must be a positive number")
        if self.ddof not in (0, 1):
            raise AggregationError("--ddof must be 0 or 1")
        if not 0 < self.ci_level < 1:
            raise AggregationError("--ci-level must be in (0, 1)")
        if self.n_boot < 0 or 0 < self.n_boot < 10:
            raise AggregationError("--bootstrap must be 0 (off) or at least 10")
        if not 0 < self.alpha < 1:
            raise AggregationError("--alpha must be in (0, 1)")
        if self.gqa_metric not in GENERATION_METRICS:
            raise AggregationError(f"--gqa-metric {self.gqa_metric!r}: expected {', '.join(GENERATION_METRICS)}")
        if not self.scale_threshold_b > 0 or not math.isfinite(self.scale_threshold_b):
            raise AggregationError("--scale-threshold must be a positive number of billions of parameters")
        if not self.tie_tolerance >= 0 or not math.isfinite(self.tie_tolerance):
            raise AggregationError("--tie-tolerance must be a number >= 0")
        if not 0 <= self.decimals <= 12:
            raise AggregationError("--decimals must be between 0 and 12")
        if self.estimate_draws < 0 or 0 < self.estimate_draws < 10:
            raise AggregationError("--estimate-draws must be 0 (off) or at least 10")
        from .registry import Registry

        Registry.load(self.model_registries)  # a bad --model-registry is an error whatever the inputs hold


@dataclass
class Aggregates:
    """Everything the report shows, as pandas DataFrames (fractions in ``instructions``; % elsewhere).

    Attributes:
        variants: one row per variant used.
        metric_choice: the primary metric of each (model, task).
        models: family, parameters, scale group of each model and where they came from.
        instructions: per (model, task, method, instruction): zero_shot, few_shot, perturbed,
            worst_case (accuracies), selectional, permutational (SDs), counts.
        baselines: mu per (metric, model, task).
        gains: relative gain per (metric, model, task, method, instruction).
        cells: every table cell in long form: kind (gain, sensitivity, avgp, maxp), metric, task,
            method, value, n_models, n_instructions, ci_low, ci_high.
        ci: bootstrap intervals per gain cell (None without per-sample logs or with n_boot=0).
        significance: paired tests per (metric, task, method pair) (None likewise).
        wins: the winners of every task column of every main table.
        tables: named :class:`~instructeval_aggregation.tables.Table` objects, in report order.
    """

    options: AggregateOptions
    runs: list[RunInfo]
    issues: list[Issue]
    variants: pd.DataFrame
    metric_choice: pd.DataFrame
    models: pd.DataFrame
    instructions: pd.DataFrame
    baselines: pd.DataFrame
    gains: pd.DataFrame
    cells: pd.DataFrame
    ci: pd.DataFrame | None
    significance: pd.DataFrame | None
    wins: pd.DataFrame
    tables: dict[str, Table] = field(default_factory=dict)
    samples_note: str = ""
    item_matrices: dict = field(default_factory=dict, repr=False)  # (model, task) -> ItemMatrix
    leaderboard: Any = None  # a leaderboard.LeaderboardComparison when the inputs hold stock results
    budget: BudgetEstimates | None = None  # estimates of budgeted sweeps (instructeval run --budget)
    cards: list = field(default_factory=list)  # sensitivity_card.SensitivityCard per (model, task, setting)
    harness: Any = None  # a harness_effects.HarnessEffects when the inputs hold --harness-tasks results
    ni: Any = None  # an ni_report.NIReport when the inputs hold Natural Instructions variants
    runset: Any = field(default=None, repr=False)  # the RunSet aggregated (sections.collect: the leaderboard's)

    def table(self, name: str) -> pd.DataFrame:
        """The numeric frame of one table (e.g. ``"gain_few_shot"``)."""
        return self.tables[name].frame

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary of the nine tasks' part: options (with the seed), counts, issues, runs
        (``sections.summary_of`` adds every section's part: what ``summary.json`` holds)."""
        return self._summary()

    def _summary(self) -> dict[str, Any]:
        return {
            "options": {**asdict(self.options), "model_registries": list(self.options.model_registries)},
            "models": sorted(self.models["model"]) if not self.models.empty else [],
            "tasks": order_tasks(set(self.instructions["task"])) if not self.instructions.empty else [],
            "methods": order_methods(set(self.instructions["method"])) if not self.instructions.empty else [],
            "n_variants": int(len(self.variants)),
            "n_instructions": int(len(self.instructions)),
            "samples": self.samples_note,
            "issues": [i.as_dict() for i in self.issues],
            "runs": [
                {
                    "file": r.file,
                    "model": r.model,
                    "n_variants": r.n_variants,
                    "tasks": list(r.tasks),
                    "profile": r.profile,
                    "sweep": dict(r.sweep),
                    "lm_eval_version": r.lm_eval_version,
                    "plugin_version": r.plugin_version,
                    "limit": r.limit,
                }
                for r in self.runs
            ],
        }


GAIN_NOTE = "Mean relative gain (%) = mean over models of the mean over the method's instructions of 100 (s - mu) / mu."


def empty_aggregates(options: AggregateOptions, runset: RunSet, issues: IssueLog) -> Aggregates:
    """No InstructEval variant: every frame empty (with its columns), no tables."""
    from .per_instruction import INSTRUCTION_COLUMNS

    empty = pd.DataFrame
    return Aggregates(
        options=options, runs=list(runset.runs), issues=issues.sorted(), variants=empty(), runset=runset,
        metric_choice=empty(columns=["model", "task", "metric"]), models=empty(columns=["model"]),
        instructions=empty(columns=INSTRUCTION_COLUMNS), baselines=empty(columns=["status"]), gains=empty(),
        cells=empty(columns=["kind", "metric", "task", "method", "value", "n_models", "n_instructions", "ci_low", "ci_high"]),
        ci=None, significance=None, wins=empty(), tables={}, samples_note="no InstructEval variants",
    )


def aggregate(runset: RunSet, options: AggregateOptions | None = None, *, allow_empty: bool = False,
              **overrides: Any) -> Aggregates:
    """Compute every table from a :class:`RunSet` (see the package docstring for the formulas).

    Keyword ``overrides`` replace fields of ``options`` (e.g. ``aggregate(rs, null_weight=1)``).
    ``allow_empty``: with no InstructEval variant, return empty aggregates instead of raising (the
    CLI, when the inputs hold harness-task results).

    Raises:
        AggregationError: no usable variant; a bad option; with ``strict``, any warning or error.
    """
    options = options or AggregateOptions()
    if overrides:
        options = AggregateOptions(**{**asdict(options), **overrides})
    options.validate()
    issues = IssueLog()
    issues.extend(runset.issues.items)
    variants = list(runset.variants)
    if not variants and allow_empty:  # e.g. only lm-eval's own tasks (harness_report adds them)
        if options.strict:  # else a dropped file is listed (exit 3), the harness-task results still written
            issues.raise_if(strict=True)
        return empty_aggregates(options, runset, issues)
    if not variants:
        issues.raise_if(strict=options.strict)
        raise AggregationError("no InstructEval variants to aggregate", issues.sorted())
    metric_of = choose_metrics(variants, issues, choice_metric=options.metric, gqa_metric=options.gqa_metric)
    variants = [v for v in variants if metric_of.get((v.model, v.task)) in v.metrics]  # minus those it dropped
    if not variants:
        raise AggregationError("no InstructEval variant left to aggregate:\n" + "\n".join(f"  - {i}" for i in issues.sorted()), issues.sorted())
    _check_ddof(variants, options, issues)
    if not options.use_samples and any(is_budgeted(v) for v in variants):
        raise AggregationError("budgeted sweeps (run --budget) are estimated from their per-sample logs: drop --no-samples")
    variants, budget = estimate_budgeted(variants, metric_of, issues, n_boot=options.estimate_draws, level=options.ci_level,
                                         seed=options.seed, method_covariate=options.estimate_method_effect,
                                         null_weight=options.null_weight)
    if not variants:
        raise AggregationError("no InstructEval variant left to aggregate:\n" + "\n".join(f"  - {i}" for i in issues.sorted()), issues.sorted())

    matrices, samples_note = _item_matrices(variants, metric_of, options, issues)
    instructions = per_instruction(variants, metric_of, issues, ddof=options.ddof, item_matrices=matrices)
    if budget is not None:  # which of each row's settings are item-response estimates (data/instructions.csv)
        marked: dict[tuple, set[str]] = {}
        for v in variants:
            if v.estimated:
                marked.setdefault((v.model, v.task, v.method, v.instruction), set()).add(v.setting)
        keys = zip(instructions["model"], instructions["task"], instructions["method"], instructions["instruction"])
        instructions["estimated"] = [",".join(sorted(marked.get(k, ()))) for k in keys]
    gains, baselines = relative_gains(instructions, issues, null_weight=options.null_weight)

    gain = gain_cells(gains)
    gain["kind"] = "gain"
    sens_long = sensitivity_long(instructions)
    sens = two_level_mean(sens_long, "value")
    sens["kind"] = "sensitivity"
    acc_long = accuracy_long(instructions)
    avgp = two_level_mean(acc_long, "value")
    avgp["kind"] = "avgp"
    maxp = two_level_mean(acc_long, "value", how="max")
    maxp, maxp_notes = maxp_from_draws(maxp, acc_long, budget, options.ci_level)  # a budgeted grid's best from its draws
    for note in maxp_notes:
        issues.warn("budget", note)
    maxp["kind"] = "maxp"

    registry = Registry.load(options.model_registries)
    model_info: dict[str, dict[str, list]] = {}
    for v in variants:
        info = model_info.setdefault(v.model, {"pretrained": [], "model_num_parameters": []})
        info["pretrained"].append(v.pretrained)
        info["model_num_parameters"].append(v.model_num_parameters)
    models = resolve_models(model_info, registry, issues, threshold_b=options.scale_threshold_b)

    ci = significance = None
    replicates: dict = {}
    gain_metrics = [m for m in ACCURACY_METRICS if m in set(gain["metric"])]
    if matrices and options.n_boot > 0:
        ci, replicates = bootstrap_cells(
            matrices,
            gain,
            gains,
            issues,
            metrics=gain_metrics,
            n_boot=options.n_boot,
            level=options.ci_level,
            seed=options.seed,
            null_weight=options.null_weight,
        )
        significance = paired_tests(gain, replicates, level=options.ci_level)
    cells = pd.concat([gain, sens, avgp, maxp], ignore_index=True)
    if ci is not None:
        cells = cells.merge(ci[["metric", "task", "method", "ci_low", "ci_high"]].assign(kind="gain"), on=["kind", "metric", "task", "method"], how="left")
    else:
        cells["ci_low"] = math.nan
        cells["ci_high"] = math.nan
    cells = cells[["kind", "metric", "task", "method", "value", "n_models", "n_instructions", "ci_low", "ci_high"]]
    cells = _sorted_cells(cells)

    tables, wins = _build_tables(options, gain, gains, sens, sens_long, avgp, maxp, acc_long, models, ci, significance)
    if budget is not None:
        mark_estimates(tables, budget.estimated)
    metric_choice = pd.DataFrame(
        [{"model": m, "task": t, "metric": metric_of[(m, t)]} for m, t in sorted(metric_of)], columns=["model", "task", "metric"]
    )
    result = Aggregates(
        options=options,
        runs=list(runset.runs),
        issues=issues.sorted(),
        variants=RunSet(variants, [], IssueLog()).frame(),
        metric_choice=metric_choice,
        models=models,
        instructions=instructions,
        baselines=baselines,
        gains=gains,
        cells=cells,
        ci=ci,
        significance=significance,
        wins=wins,
        tables=tables,
        samples_note=samples_note,
        item_matrices=matrices,
        budget=budget,
        runset=runset,
    )
    result.cards = build_cards(result)
    if options.strict:
        issues.raise_if(strict=True)
    return result


def _sorted_cells(cells: pd.DataFrame) -> pd.DataFrame:
    kind_order = {"gain": 0, "sensitivity": 1, "avgp": 2, "maxp": 3}
    metric_order = {m: i for i, m in enumerate(ACCURACY_METRICS + SENSITIVITY_METRICS)}
    task_order = {t: i for i, t in enumerate(order_tasks(set(cells["task"])))}
    method_order = {m: i for i, m in enumerate(order_methods(set(cells["method"])))}
    key = cells.apply(
        lambda r: (kind_order[r["kind"]], metric_order.get(r["metric"], 99), task_order[r["task"]], method_order[r["method"]]), axis=1
    ) if not cells.empty else pd.Series(dtype=object)
    if cells.empty:
        return cells
    return cells.assign(_k=key).sort_values("_k", kind="mergesort").drop(columns="_k").reset_index(drop=True)


def _check_ddof(variants, options: AggregateOptions, issues: IssueLog) -> None:
    recorded = sorted({v.protocol["_sweep"].get("ddof") for v in variants if v.protocol["_sweep"].get("ddof") is not None})
    if recorded and recorded != [options.ddof]:
        issues.warn("ddof", f"the runs record sweep.ddof={recorded}, the aggregation uses ddof={options.ddof}")


def _item_matrices(variants, metric_of, options: AggregateOptions, issues: IssueLog) -> tuple[dict[tuple[str, str], ItemMatrix], str]:
    if not options.use_samples:
        return {}, "per-sample logs not read (--no-samples): no confidence intervals, tests or worst-case accuracy"
    if not any(v.samples_path for v in variants):
        issues.warn(
            "no-samples",
            "no per-sample logs (samples_<task>_<stamp>.jsonl beside the results; run with --log_samples): "
            "no confidence intervals, significance tests or worst-case perturbation accuracy",
        )
        return {}, "no per-sample logs found: no confidence intervals, significance tests or worst-case accuracy"
    groups: dict[tuple[str, str], list] = {}
    for v in variants:
        groups.setdefault((v.model, v.task), []).append(v)
    # Budgeted (model, task)s cover different items per variant by design: their intervals are the
    # item-response bootstrap's (Budgeted estimates), not the paired item bootstrap's.
    budgeted = {key for key, members in groups.items() if any(v.estimated for v in members)}
    groups = {key: members for key, members in groups.items() if key not in budgeted}
    cache: dict = {}
    matrices = {}
    for key in sorted(groups):
        matrix = build_item_matrix(key[0], key[1], groups[key], metric_of[key], issues, cache)
        if matrix is not None:
            matrices[key] = matrix
    note = f"per-sample logs used for {len(matrices)} of {len(groups)} (model, task) pairs"
    if budgeted:
        note += (f"; {len(budgeted)} budgeted (model, task) pair(s) have the budgeted estimates' intervals instead "
                 f"(Budgeted estimates)")
    return matrices, note


def _build_tables(options, gain, gains, sens, sens_long, avgp, maxp, acc_long, models, ci, significance):
    d, tol = options.decimals, options.tie_tolerance
    tables: dict[str, Table] = {}
    main: list[Table] = []
    for metric in ACCURACY_METRICS:
        t = main_table(
            f"gain_{metric}", f"{METRIC_TITLES[metric]}: mean relative gain (%), higher is better", gain, gains, metric,
            best="max", decimals=d, tie_tolerance=tol, note=GAIN_NOTE,
        )
        if t is not None:
            main.append(t)
    for metric in SENSITIVITY_METRICS:
        t = main_table(
            f"sensitivity_{metric}", f"{METRIC_TITLES[metric]}: 100 x SD (ddof={options.ddof}), lower is better", sens, sens_long, metric,
            best="min", decimals=d, tie_tolerance=tol,
        )
        if t is not None:
            main.append(t)
    for t in main:
        tables[t.name] = t
    for t in main:
        frame = type_averages(t.frame)
        if not frame.empty and len(frame.columns):
            frame.index.name = "method"
            name = "types_" + t.name
            tables[name] = Table(name, t.title + " -- task-type averages", frame, best=t.best, decimals=d, tie_tolerance=tol,
                                 note="CLS/MCQ/GQA: unweighted mean of the type's task columns.")
    wins, detail = wins_table(main, tol)
    if wins is not None:
        tables["wins"] = wins
    rng = range_table(main, d)
    if rng is not None:
        tables["variation_range"] = rng
    for kind, cells, title in (("avgp", avgp, "AvgP: mean accuracy (%) over the method's instructions"), ("maxp", maxp, "MaxP: best accuracy (%) among the method's instructions")):
        for metric in ACCURACY_METRICS:
            t = main_table(f"{kind}_{metric}", f"{METRIC_TITLES[metric]}: {title}, averaged over models", cells, acc_long, metric,
                           best="max", decimals=d, tie_tolerance=tol)
            if t is not None:
                tables[t.name] = t
    # Breakdowns by family and by scale.
    if not models.empty:
        family = dict(zip(models["model"], models["family"]))
        scale = dict(zip(models["model"], models["scale"]))
        families = sorted(set(family.values()))
        scales = sorted(set(scale.values()), key=lambda s: (s == "unknown", not s.startswith("<"), s))
        gain_fam = grouped_cells(gains, "gain", family)
        gain_scale = grouped_cells(gains, "gain", scale)
        sens_fam = grouped_cells(sens_long, "value", family)
        sens_scale = grouped_cells(sens_long, "value", scale)
        for groups, cells_g, sens_g, order, label in ((family, gain_fam, sens_fam, families, "Family"), (scale, gain_scale, sens_scale, scales, "Scale")):
            for metric in ACCURACY_METRICS:
                t = grouped_table(f"{label.lower()}_gain_{metric}", f"{METRIC_TITLES[metric]}: mean relative gain (%) by {label.lower()}",
                                  cells_g, gains, groups, metric, order, label, best="max", decimals=d, tie_tolerance=tol)
                if t is not None:
                    tables[t.name] = t
            for metric in SENSITIVITY_METRICS:
                t = grouped_table(f"{label.lower()}_sensitivity_{metric}", f"{METRIC_TITLES[metric]}: 100 x SD by {label.lower()}",
                                  sens_g, sens_long, groups, metric, order, label, best="min", decimals=d, tie_tolerance=tol)
                if t is not None:
                    tables[t.name] = t
    if ci is not None and not ci.empty:
        for metric in ACCURACY_METRICS:
            part = ci[ci["metric"] == metric]
            if part.empty:
                continue
            base = tables[f"gain_{metric}"]
            lo = _wide(part, "ci_low").reindex(index=base.frame.index, columns=base.frame.columns)
            hi = _wide(part, "ci_high").reindex(index=base.frame.index, columns=base.frame.columns)
            tables[f"ci_{metric}"] = Table(
                f"ci_{metric}",
                f"{METRIC_TITLES[metric]}: mean relative gain (%) with {options.ci_level:.0%} bootstrap CI "
                f"({options.n_boot} item resamples, seed {options.seed!r})",
                base.frame,
                best="max",
                decimals=d,
                counts=base.counts,
                full=base.full,
                ci_low=lo,
                ci_high=hi,
                tie_tolerance=tol,
            )
    if significance is not None and not significance.empty:
        for metric in ACCURACY_METRICS:
            t = significance_table(significance, metric, options.alpha)
            if t is not None:
                tables[t.name] = t
    return tables, detail


def _wide(part: pd.DataFrame, field_name: str) -> pd.DataFrame:
    frame = part.pivot(index="method", columns="task", values=field_name)
    frame = frame.reindex(index=order_methods(frame.index), columns=order_tasks(frame.columns)).astype(float)
    frame.index.name = "method"
    frame.columns.name = None
    return frame
