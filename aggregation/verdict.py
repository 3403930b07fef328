r"""The verdict: one line per (model, task, setting) that answers "does my number survive the instruction?".

**Harness tasks** (``--harness-tasks``; one verdict per (model, task, placement, n-shot) of
``harness_effects``). From the grid's per-item scores (``HarnessEffects.items``) and its effects row:

- the **stock score** ``s`` (the null variant's, i.e. the stock task's) with its own standard error
  over items, ``SE = 100 * sd(y_null, ddof=1) / sqrt(n)`` points (``y_null`` the stock per-item scores,
  ``n`` items): the noise a leaderboard number carries before any instruction is changed;
- the **chance test** (``chance``): the stock score against always giving the most frequent gold
  answer of the same rows (one-sided exact binomial, above chance at ``p < 0.01``; a free-form task
  has a floor instead). Below it, the word is ``at chance`` (or ``at a floor``), said first with what
  the model does (``answers "no" on 40 of 40 rows``); the instruction effect follows as detail, never
  read as robustness or sensitivity of a score that carries no knowledge;
- the **instruction effect**: the instruction-effect SD beyond item noise with its interval
  (``instruction_sd``; "not resolved" where a budget's validation abstains), the within-item
  permutation test's ``p`` on the **score** (``permutation_test`` without classes: one residual sum
  per instruction, so it rejects only where the instructions' accuracies differ) and, where it finds
  nothing at 5%, the instruction-effect SD ``d`` the design detects with 80% power (``detectable_sd``);
- the **label shift** (multiple-choice and classification grids): the same test with the residuals
  summed per instruction *and gold answer* (``class_p``); where it rejects at 5%, the line adds
  ``answers shift between gold labels (p = ...)``: an instruction moves answers toward one label,
  which may leave the accuracy where it was;
- the **verdict word**:

  - ``sensitive``: ``p <= 0.05`` (the test keeps its size wherever the cells were fixed before any outcome:
    every cell, a budget's uniform or balanced design; under the adaptive design it is not run and the
    verdict is ``not resolved``);
  - ``robust``: ``p > 0.05``, and ``d <= SE``: an instruction effect as large as the stock score's own
    item noise would have been seen with 80% power, and none was; on a budgeted grid also every
    statistic the budget validation checks is resolved;
  - ``not resolved``: otherwise (``d > SE``, ``d`` beyond the simulated range, no per-item scores, or
    a budget whose statistics abstain);
- the **best and worst instruction** (``harness_scores``) with an interval: a budgeted grid's
  estimate its draws' percentile interval (shown only where resolved), a full grid's exact score
  ``s_i +- z * sd(y_i) / sqrt(n)`` (over items; ``z`` the normal quantile of the level).

Per stock-ordered **model pair** of a (task, placement, n-shot) (``harness_pair_flips``): the flip
probability under a randomly drawn instruction (its interval over instructions) next to the flip
probability from **resampling items alone**: ``B`` paired bootstrap replicates of the two models'
stock per-item scores over the same items (``idx_b`` ``n`` draws with replacement;
``d_b = mean(a[idx_b]) - mean(b[idx_b])``), ``P_item = (#{b: d_b < 0} + #{b: d_b = 0} / 2) / B``
with ``a`` the model ahead on the stock score; seeded with ``bootstrap.rng_for(seed, "verdict-item-flip",
task, placement, n-shot, a, b)``. A flip probability under instructions near ``P_item`` says the
instructions reorder the pair no more than a redraw of the items would.

**The nine InstructEval tasks** (one verdict per (model, task, setting) card, zero- and few-shot):
the null instruction plays the stock score; a few-shot instruction's per-item score is the mean over
its demo sets. The best instruction (exact score and interval as above) and the best method (the
mean over its instructions per item, ``m +- z * sd / sqrt(n)`` over items) or, on a budgeted grid,
the budget estimates (``BudgetEstimates``: each with its draws' interval); the instruction effect
and the word as for the harness tasks (the permutation test over the instructions' per-item scores).
A budgeted nine-task grid is ``not resolved`` (its observed cells are not kept for the test).

Example (a stock score of 62.5 +- 3.4 points, a clear instruction effect):
    >>> v = Verdict("SmolLM2", "boolq", "[description, 0-shot]", 0.625, 3.4, 200, 4.1, 2.0, 6.3, 0.001, math.nan,
    ...             Pick("generic-3", 0.68, 0.61, 0.74), Pick("adhoc-2", 0.515, 0.44, 0.59))
    >>> v.word
    'sensitive'
    >>> v.line()
    'SmolLM2 boolq [description, 0-shot]: stock 62.5 ± 3.4; sensitive (p = 0.001): instruction SD 4.1 [2.0, 6.3] points; best generic-3 68.0 [61.0, 74.0], worst adhoc-2 51.5 [44.0, 59.0]'
    >>> Verdict("m", "boolq", "[description, 0-shot]", 0.625, 3.4, 400, 0.5, 0.0, 1.9, 0.41, 2.1).line()
    'm boolq [description, 0-shot]: stock 62.5 ± 3.4; robust (p = 0.410): instruction SD 0.5 [0.0, 1.9] points; an SD of 2.1 points would have been detected (80% power), no more than the stock SE 3.4'
    >>> item_flip_probability(np.array([1., 1, 1, 0] * 25), np.array([0., 0, 0, 1] * 25), n_boot=200, rng=np.random.default_rng(0))
    0.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .bootstrap import rng_for
from .chance import Chance, chance_of, choice_answers
from .design_projection import Projection, project
from .harness_effects import ADAPTIVE, ADAPTIVE_NO_TEST
from .harness_effects import NO_EFFECT_ALPHA as ALPHA  # the test's level read as "an instruction effect"
from .samples import read_targets_and_choices

SENSITIVE, ROBUST, NOT_RESOLVED = "sensitive", "robust", "not resolved"


@dataclass(frozen=True)
class Pick:
    """An instruction (or method) with its score (fraction) and interval (NaN: none); ``why``: not resolved."""

    name: str
    score: float
    low: float = math.nan
    high: float = math.nan
    why: str = ""

    def text(self) -> str:
        if self.why or math.isnan(self.score):
            return f"{self.name} not resolved"
        out = f"{self.name} {100 * self.score:.1f}"
        if not math.isnan(self.low):
            out += f" [{100 * self.low:.1f}, {100 * self.high:.1f}]"
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "score": _num(self.score), "ci_low": _num(self.low), "ci_high": _num(self.high),
                **({"why": self.why} if self.why else {})}


@dataclass(frozen=True)
class Verdict:
    """One (model, task, setting)'s verdict (module doc). Scores are fractions, SDs and the SE points."""

    model: str
    task: str
    where: str  # "[description, 0-shot]" or "[zero-shot]"
    stock: float
    stock_se: float
    n_items: int | None
    instruction_sd: float
    sd_low: float
    sd_high: float
    p_value: float
    detectable_sd: float
    best: Pick | None = None
    worst: Pick | None = None
    best_method: Pick | None = None
    abstained: str = ""  # why a budgeted grid's statistics are not resolved ("" where they are)
    placement: str | None = None
    num_fewshot: int | None = None
    setting: str | None = None
    stock_label: str = "stock"  # "null" on the nine tasks: the null instruction's score plays the stock one
    no_power: str = ""  # why no power was simulated (where it was not)
    chance: Chance | None = None  # the stock score against always giving the most frequent gold answer (``chance``)
    class_p: float = math.nan  # the per-gold-answer test's p: do the instructions move answers between labels?
    projection: Projection | None = None  # a full grid's not resolved word: the design that would resolve it
    untested: str = "no per-item scores"  # why there is no test (where ``p_value`` is NaN and nothing abstained)

    @property
    def word(self) -> str:
        if self.chance is not None and self.chance.below:
            return self.chance.state
        return self.effect_word

    @property
    def effect_word(self) -> str:
        """The word the instruction test and its power give, whatever the chance test says."""
        if math.isnan(self.p_value):
            return NOT_RESOLVED
        if self.p_value <= ALPHA:
            return SENSITIVE
        if self.abstained or math.isnan(self.detectable_sd) or math.isnan(self.stock_se):
            return NOT_RESOLVED
        return ROBUST if self.detectable_sd <= self.stock_se + 1e-12 else NOT_RESOLVED

    def _effect(self) -> str:
        if math.isnan(self.instruction_sd):
            return "instruction SD not resolved" if self.abstained else "no instruction SD"
        text = f"instruction SD {self.instruction_sd:.1f}"
        if not math.isnan(self.sd_low):
            text += f" [{self.sd_low:.1f}, {self.sd_high:.1f}]"
        return text + " points"

    def _shift(self) -> str:
        """The per-gold-answer test's clause, where it rejects: the instructions move answers between labels."""
        if math.isnan(self.class_p) or self.class_p > ALPHA:
            return ""
        where = "; data/harness_classes.csv has each label's accuracy" if self.placement is not None else ""
        return f"answers shift between gold labels (p = {self.class_p:.3f}: some instruction moves answers toward one label{where})"

    def _power(self) -> str:
        """Why a verdict without an effect is robust or not resolved."""
        se = f"the {self.stock_label} SE {self.stock_se:.1f}"
        if self.effect_word == SENSITIVE or math.isnan(self.p_value):
            return ""
        if math.isnan(self.detectable_sd):
            return self.no_power or "even the largest simulated instruction effect was not detected with 80% power"
        if self.effect_word == ROBUST:
            return f"an SD of {self.detectable_sd:.1f} points would have been detected (80% power), no more than {se}"
        if math.isnan(self.stock_se):
            return f"an SD of {self.detectable_sd:.1f} points would have been detected (80% power); no {self.stock_label} score to compare"
        if self.abstained and self.detectable_sd <= self.stock_se:
            return f"the budget's statistics are not resolved ({self.abstained})"
        return f"only an SD of {self.detectable_sd:.1f} points would have been detected (80% power), more than {se}"

    def line(self) -> str:
        """The terminal's and the report's line (module doc)."""
        stock = f"no {self.stock_label} score" if math.isnan(self.stock) else f"{self.stock_label} {100 * self.stock:.1f}"
        if not math.isnan(self.stock) and not math.isnan(self.stock_se):
            stock += f" ± {self.stock_se:.1f}"
        elif not math.isnan(self.stock) and self.n_items is not None and self.n_items < MIN_ROWS:
            stock += f" (on {self.n_items} rows: too few for an SE, at least {MIN_ROWS})"
        p = f" ({self.abstained or self.untested})" if math.isnan(self.p_value) else f" (p = {self.p_value:.3f})"
        parts = [f"{self.model} {self.task} {self.where}: {stock}"]
        if self.chance is not None and self.chance.below:
            # the answer first: the score is not evidence of what the model knows; the instructions' effect follows
            parts += [self.chance.clause(), f"the instructions' effect on it: {self.effect_word}{p}, {self._effect()}"]
        else:
            parts.append(f"{self.word}{p}: {self._effect()}")
        why = self._power()
        if why and self.projection is not None and self.effect_word == NOT_RESOLVED and not self.abstained:
            why += "; " + self.projection.text()
        text = "; ".join(parts + [c for c in (why, self._shift()) if c])
        picks = []
        if self.best is not None and self.worst is not None and self.best.why and self.worst.why:
            picks.append(f"best and worst instruction not resolved ({self.best.why})" if self.best.why == self.worst.why
                         else "best and worst instruction not resolved")
        elif self.best is not None:
            picks.append("best instruction not resolved" if self.best.why else f"best {self.best.text()}")
        if self.worst is not None and not self.worst.why and self.worst.name != (self.best.name if self.best else None):
            picks.append(f"worst {self.worst.text()}")
        if self.best_method is not None:
            picks.append(f"best method {self.best_method.text()}")
        return text + ("; " + ", ".join(picks) if picks else "")

    def as_dict(self) -> dict[str, Any]:
        """The card's ``verdict`` block and a row of ``data/verdicts.csv`` (scores in points)."""
        return {"verdict": self.word, "line": self.line(), "stock": _num(100 * self.stock), "stock_se": _num(self.stock_se),
                "n_items": self.n_items, "instruction_sd": _num(self.instruction_sd), "instruction_sd_low": _num(self.sd_low),
                "instruction_sd_high": _num(self.sd_high), "permutation_p": _num(self.p_value),
                "instruction_effect": self.effect_word, "class_shift_p": _num(self.class_p),
                "chance": self.chance.as_dict() if self.chance is not None else None,
                "detectable_sd": _num(self.detectable_sd),
                "best": self.best.as_dict() if self.best else None, "worst": self.worst.as_dict() if self.worst else None,
                "best_method": self.best_method.as_dict() if self.best_method else None,
                "not_resolved": self.abstained}


