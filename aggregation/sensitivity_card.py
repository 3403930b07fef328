"""The sensitivity card: every prompt-sensitivity measure of one (model, task, setting), with intervals.

A card summarises how a model's score on one task and setting (zero-shot, few-shot, perturbed)
moves across the instructions evaluated: the measures of ``sensitivity_measures`` (AvgP, MaxP,
spread, CPS, quantiles, PSS, POSIX, the instruction-effect SD beyond item noise), the InstructEval
paper's selectional and permutational sensitivity (few-shot) and HELM-style worst-case accuracy
under perturbation (perturbed).

**Per-item values.** Instruction i's value on item j is the mean of its variants' per-item values
in that setting (one zero-shot variant; one few-shot or perturbed variant per demo set), so its
accuracy is the setting's accuracy in the main tables.

**Intervals.** A two-way ("pigeonhole", Owen 2007) bootstrap: each replicate draws the
instructions *and* the items with replacement, independently, and recomputes every measure.
Resampling both says how much each number would move with other instructions of the same kind and
other items of the same task. The interval is for the measure's expected value at these numbers of
instructions and items: ``[m - (q_hi - mean*), m - (q_lo - mean*)]`` with ``m`` the estimate,
``q`` the replicates' quantiles and ``mean*`` their mean (a basic interval centred on the estimate).
Plain percentile intervals would be shifted: a replicate's duplicated items add a second layer of
item noise, so every noise-driven measure (spread, selectional sensitivity, the instruction SD) runs
higher in the replicates than in the data -- by a whole interval width for a selectional
sensitivity that is item noise only. Intervals are widened to hold the estimate where a lumpy,
skewed replicate distribution (few items; a minimum at 0) would leave it out, and clipped to the
measure's range (>= 0; points <= 100). Permutational sensitivity, known only per instruction, resamples instructions only. Every
draw is seeded from ``--seed`` and the (model, task, setting).

Without per-sample logs (or for a budgeted sweep, whose cells are estimated), the card keeps the
measures computed from per-instruction accuracies and marks the item-level ones as unavailable,
with the reason.

Example:
    >>> import numpy as np
    >>> Y = np.array([[1, 1, 0, 1], [1, 0, 0, 1], [0, 1, 1, 1]], dtype=float)
    >>> card = build_card("m", "agnews", "zero_shot", [("null", "null"), ("generic", "g0"), ("generic", "g1")],
    ...                   Y, None, n_boot=0, level=0.95, seed="s")
    >>> card.measures["spread"].value, card.measures["pss"].value
    (25.0, 0.5)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from instructeval_tasks.estimation import ITEM_RESPONSE

from .bootstrap import rng_for
from .budget_validity import resolution
from .draw_statistics import CARD_STATISTICS, statistic_draws, summarize
from .sensitivity_measures import (
    QUANTILES,
    mean_abs_pair_difference,
    mean_square_components,
)

CARD_SETTINGS = ("zero_shot", "few_shot", "perturbed")
SCHEMA_VERSION = 1
SCHEMA_ID = "https://instructeval.invalid/schemas/sensitivity_card/v1"

QUANTILE_KEYS = tuple(f"q{round(q * 100):02d}" for q in QUANTILES)


@dataclass(frozen=True)
class MeasureInfo:
    """What a measure is: its title, unit, source and formula (the card's legend and the table of docs/aggregation.md)."""

    title: str
    unit: str
    source: str
    formula: str
    level: str  # "instruction": from per-instruction accuracies; "item": needs the per-item samples


MEASURES: dict[str, MeasureInfo] = {
    "avgp": MeasureInfo("AvgP", "points", "Mizrahi et al. 2024 (TACL), State of What Art?", "mean_i acc_i", "instruction"),
    "maxp": MeasureInfo("MaxP", "points", "Mizrahi et al. 2024 (TACL), State of What Art?", "max_i acc_i", "instruction"),
    "minp": MeasureInfo("MinP", "points", "worst instruction", "min_i acc_i", "instruction"),
    "spread": MeasureInfo("Spread", "points", "Sclar et al. 2024 (ICLR), FormatSpread", "max_i acc_i - min_i acc_i", "instruction"),
    "cps": MeasureInfo("CPS", "points", "Mizrahi et al. 2024 (TACL), combined performance score",
                       "(1 - (MaxP - AvgP)) * MaxP, on fractions", "instruction"),
    **{k: MeasureInfo(f"Quantile {k[1:]}%", "points", "Polo et al. 2024 (NeurIPS), PromptEval",
                      f"np.quantile(acc, {int(k[1:]) / 100:g})", "instruction") for k in QUANTILE_KEYS},
    "pss": MeasureInfo("PSS", "fraction", "Zhuo et al. 2024 (EMNLP Findings), ProSA PromptSensiScore",
                       "mean_j sum_{i<k} |Y_ij - Y_kj| / C(n, 2)", "item"),
    "posix": MeasureInfo("POSIX (gold answer)", "nats", "Chatterjee et al. 2024 (EMNLP Findings), POSIX",
                         "mean_j 1/(n(n-1)) sum_{i!=k} |log P(y_j|x_ij) - log P(y_j|x_kj)|, y_j the gold answer", "item"),
    "instruction_sd": MeasureInfo("Instruction-effect SD", "points", "two-way crossed random effects (ANOVA = REML)",
                                  "sqrt(max(0, (MS_inst - MS_resid) / J))", "item"),
    "item_noise_sd": MeasureInfo("Item-noise SD", "points", "two-way crossed random effects (ANOVA = REML)",
                                 "sqrt(MS_resid / J)", "item"),
    "selectional": MeasureInfo("Selectional sensitivity", "points", "Ajith et al. 2024 (NAACL Findings), InstructEval",
                               "mean_i stdev_s acc(i, demo set s)", "item"),
    "permutational": MeasureInfo("Permutational sensitivity", "points", "Ajith et al. 2024 (NAACL Findings), InstructEval",
                                 "mean_i mean_d stdev_o acc(i, demo set d, ordering o)", "instruction"),
    "worst_case": MeasureInfo("Worst-case perturbation accuracy", "points", "Liang et al. 2023 (TMLR), HELM robustness",
                              "mean_i mean_j min(clean_ij, perturbed_ij)", "item"),
}

SETTING_MEASURES = {
    "zero_shot": ("avgp", "maxp", "minp", "spread", "cps", *QUANTILE_KEYS, "pss", "posix", "instruction_sd", "item_noise_sd"),
    "few_shot": ("avgp", "maxp", "minp", "spread", "cps", *QUANTILE_KEYS, "pss", "posix", "instruction_sd", "item_noise_sd",
                 "selectional", "permutational"),
    "perturbed": ("avgp", "maxp", "minp", "spread", "cps", *QUANTILE_KEYS, "pss", "posix", "instruction_sd", "item_noise_sd",
                  "worst_case"),
}


@dataclass
class Measure:
    """One measure's value and percentile interval (``None`` when not computable; ``why`` says why)."""

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    why: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": _finite(self.value), "ci_low": _finite(self.ci_low), "ci_high": _finite(self.ci_high)}
        if self.why:
            out["why"] = self.why
        return out


@dataclass
class SensitivityCard:
    """The card of one (model, task, setting); see the module docstring."""

    model: str
    task: str
    setting: str
    metric: str
    instructions: list[tuple[str, str]]
    n_items: int | None
    measures: dict[str, Measure]
    bootstrap: dict[str, Any]
    placement: str | None = None
    estimated: bool = False
    notes: list[str] = field(default_factory=list)
    verdict: dict[str, Any] | None = None  # the card's verdict (``verdict.Verdict.as_dict``), where one was reached

    def as_dict(self) -> dict[str, Any]:
        methods: dict[str, int] = {}
        for method, _ in self.instructions:
            methods[method] = methods.get(method, 0) + 1
        return {
            "model": self.model,
            "task": self.task,
            "setting": self.setting,
            "placement": self.placement,
            "metric": self.metric,
            "n_instructions": len(self.instructions),
            "n_items": self.n_items,
            "methods": methods,
            "estimated": self.estimated,
            "bootstrap": dict(self.bootstrap),
            "measures": {name: self.measures[name].as_dict() for name in SETTING_MEASURES[self.setting] if name in self.measures},
            "notes": list(self.notes),
            **({"verdict": self.verdict} if self.verdict is not None else {}),
        }

    def summary_line(self) -> str:
        """One line for the terminal, e.g. ``smollm2 agnews zero-shot: 61.0 [47.0-70.0] across 51 instructions; ...``."""
        m = self.measures
        where = f" [{self.placement}]" if self.placement else ""
        head = f"{self.model} {self.task}{where} {self.setting.replace('_', '-')}: "
        if all(m[k].value is None and (m[k].why or "").startswith("not resolved") for k in ("avgp", "minp", "maxp")):
            text = head + (f"AvgP, MinP, MaxP not resolved across {len(self.instructions)} instructions "
                           "(sensitivity/card.json gives each reason)")
        else:
            lo, hi = _shown(m["minp"]), _shown(m["maxp"])
            span = f"[{lo}-{hi}]" if "not resolved" not in (lo, hi) else (
                "(MinP and MaxP not resolved)" if lo == hi else f"(MinP {lo}, MaxP {hi})")
            text = head + f"{_shown(m['avgp'])} {span} across {len(self.instructions)} instructions"
        sd = m.get("instruction_sd")
        if sd is not None and sd.value is not None:
            text += f"; instruction SD {_num(sd.value)}"
            if sd.ci_low is not None and sd.ci_high is not None:
                text += f" [{_num(sd.ci_low)}-{_num(sd.ci_high)}]"
        if self.estimated:
            text += " (estimated cells)"
        return text


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _num(value: float | None) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.1f}"