@dataclass(frozen=True)
class PairVerdict:
    """A stock-ordered model pair: its flip probability under a random instruction (with interval)
    and from resampling items alone."""

    task: str
    where: str
    higher: str
    lower: str
    stock_higher: float
    stock_lower: float
    flip: float
    flip_low: float
    flip_high: float
    item_flip: float
    why: str = ""  # why the instructions' flip probability is not resolved (a budget)
    item_why: str = ""  # why there is no item-resampling flip probability

    def line(self) -> str:
        head = (f"{self.task} {self.where}: {self.higher} {100 * self.stock_higher:.1f} over {self.lower} "
                f"{100 * self.stock_lower:.1f}")
        if math.isnan(self.flip):
            under = "flip probability under an instruction not resolved" + (f" ({self.why})" if self.why else "")
        else:
            under = f"flip probability under an instruction {self.flip:.2f}"
            if not math.isnan(self.flip_low):
                under += f" [{self.flip_low:.2f}, {self.flip_high:.2f}]"
        items = (f"from resampling items alone n/a ({self.item_why})" if math.isnan(self.item_flip)
                 else f"from resampling items alone {self.item_flip:.2f}")
        return f"{head}: {under}; {items}"


@dataclass
class Verdicts:
    """Every verdict of an aggregation: harness tasks, then the nine tasks, then the model pairs."""

    harness: list[Verdict] = field(default_factory=list)
    nine: list[Verdict] = field(default_factory=list)
    pairs: list[PairVerdict] = field(default_factory=list)
    ni: list[Verdict] = field(default_factory=list)  # the Natural Instructions tasks' (``ni_verdict``)

    def every(self) -> list[Verdict]:
        """The (model, task, setting) verdicts: harness tasks, the nine tasks, Natural Instructions."""
        return [*self.harness, *self.nine, *self.ni]

    def lines(self) -> list[str]:
        return [v.line() for v in self.every()] + [p.line() for p in self.pairs]

    def frame(self) -> pd.DataFrame:
        rows = []
        for v in self.every():
            d = v.as_dict()
            rows.append({"model": v.model, "task": v.task, "placement": v.placement or "", "num_fewshot": v.num_fewshot,
                         "setting": v.setting or "", "verdict": d["verdict"], "stock": d["stock"], "stock_se": d["stock_se"],
                         "n_items": v.n_items, "instruction_sd": d["instruction_sd"], "instruction_sd_low": d["instruction_sd_low"],
                         "instruction_sd_high": d["instruction_sd_high"], "permutation_p": d["permutation_p"],
                         "detectable_sd": d["detectable_sd"], "instruction_effect": d["instruction_effect"],
                         "class_shift_p": d["class_shift_p"],
                         "chance_state": v.chance.state if v.chance is not None else "",
                         "chance": 100 * v.chance.rate if v.chance is not None else math.nan,
                         "chance_p": v.chance.p_value if v.chance is not None else math.nan, "line": d["line"]})
        return pd.DataFrame(rows)

    def pair_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"task": p.task, "setting": p.where, "higher": p.higher, "lower": p.lower,
                              "stock_higher": 100 * p.stock_higher, "stock_lower": 100 * p.stock_lower,
                              "flip_probability": p.flip, "ci_low": p.flip_low, "ci_high": p.flip_high,
                              "item_flip_probability": p.item_flip, "not_resolved": p.why, "line": p.line()}
                             for p in self.pairs],
                            columns=["task", "setting", "higher", "lower", "stock_higher", "stock_lower", "flip_probability",
                                     "ci_low", "ci_high", "item_flip_probability", "not_resolved", "line"])