def _shown(measure: "Measure") -> str:
    """A measure's value for the terminal line: ``not resolved`` where a budget's validation abstains."""
    if measure.value is None and (measure.why or "").startswith("not resolved"):
        return "not resolved"
    return _num(measure.value)


def _point_measures(acc: np.ndarray) -> dict[str, float]:
    """Measures of per-instruction accuracies (fractions in; points out)."""
    return {k: float(v[0]) for k, v in _batch_point(np.asarray(acc, dtype=np.float64)[None]).items()}


def _item_measures(Y: np.ndarray, LL: np.ndarray | None) -> dict[str, float]:
    return {k: float(v[0]) for k, v in _batch_item(Y[None], LL[None] if LL is not None else None).items()}


def _stdev(values: np.ndarray, ddof: int) -> float:
    return float(np.std(values, ddof=ddof)) if len(values) > ddof else math.nan


def _finite_mean(values: Sequence[float]) -> float:
    """The mean of the finite ``values``; NaN (no warning) when none is. The card's and each
    replicate's selectional and permutational values: an instruction with too few demo sets or
    orderings has none, and a replicate that drew no instruction with one is left out of the interval."""
    finite = [v for v in values if math.isfinite(v)]
    return float(np.mean(finite)) if finite else math.nan


def build_card(
    model: str,
    task: str,
    setting: str,
    instructions: Sequence[tuple[str, str]],
    Y: np.ndarray | None,
    LL: np.ndarray | None,
    *,
    n_boot: int,
    level: float,
    seed: str,
    accuracies: np.ndarray | None = None,
    selection_rows: Sequence[np.ndarray] | None = None,
    permutational: np.ndarray | None = None,
    worst: np.ndarray | None = None,
    ddof: int = 1,
    metric: str = "acc",
    estimated: bool = False,
    why_no_items: str = "no per-sample logs",
) -> SensitivityCard:
    """The card of one (model, task, setting).

    Args:
        instructions: ``(method, instruction)`` of each row.
        Y: ``instructions x items`` per-item values (or ``None``: instruction-level measures only,
            from ``accuracies``).
        LL: gold-answer log-likelihoods, same shape (``None``: no POSIX).
        accuracies: per-instruction accuracies (fractions) when ``Y`` is ``None``.
        selection_rows: few-shot only: per instruction, its ``demo sets x items`` values.
        permutational: few-shot only: per-instruction permutational SDs (fractions; NaN if none).
        worst: perturbed only: ``instructions x items`` worst-case values.
        n_boot: two-way bootstrap replicates (0: no intervals).
    """
    n_inst = len(instructions)
    notes: list[str] = []
    measures: dict[str, Measure] = {}
    acc = Y.mean(axis=1) if Y is not None else np.asarray(accuracies, dtype=np.float64)
    for name, value in _point_measures(acc).items():
        measures[name] = Measure(value)
    item_ok = Y is not None and n_inst >= 2 and Y.shape[1] >= 2
    if item_ok:
        for name, value in _item_measures(Y, LL).items():
            measures[name] = Measure(value)
        if LL is None:
            measures["posix"] = Measure(None, why="no gold-answer log-likelihoods (a generation task, or samples without them)")
    else:
        why = why_no_items if Y is None else "needs at least 2 instructions and 2 items"
        for name in ("pss", "posix", "instruction_sd", "item_noise_sd"):
            measures[name] = Measure(None, why=why)
    if setting == "few_shot":
        if selection_rows is not None:
            sd = _finite_mean([_stdev(rows.mean(axis=1), ddof) for rows in selection_rows])
            measures["selectional"] = Measure(100.0 * sd) if math.isfinite(sd) else Measure(None, why="fewer than 2 demo sets per instruction")
        else:
            measures["selectional"] = Measure(None, why=why_no_items)
        perm_sd = _finite_mean(np.asarray(permutational if permutational is not None else [], dtype=np.float64))
        measures["permutational"] = Measure(100.0 * perm_sd) if math.isfinite(perm_sd) else Measure(None, why="no demo orderings evaluated")
    if setting == "perturbed":
        if worst is not None:
            measures["worst_case"] = Measure(100.0 * float(worst.mean(axis=1).mean()))
        else:
            measures["worst_case"] = Measure(None, why=why_no_items if Y is None else "no clean few-shot variant with the same demo set")
    boot = {"replicates": 0, "level": level, "seed": seed, "resampled": []}
    if n_boot > 0 and n_inst >= 2:
        boot = _bootstrap(measures, setting, Y, LL, acc, selection_rows, permutational, worst, ddof=ddof, n_boot=n_boot,
                          level=level, seed=seed, key=(model, task, setting))
    elif n_boot > 0:
        notes.append("one instruction: no intervals")
    if estimated:
        notes.append("budgeted sweep: accuracies are estimates of the full grid; item-level measures need the full grid")
    return SensitivityCard(model, task, setting, metric, list(instructions), int(Y.shape[1]) if Y is not None else None,
                           measures, boot, estimated=estimated, notes=notes)