def _num(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


# why a budgeted grid names no best or worst instruction (naming the largest estimate is the max statistic)
EXTREMES = "the budget validation does not resolve max and min at this design and budget"
MIN_ROWS = 10  # below this many items an SD over items (and a normal interval) is no measure of the noise


def stock_se(y: np.ndarray) -> float:
    """The standard error (points) of a mean of per-item scores: ``100 sd(y, ddof=1) / sqrt(n)``; NaN on
    fewer than ``MIN_ROWS`` items (five items that all score 100 do not make a score certain).

        >>> round(stock_se(np.array([1., 0, 1, 0] * 3)), 1)
        15.1
        >>> stock_se(np.ones(5))
        nan
    """
    y = np.asarray(y, dtype=float)
    y = y[np.isfinite(y)]
    return 100.0 * float(np.std(y, ddof=1)) / math.sqrt(len(y)) if len(y) >= MIN_ROWS else math.nan


def item_interval(y: np.ndarray, level: float) -> tuple[float, float]:
    """``mean +- z sd / sqrt(n)`` of per-item scores over items, clipped to [0, 1]; none on fewer than
    ``MIN_ROWS`` items."""
    y = np.asarray(y, dtype=float)
    y = y[np.isfinite(y)]
    if len(y) < MIN_ROWS:
        return math.nan, math.nan
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    half = z * float(np.std(y, ddof=1)) / math.sqrt(len(y))
    return max(0.0, float(y.mean()) - half), min(1.0, float(y.mean()) + half)


def item_flip_probability(a: np.ndarray, b: np.ndarray, *, n_boot: int, rng: np.random.Generator) -> float:
    """How often a paired bootstrap over items reverses ``mean(a) > mean(b)`` (ties count half; module doc)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if n_boot <= 0 or len(a) != len(b) or len(a) < 1:
        return math.nan
    sign = 1.0 if a.mean() >= b.mean() else -1.0
    idx = rng.integers(0, len(a), size=(n_boot, len(a)))
    d = sign * (a[idx].mean(axis=1) - b[idx].mean(axis=1))
    return float(np.mean(d < -1e-12) + 0.5 * np.mean(np.abs(d) <= 1e-12))


# ------------------------------------------------------------------------------------ harness tasks


def harness_verdicts(effects, *, level: float, n_boot: int, seed: str) -> tuple[list[Verdict], list[PairVerdict]]:
    """The verdicts of a ``harness_effects.HarnessEffects`` and its model pairs (module doc)."""
    verdicts: list[Verdict] = []
    for r in effects.effects.to_dict("records"):
        key = (r["model"], r["task"], r["placement"], int(r["num_fewshot"]))
        got = effects.items.get(key)
        se = math.nan
        Y = ids = None
        if got is not None:
            _, ids, Y = got
            if "null" in ids:
                se = stock_se(Y[ids.index("null")])
        scores = effects.scores
        part = scores[(scores["model"] == key[0]) & (scores["task"] == key[1]) & (scores["placement"] == key[2])
                      & (scores["num_fewshot"] == key[3]) & (scores["method"] != "null")]
        best, worst = _best_worst(part, Y, ids, level)
        if r.get("budget_design") and (_isnan(r["max"]) or _isnan(r["min"])):
            # naming the largest of noisy estimates is the max statistic: only where the validation resolves it
            best = replace(best, score=math.nan, why=EXTREMES) if best is not None else None
            worst = replace(worst, score=math.nan, why=EXTREMES) if worst is not None else None
        abstained = r.get("not_resolved") or ""
        untested = "no per-item scores"
        if Y is not None and len(ids) < 2:
            untested = _one_instruction(ids[0]) if ids else untested
        verdicts.append(Verdict(
            model=key[0], task=key[1], where=f"[{key[2]}, {key[3]}-shot]", stock=r["stock"], stock_se=se,
            n_items=int(r["n_items"]) if r["n_items"] is not None and not _isnan(r["n_items"]) else None,
            instruction_sd=r["instruction_sd"], sd_low=r["instruction_sd_low"], sd_high=r["instruction_sd_high"],
            p_value=r["permutation_p"], detectable_sd=r["detectable_sd"], best=best, worst=worst, abstained=abstained,
            placement=key[2], num_fewshot=key[3], setting="zero_shot" if key[3] == 0 else "few_shot",
            chance=effects.chance.get(key), class_p=r.get("class_shift_p", math.nan),
            projection=_projection(Y, ids, r, effects.seconds_per_cell.get(key, math.nan)), untested=untested))
    pairs = []
    for p in effects.pairs.to_dict("records"):
        where = (p["task"], p["placement"], int(p["num_fewshot"]))
        hi, lo = effects.items.get((p["higher"], *where)), effects.items.get((p["lower"], *where))
        item_flip, item_why = math.nan, "no per-item stock scores of both models"
        if n_boot <= 0:
            item_why = "--bootstrap 0"
        elif hi is not None and lo is not None and "null" in hi[1] and "null" in lo[1]:
            a, b = hi[2][hi[1].index("null")], lo[2][lo[1].index("null")]
            item_why = "the two models were scored on different items"
            if hi[0] == lo[0] and len(a) == len(b):
                item_why = ""
                item_flip = item_flip_probability(a, b, n_boot=n_boot,
                                                  rng=rng_for(seed, "verdict-item-flip", *where, p["higher"], p["lower"]))
        stock_of = {v.model: v.stock for v in verdicts if (v.task, v.placement, v.num_fewshot) == where}
        pairs.append(PairVerdict(p["task"], f"[{p['placement']}, {p['num_fewshot']}-shot]", p["higher"], p["lower"],
                                 stock_of.get(p["higher"], math.nan), stock_of.get(p["lower"], math.nan),
                                 p["flip_probability"], p["ci_low"], p["ci_high"], item_flip, p.get("not_resolved") or "",
                                 item_why))
    return verdicts, pairs


def _one_instruction(name: str) -> str:
    """Why a grid of one instruction has no test."""
    return f"one instruction ({name}): nothing to compare; add instructions (--methods null,generic,...)"


def _projection(Y: np.ndarray | None, ids: Sequence[str] | None, row: dict, seconds_per_cell: float) -> Projection | None:
    """The design that would resolve a full grid's verdict where its test found nothing and its power falls
    short (``design_projection``); None elsewhere (a budget has its own advice, ``--budget-extend``)."""
    if (Y is None or ids is None or "null" not in ids or not np.isfinite(Y).all() or Y.shape[0] < 2 or Y.shape[1] < 3
            or _isnan(row.get("permutation_p", math.nan)) or row["permutation_p"] <= ALPHA):
        return None
    return project(Y, list(ids).index("null"), seconds_per_cell=seconds_per_cell, anchor=row.get("detectable_sd", math.nan))


def _isnan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _best_worst(part: pd.DataFrame, Y: np.ndarray | None, ids: Sequence[str] | None,
                level: float) -> tuple[Pick | None, Pick | None]:
    """The highest and lowest scoring instruction of a grid's score rows (``harness_scores``)."""
    if part.empty:
        return None, None
    ranked = part.assign(_s=part["score"].fillna(-math.inf)).sort_values(["_s", "instruction"], ascending=[False, True])
    picks = []
    for r in (ranked.iloc[0], ranked.iloc[-1]):
        if r["not_resolved"]:
            picks.append(Pick(r["instruction"], math.nan, why=r["not_resolved"]))
        elif r["estimated"]:
            picks.append(Pick(r["instruction"], r["score"], r["ci_low"], r["ci_high"]))
        else:
            low = high = math.nan
            if Y is not None and ids is not None and r["instruction"] in ids:
                low, high = item_interval(Y[list(ids).index(r["instruction"])], level)
            picks.append(Pick(r["instruction"], r["score"], low, high))
    return picks[0], picks[1]


# ------------------------------------------------------------------------------------ the nine tasks


def nine_task_verdicts(aggregates, *, n_perm: int = 999, n_power: int | None = None) -> list[Verdict]:
    """One verdict per zero- and few-shot card of the nine InstructEval tasks (module doc)."""
    from .harness_effects import instruction_tests
    from .instruction_test import POWER_SIMULATIONS

    opts = aggregates.options
    n_power = POWER_SIMULATIONS if n_power is None else n_power
    out: list[Verdict] = []
    for card in aggregates.cards:
        if card.placement or card.setting not in ("zero_shot", "few_shot"):
            continue
        m = card.measures
        sd = m.get("instruction_sd")
        sd_value = sd.value if sd is not None and sd.value is not None else math.nan
        sd_low = sd.ci_low if sd is not None and sd.ci_low is not None else math.nan
        sd_high = sd.ci_high if sd is not None and sd.ci_high is not None else math.nan
        base = dict(model=card.model, task=card.task, where=f"[{card.setting.replace('_', '-')}]", setting=card.setting,
                    stock_label="null",
                    instruction_sd=sd_value, sd_low=sd_low, sd_high=sd_high)
        key = ("verdict", card.model, card.task, card.setting)
        samples = _samples_grid(aggregates, card) if card.setting == "zero_shot" else None
        if card.estimated:
            verdict = _budgeted_nine(card, aggregates, base)
            adaptive = _adaptive(aggregates, card)
            if adaptive:
                verdict = replace(verdict, abstained=f"the no-effect test: {ADAPTIVE_NO_TEST}")
            elif samples is not None:  # the test holds under a design fixed in advance: it permutes the observed cells
                Y, classes, keys = samples
                null = next((i for i, k in enumerate(keys) if k[0] == "null"), None)
                p_value, class_p, detect = instruction_tests(Y, classes, None, n_perm=n_perm, n_power=n_power,
                                                             seed=opts.seed, key=key,
                                                             power_rng=rng_for(opts.seed, "verdict-power", *key[1:]))
                why = "; ".join(f"{name}: {m[name].why}" for name in ("instruction_sd", "spread", "q05", "q95")
                                if m.get(name) is not None and m[name].value is None and m[name].why)
                verdict = replace(verdict, p_value=p_value, detectable_sd=detect, abstained=why, class_p=class_p,
                                  stock_se=stock_se(Y[null]) if null is not None else math.nan, n_items=Y.shape[1],
                                  chance=_nine_chance(aggregates, card, Y[null] if null is not None else None))
            out.append(verdict)
            continue
        matrix = (aggregates.item_matrices or {}).get((card.model, card.task))
        rows = (matrix.metric_rows.get(card.setting, {}) if matrix is not None else {})
        keys = [k for k in card.instructions if k in rows]
        if matrix is None or len(keys) != len(card.instructions) or len(keys) < 2:
            se, untested = math.nan, "no per-item scores"
            if matrix is not None and len(keys) == len(card.instructions) == 1:
                se = stock_se(matrix.values[rows[keys[0]]].mean(axis=0)) if keys[0][0] == "null" else math.nan
                untested = _one_instruction(keys[0][1])
            out.append(Verdict(**base, stock=_null_score(aggregates, card), stock_se=se, n_items=card.n_items,
                               p_value=math.nan, detectable_sd=math.nan, chance=_nine_chance(aggregates, card, None),
                               untested=untested, **_picks_without_items(aggregates, card)))
            continue
        Y = np.vstack([matrix.values[rows[k]].mean(axis=0) for k in keys])
        null = next((i for i, k in enumerate(keys) if k[0] == "null"), None)
        classes = None  # the gold answers of a zero-shot grid's items (its samples' targets), as for the harness tasks
        if samples is not None and samples[1] is not None and samples[0].shape == Y.shape and np.array_equal(samples[0], Y):
            classes = samples[1]
        binary = bool(np.isin(Y, (0.0, 1.0)).all())  # the power simulation draws 0/1 outcomes
        p_value, class_p, detect = instruction_tests(Y, classes, None, n_perm=n_perm, n_power=n_power if binary else 0,
                                                     seed=opts.seed, key=key,
                                                     power_rng=rng_for(opts.seed, "verdict-power", *key[1:]))
        names = [k[1] if str(k[1]).startswith(str(k[0])) else f"{k[0]}/{k[1]}" for k in keys]
        scores = Y.mean(axis=1)
        order = sorted((i for i in range(len(keys)) if i != null), key=lambda i: (-scores[i], names[i]))
        pick = lambda i: Pick(names[i], float(scores[i]), *item_interval(Y[i], opts.ci_level))  # noqa: E731
        methods = sorted({k[0] for k in keys})
        per_method = {meth: Y[[i for i, k in enumerate(keys) if k[0] == meth]].mean(axis=0) for meth in methods}
        best_method = max(methods, key=lambda meth: (per_method[meth].mean(), meth))
        out.append(Verdict(**base, stock=float(scores[null]) if null is not None else math.nan,
                           stock_se=stock_se(Y[null]) if null is not None else math.nan, n_items=Y.shape[1],
                           p_value=p_value, detectable_sd=detect, best=pick(order[0]), worst=pick(order[-1]),
                           class_p=class_p, chance=_nine_chance(aggregates, card, Y[null] if null is not None else None),
                           projection=(project(Y, null, anchor=detect, seconds_per_cell=_nine_seconds(aggregates, card))
                                       if null is not None and binary and p_value > ALPHA and Y.shape[1] >= 3
                                       else None),
                           no_power="" if binary else "no power simulated (per-item scores are means over demo sets)",
                           best_method=Pick(best_method, float(per_method[best_method].mean()),
                                            *item_interval(per_method[best_method], opts.ci_level))))
    return out


def _samples_grid(aggregates, card) -> tuple[np.ndarray, np.ndarray | None, list[tuple[str, str]]] | None:
    """A zero-shot card's ``(instructions x items scores, NaN where a budget did not evaluate a cell;
    each item's gold class on a classification or multiple-choice task, else None; the rows' keys)``
    read from its variants' per-sample logs under the (model, task)'s metric; None where a variant
    has no usable log."""
    from .samples import read_sample_targets

    frame, choice = aggregates.variants, aggregates.metric_choice
    if frame is None or frame.empty or choice is None or choice.empty or "samples" not in frame:
        return None
    metric = choice[(choice["model"] == card.model) & (choice["task"] == card.task)]["metric"]
    part = frame[(frame["model"] == card.model) & (frame["task"] == card.task) & (frame["setting"] == "zero_shot")]
    if metric.empty or part.empty:
        return None
    scored, targets = [], {}
    for method, iid in card.instructions:
        rows = part[(part["method"] == method) & (part["instruction"] == iid)]
        if len(rows) != 1 or not isinstance(rows["samples"].iloc[0], str):
            return None
        try:
            doc_ids, values, gold = read_sample_targets(rows["samples"].iloc[0], str(metric.iloc[0]))
        except Exception:  # an unreadable log is the pipeline's issue to report; no test here
            return None
        scored.append((doc_ids, values))
        for doc, target in zip(doc_ids.tolist(), gold):
            if targets.setdefault(doc, target) != target:
                return None  # samples of different data
    items = sorted(targets)
    if len(items) < 2 or len(scored) < 2:
        return None
    column = {doc: j for j, doc in enumerate(items)}
    Y = np.full((len(scored), len(items)), np.nan)
    for i, (doc_ids, values) in enumerate(scored):
        Y[i, [column[d] for d in doc_ids.tolist()]] = values
    classes = None
    kinds = part["task_type"].dropna().unique().tolist() if "task_type" in part else []
    if kinds and set(kinds) <= {"cls", "mcq"} and all(targets[d] is not None for d in items):
        labels = sorted({str(targets[d]) for d in items})
        classes = np.array([labels.index(str(targets[d])) for d in items], dtype=int)
    if not np.isin(Y[np.isfinite(Y)], (0.0, 1.0)).all():
        return None  # the test's power simulation draws 0/1 outcomes
    return Y, classes, list(card.instructions)


def _nine_chance(aggregates, card, y_null: np.ndarray | None) -> Chance | None:
    """The chance test of a nine-task card's null score (``chance``): the gold answers (and, where its
    rule is known, the model's) from the null variant's samples of the card's setting; ``y_null`` the
    null's per-item scores of the grid where there is one (a few-shot score: the mean over demo sets, so
    no answers are named), else that file's own. None without a readable samples file."""
    frame, choice = aggregates.variants, aggregates.metric_choice
    if frame is None or frame.empty or choice is None or choice.empty or "samples" not in frame:
        return None
    metric = choice[(choice["model"] == card.model) & (choice["task"] == card.task)]["metric"]
    part = frame[(frame["model"] == card.model) & (frame["task"] == card.task) & (frame["setting"] == card.setting)
                 & (frame["method"] == "null")]
    paths = sorted(p for p in part["samples"] if isinstance(p, str))
    if metric.empty or not paths:
        return None
    try:
        doc_ids, values, targets, scores = read_targets_and_choices(paths[0], str(metric.iloc[0]))
    except Exception:  # an unreadable log is the pipeline's issue to report
        return None
    kinds = part["task_type"].dropna().unique().tolist() if "task_type" in part else []
    y = values if y_null is None or len(y_null) != len(values) else y_null
    if not (kinds and set(kinds) <= {"cls", "mcq"}):
        return chance_of(y, None)
    gold, said = choice_answers(scores, str(metric.iloc[0]))
    if any(g is None for g in gold):
        gold = list(targets)
    single = len(paths) == 1 and (y is values or np.array_equal(y, values))
    if said is not None and (not single or any((a == g) != (v >= 0.5) for a, g, v in zip(said, gold, values))):
        said = None  # a mean over demo sets, or a rule that does not reproduce the metric's answers
    return chance_of(y, gold, predicted=said)


def _nine_seconds(aggregates, card) -> float:
    """Wall seconds per (instruction, item) cell of a card's variants (their ``seconds``, each results
    file's evaluation time shared over its variants); NaN where a file records none."""
    frame = aggregates.variants
    if frame is None or frame.empty or "seconds" not in frame:
        return math.nan
    part = frame[(frame["model"] == card.model) & (frame["task"] == card.task) & (frame["setting"] == card.setting)]
    items = card.n_items or 0
    if part.empty or not items or part["seconds"].isna().any():  # no recorded time: no cost
        return math.nan
    return float(part["seconds"].mean()) / items


def _picks_without_items(aggregates, card) -> dict[str, Pick | None]:
    """The best and worst instruction and the best method from the instructions' accuracies alone (no
    per-item scores: no intervals)."""
    frame = aggregates.instructions
    if frame is None or frame.empty or card.setting not in frame:
        return {}
    part = frame[(frame["model"] == card.model) & (frame["task"] == card.task) & frame[card.setting].notna()]
    named = [(r["method"], r["instruction"], float(r[card.setting])) for _, r in part.iterrows()]
    others = sorted(((-v, iid if str(iid).startswith(str(m)) else f"{m}/{iid}", v) for m, iid, v in named if m != "null"))
    means = {m: float(np.mean([v for mm, _, v in named if mm == m])) for m in {m for m, _, _ in named}}
    best_method = max(sorted(means), key=lambda m: means[m]) if means else None
    return {"best": Pick(others[0][1], others[0][2]) if others else None,
            "worst": Pick(others[-1][1], others[-1][2]) if others else None,
            "best_method": Pick(best_method, means[best_method]) if best_method else None}


def _null_score(aggregates, card) -> float:
    frame = aggregates.instructions
    if frame is None or frame.empty or card.setting not in frame:
        return math.nan
    part = frame[(frame["model"] == card.model) & (frame["task"] == card.task) & (frame["method"] == "null")]
    return float(part[card.setting].iloc[0]) if not part.empty and pd.notna(part[card.setting].iloc[0]) else math.nan


def _adaptive(aggregates, card) -> bool:
    """Whether a budgeted card's grid was dealt by the adaptive design (``BudgetEstimates.grids``' ``design``)."""
    grids = aggregates.budget.grids if aggregates.budget is not None else None
    if grids is None or grids.empty:
        return False
    part = grids[(grids["model"] == card.model) & (grids["task"] == card.task) & (grids["setting"] == card.setting)]
    return any(ADAPTIVE in str(d) for d in part["design"])


def _budgeted_nine(card, aggregates, base: dict) -> Verdict:
    """A budgeted nine-task grid: the budget estimates' best instruction and method; the word is not resolved."""
    budget = aggregates.budget
    best = worst = best_method = None
    if budget is not None:
        sel = lambda f: f[(f["model"] == card.model) & (f["task"] == card.task) & (f["setting"] == card.setting)]  # noqa: E731
        inst = sel(budget.instructions)
        inst = inst[inst["method"] != "null"]
        if not inst.empty:
            ranked = inst.assign(_s=inst["estimate"].fillna(-math.inf)).sort_values(["_s", "instruction"], ascending=[False, True])
            picks = []
            for r in (ranked.iloc[0], ranked.iloc[-1]):
                why = r.get("not_resolved") or ""
                name = r["instruction"] if str(r["instruction"]).startswith(str(r["method"])) else f"{r['method']}/{r['instruction']}"
                picks.append(Pick(name, math.nan, why=why) if why else Pick(name, r["estimate"], r["ci_low"], r["ci_high"]))
            best, worst = picks
            extremes = [card.measures.get(k) for k in ("maxp", "minp")]
            if any(m is not None and m.value is None for m in extremes):  # naming the largest estimate is MaxP
                best, worst = replace(best, score=math.nan, why=EXTREMES), replace(worst, score=math.nan, why=EXTREMES)
        meth = sel(budget.methods)
        if not meth.empty:
            r = meth.sort_values(["estimate", "method"], ascending=[False, True]).iloc[0]
            best_method = Pick(r["method"], r["estimate"], r["ci_low"], r["ci_high"])
    return Verdict(**base, stock=_null_score(aggregates, card), stock_se=math.nan, n_items=card.n_items, p_value=math.nan,
                   detectable_sd=math.nan, best=best, worst=worst, best_method=best_method,
                   abstained="a budgeted grid: the verdict needs every (instruction, item) cell")


# ------------------------------------------------------------------------------------ the aggregation's


def verdicts_of(aggregates) -> Verdicts:
    """The aggregation's verdicts, computed once (cached on ``aggregates``); each card gets its own
    (``SensitivityCard.verdict``)."""
    cached = getattr(aggregates, "_verdicts", None)
    if cached is not None:
        return cached
    opts = aggregates.options
    out = Verdicts()
    if getattr(aggregates, "harness", None) is not None:
        out.harness, out.pairs = harness_verdicts(aggregates.harness, level=opts.ci_level, n_boot=opts.n_boot, seed=opts.seed)
    out.nine = nine_task_verdicts(aggregates)
    ni = getattr(aggregates, "ni", None)
    if ni is not None:
        out.ni = list(ni.verdicts)
    by_card = {(v.model, v.task, v.placement, v.setting): v for v in [*out.harness, *out.nine]}
    for card in aggregates.cards:
        v = by_card.get((card.model, card.task, card.placement, card.setting))
        if v is not None:
            card.verdict = v.as_dict()
    aggregates._verdicts = out
    return out