def _batch_point(acc: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`_point_measures` of each row of ``acc`` (replicates x instructions)."""
    best, mean = acc.max(axis=1), acc.mean(axis=1)
    out = {"avgp": mean, "maxp": best, "minp": acc.min(axis=1), "spread": best - acc.min(axis=1),
           "cps": (1.0 - (best - mean)) * best}
    for key, values in zip(QUANTILE_KEYS, np.quantile(acc, QUANTILES, axis=1)):
        out[key] = values
    return {k: 100.0 * v for k, v in out.items()}


def _batch_item(Yb: np.ndarray, LLb: np.ndarray | None) -> dict[str, np.ndarray]:
    """:func:`_item_measures` of each replicate of ``Yb`` (replicates x instructions x items)."""
    between, resid = mean_square_components(Yb)
    out = {"pss": mean_abs_pair_difference(Yb).mean(axis=-1), "instruction_sd": 100.0 * np.sqrt(between),
           "item_noise_sd": 100.0 * np.sqrt(resid / Yb.shape[-1])}
    if LLb is not None:
        out["posix"] = mean_abs_pair_difference(LLb).mean(axis=-1)
    return out


# Replicates per batch: at most this many (replicate, instruction, item) cells in memory at once.
BATCH_CELLS = 2_000_000


def _bootstrap(measures, setting, Y, LL, acc, selection_rows, permutational, worst, *, ddof, n_boot, level, seed, key) -> dict[str, Any]:
    n_inst = len(acc)
    n_items = Y.shape[1] if Y is not None else 0
    rng = rng_for(seed, "sensitivity-card", *key, n_inst, n_items)
    rows_all = rng.integers(0, n_inst, size=(n_boot, n_inst))
    cols_all = rng.integers(0, n_items, size=(n_boot, n_items)) if n_items else None
    draws: dict[str, list[np.ndarray]] = {name: [] for name, m in measures.items() if m.value is not None}
    perm = np.asarray(permutational if permutational is not None else [], dtype=np.float64)
    # Demo sets x items per instruction, stacked when every instruction has as many demo sets.
    stacked = None
    if selection_rows is not None and len({r.shape for r in selection_rows}) == 1:
        stacked = np.stack(selection_rows)
    batch = max(1, BATCH_CELLS // max(1, n_inst * max(n_items, 1)))
    for start in range(0, n_boot, batch):
        rows = rows_all[start:start + batch]
        values: dict[str, np.ndarray] = {}
        if Y is not None:
            cols = cols_all[start:start + batch]
            Yb = Y[rows[:, :, None], cols[:, None, :]]
            values.update(_batch_point(Yb.mean(axis=2)))
            if n_items >= 2:
                values.update(_batch_item(Yb, LL[rows[:, :, None], cols[:, None, :]] if LL is not None else None))
            # Item multiplicities of each replicate: a mean over resampled items is counts @ values / J.
            counts = np.stack([np.bincount(c, minlength=n_items) for c in cols]).astype(np.float64)
        else:
            values.update(_batch_point(acc[rows]))
        if setting == "few_shot":
            if stacked is not None and Y is not None and stacked.shape[1] > ddof:
                set_acc = np.einsum("isj,bj->bis", stacked, counts) / n_items  # replicate x instruction x demo set
                picked = np.take_along_axis(set_acc, rows[:, :, None], axis=1)
                values["selectional"] = 100.0 * np.std(picked, axis=2, ddof=ddof).mean(axis=1)
            elif selection_rows is not None and Y is not None:
                values["selectional"] = np.array([
                    100.0 * _finite_mean([_stdev(selection_rows[r][:, c].mean(axis=1), ddof) for r in rr])
                    for rr, c in zip(rows, cols)])
            if len(perm):
                picked = perm[rows]
                with np.errstate(invalid="ignore"):
                    values["permutational"] = 100.0 * np.nanmean(np.where(np.isfinite(picked), picked, np.nan), axis=1) \
                        if np.isfinite(perm).any() else np.full(len(rows), np.nan)
        if setting == "perturbed" and worst is not None and Y is not None:
            worst_acc = (worst @ counts.T).T / n_items  # replicate x instruction
            values["worst_case"] = 100.0 * np.take_along_axis(worst_acc, rows, axis=1).mean(axis=1)
        for name in draws:
            if name in values:
                draws[name].append(np.asarray(values[name], dtype=np.float64))
    for name, parts in draws.items():
        reps = np.concatenate(parts) if parts else np.array([])
        reps = reps[np.isfinite(reps)]
        if len(reps) >= max(10, n_boot // 2):
            measures[name].ci_low, measures[name].ci_high = basic_interval(name, float(measures[name].value), reps, level)
    resampled = ["instructions", "items"] if Y is not None else ["instructions"]
    return {"replicates": n_boot, "level": level, "seed": seed, "resampled": resampled, "method": BOOTSTRAP_METHOD}


BOOTSTRAP_METHOD = ("two-way bootstrap (instructions and items drawn independently with replacement); interval: "
                    "the estimate minus the replicates' deviations from their mean, widened to hold the estimate, "
                    "clipped to the measure's range")


def basic_interval(name: str, estimate: float, reps: np.ndarray, level: float) -> tuple[float, float]:
    """The card's interval for measure ``name`` from bootstrap replicates ``reps`` (``BOOTSTRAP_METHOD``):
    ``[m - (q_hi - mean*), m - (q_lo - mean*)]``, widened to hold ``estimate``, clipped to the range."""
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(reps, [tail, 1.0 - tail])
    centre = float(reps.mean())
    # A skewed, lumpy replicate distribution (few items, a minimum at 0) can push both ends
    # past the estimate: the interval is widened to hold it.
    return _clip(name, min(estimate - (high - centre), estimate), max(estimate - (low - centre), estimate))


def _clip(name: str, low: float, high: float) -> tuple[float, float]:
    """Clip an interval to the measure's range: every measure is >= 0; points <= 100; PSS <= 1."""
    top = {"points": 100.0, "fraction": 1.0}.get(MEASURES[name].unit, math.inf)
    return min(max(low, 0.0), top), min(max(high, 0.0), top)


# ------------------------------------------------------------------------------------- from data


def cards_for_matrix(matrix, instructions_frame, *, n_boot: int, level: float, seed: str, ddof: int,
                     metric: str) -> list[SensitivityCard]:
    """The cards of one (model, task) with per-item samples (an ``samples.ItemMatrix``)."""
    cards = []
    perm_of = _permutational_of(instructions_frame, matrix.model, matrix.task)
    for setting in CARD_SETTINGS:
        rows_of = matrix.metric_rows.get(setting, {})
        if not rows_of:
            continue
        keys = sorted(rows_of)
        Y = np.vstack([matrix.values[rows_of[k]].mean(axis=0) for k in keys])
        LL = None
        if matrix.gold_ll is not None:
            LL = np.vstack([matrix.gold_ll[rows_of[k]].mean(axis=0) for k in keys])
            if not np.isfinite(LL).all():
                LL = None
        extra: dict[str, Any] = {}
        if setting == "few_shot":
            extra["selection_rows"] = [matrix.values[rows_of[k]] for k in keys]
            extra["permutational"] = np.array([perm_of.get(k, math.nan) for k in keys])
        if setting == "perturbed":
            worst_of = matrix.metric_rows.get("worst_case", {})
            if worst_of and all(k in worst_of for k in keys):
                extra["worst"] = np.vstack([matrix.values[worst_of[k]].mean(axis=0) for k in keys])
        cards.append(build_card(matrix.model, matrix.task, setting, keys, Y, LL, n_boot=n_boot, level=level, seed=seed,
                                ddof=ddof, metric=metric, **extra))
    return cards


def cards_without_items(model: str, task: str, instructions_frame, *, n_boot: int, level: float, seed: str,
                        metric: str, estimated: bool, why: str) -> list[SensitivityCard]:
    """The cards of one (model, task) from per-instruction accuracies only (no samples, or estimated cells)."""
    part = instructions_frame[(instructions_frame["model"] == model) & (instructions_frame["task"] == task)]
    cards = []
    for setting in CARD_SETTINGS:
        rows = part[part[setting].notna()] if setting in part else part.iloc[0:0]
        if rows.empty:
            continue
        rows = rows.sort_values(["method", "instruction"])
        keys = list(zip(rows["method"], rows["instruction"]))
        extra: dict[str, Any] = {}
        if setting == "few_shot":
            extra["permutational"] = rows["permutational"].to_numpy(dtype=np.float64)
        card = build_card(model, task, setting, keys, None, None, n_boot=n_boot, level=level, seed=seed,
                          accuracies=rows[setting].to_numpy(dtype=np.float64), metric=metric, estimated=estimated,
                          why_no_items=why, **extra)
        if setting == "few_shot" and rows["selectional"].notna().any():
            card.measures["selectional"] = Measure(100.0 * float(rows["selectional"].dropna().mean()))
        if setting == "perturbed" and "worst_case" in rows and rows["worst_case"].notna().any():
            card.measures["worst_case"] = Measure(100.0 * float(rows["worst_case"].dropna().mean()))
        cards.append(card)
    return cards


def _permutational_of(frame, model: str, task: str) -> dict[tuple[str, str], float]:
    if frame is None or frame.empty:
        return {}
    part = frame[(frame["model"] == model) & (frame["task"] == task)]
    return {(m, i): float(v) for m, i, v in zip(part["method"], part["instruction"], part["permutational"])}


def card_measures(drawn: np.ndarray, level: float, design: tuple[str, float], n_items: int, *,
                  table: Mapping[str, Any] | None = None, estimator: str = ITEM_RESPONSE) -> dict[str, Measure]:
    """The sensitivity card's instruction-level measures (``draw_statistics.CARD_STATISTICS``, in points)
    from the draws of every instruction's accuracy (``drawn``, draws x instructions), each a
    ``Measure`` with the draws' percentile interval, or without a value where not resolved (its ``why``)."""
    out: dict[str, Measure] = {}
    for name in CARD_STATISTICS:
        verdict = resolution(name, estimator, design[0], design[1], n_items, table=table,
                             nominal=design[2] if len(design) > 2 else None)
        if not verdict.resolved:
            out[name] = Measure(None, why=verdict.why)
            continue
        summary = summarize(statistic_draws(name, drawn), level)
        out[name] = Measure(100.0 * summary.estimate, 100.0 * summary.low, 100.0 * summary.high)
    return out


def _from_draws(card: SensitivityCard, budget, level: float) -> None:
    """A budgeted card's instruction-level measures from its grid's predictive draws
    (``card_measures``: the draws' median and percentile interval, or the reason a
    budget does not resolve one), in place of the point estimates' (pulled toward their method's
    mean); left as they are, with a note, where the setting has several grids (demo sets) or its
    draws' instructions are not the card's."""
    grids = (budget.draws if budget is not None else {}).get((card.model, card.task, card.setting), [])
    if len(grids) != 1 or sorted(grids[0].keys) != sorted(card.instructions):
        card.notes.append("instruction-level measures from the point estimates (no single grid's draws for this setting)")
        return
    grid = grids[0]
    card.measures.update(card_measures(grid.drawn, level, grid.design, grid.n_items, estimator=grid.estimator))


def build_cards(aggregates, *, n_boot: int | None = None) -> list[SensitivityCard]:
    """Every card of an aggregation (``pipeline.Aggregates``), in model, task and setting order."""
    from .catalog import order_tasks

    opts = aggregates.options
    n_boot = opts.n_boot if n_boot is None else n_boot
    frame = aggregates.instructions
    metric_of = {(m, t): metric for m, t, metric in zip(aggregates.metric_choice["model"], aggregates.metric_choice["task"],
                                                        aggregates.metric_choice["metric"])}
    estimated = set()
    if aggregates.budget is not None and "estimated" in frame:
        estimated = {(m, t) for m, t, e in zip(frame["model"], frame["task"], frame["estimated"]) if e}
    cards: list[SensitivityCard] = []
    pairs = sorted({(m, t) for m, t in zip(frame["model"], frame["task"])})
    task_rank = {t: i for i, t in enumerate(order_tasks({t for _, t in pairs}))}
    for model, task in sorted(pairs, key=lambda p: (p[0], task_rank[p[1]])):
        matrix = aggregates.item_matrices.get((model, task))
        metric = metric_of.get((model, task), "acc")
        if matrix is not None:
            cards += cards_for_matrix(matrix, frame, n_boot=n_boot, level=opts.ci_level, seed=opts.seed, ddof=opts.ddof, metric=metric)
        else:
            why = ("budgeted sweep: cells are estimated" if (model, task) in estimated
                   else "no per-sample logs" if not opts.use_samples or "per-sample logs used" not in aggregates.samples_note
                   else "the per-sample logs of this (model, task) were not usable (see the issues)")
            made = cards_without_items(model, task, frame, n_boot=n_boot, level=opts.ci_level, seed=opts.seed, metric=metric,
                                       estimated=(model, task) in estimated, why=why)
            if (model, task) in estimated:
                for card in made:
                    _from_draws(card, aggregates.budget, opts.ci_level)
            cards += made
    return cards


# ------------------------------------------------------------------------------------- documents


def card_document(cards: Sequence[SensitivityCard], *, options: Mapping[str, Any]) -> dict[str, Any]:
    """The machine-readable file of one aggregation (``sensitivity/card.json``; schema ``sensitivity_card.schema.json``)."""
    return {
        "$schema": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
        "generator": "instructeval aggregate",
        "options": dict(options),
        "measures": {name: {"title": m.title, "unit": m.unit, "source": m.source, "formula": m.formula} for name, m in MEASURES.items()},
        "cards": [card.as_dict() for card in cards],
    }


def results_document(model: str, cards: Sequence[SensitivityCard], *, harness_name: Callable[[str], str],
                     options: Mapping[str, Any]) -> dict[str, Any]:
    """A results-shaped JSON of one model: ``results`` (AvgP/MaxP per setting, fractions, as lm-eval
    writes scores) and the ``instructeval_sensitivity`` block keyed by the harness task name."""
    results: dict[str, dict[str, Any]] = {}
    block: dict[str, dict[str, Any]] = {}
    for card in cards:
        if card.model != model:
            continue
        # lm-eval's own tasks (a placement) keep their name; InstructEval's are instructeval_<task>
        name = card.task if card.placement else harness_name(card.task)
        setting = f"{card.placement}/{card.setting}" if card.placement else card.setting
        entry = results.setdefault(name, {"alias": name})
        for key in ("avgp", "maxp"):
            value = card.measures[key].value
            entry[f"{key}_{setting},none"] = None if value is None else value / 100.0
        block.setdefault(name, {})[setting] = card.as_dict()
    return {
        "results": results,
        "config": {"model": model},
        "instructeval_sensitivity": block,
        "instructeval_sensitivity_schema": SCHEMA_ID,
        "instructeval_sensitivity_options": dict(options),
    }
