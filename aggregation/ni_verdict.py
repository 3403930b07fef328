r"""The Natural Instructions verdict and sensitivity card: one of each per (model, task), on ROUGE-L.

The grid is ``Y``: every instruction of the (model, task) (no instruction, the bank instructions, each
encoding of the task's own header) x the instances every one of them scored, ``Y_ij`` the instance's
ROUGE-L (the benchmark's per-instance value, in [0, 1]).

- the **standard score** plays the stock score: the benchmark's standard encoding ``definition_pos2``
  (Definition + 2 positive examples), with its standard error over instances
  ``SE = 100 * sd(y_std, ddof=1) / sqrt(n)`` (``verdict.stock_se``);
- the **instruction effect**: the instruction-effect SD beyond instance noise
  (``sensitivity_measures.instruction_effect_sd``) with the card's two-way bootstrap interval, the
  within-item permutation test's ``p`` (``instruction_test.permutation_test``) and, where it finds
  nothing at 5%, the shift SD the grid detects with 80% power (``instruction_test.detectable_shift_sd``:
  ROUGE-L is graded, so the power is simulated by shifting the observed scores, not by drawing 0/1);
- the **word**: ``sensitive`` (``p <= 0.05``), ``robust`` (``p > 0.05`` and the detectable SD no larger
  than the standard score's SE), ``not resolved`` (otherwise), as for every verdict (``verdict``);
- the **best and worst instruction** other than the standard one, each ``s_i +- z sd(y_i) / sqrt(n)``.

A **budgeted** grid (``--budget``: each instruction scored its dealt share of the instances, NaN
elsewhere) is tested on its observed cells, which the design fixed in advance (the test keeps its size),
with the standard score and the picks over each instruction's own instances; its instruction SD and
card need every cell (no estimator of graded scores under a budget is validated), so it is ``sensitive``
or ``not resolved``, never ``robust``, and has no card.

The card (``sensitivity_card.build_card``, metric ``rougeL``, setting ``zero_shot``) holds AvgP, MaxP,
MinP, the spread, CPS, the quantiles, the instruction-effect and item-noise SDs, each with its interval.
Seeds: ``bootstrap.rng_for(seed, "ni-verdict", model, task)`` for the test and the power, the card's
own key for its bootstrap.

Example (a grid in which the header moves every instance):
    >>> v = ni_verdict("m", "ni_task190_snli_classification", ["null", "definition_pos2", "definition"],
    ...                np.array([[0.0] * 30, [1.0] * 30, [0.5] * 30]), level=0.95, seed="doc", n_perm=99, n_power=0)
    >>> v.word, v.stock_label, round(100 * v.stock, 1)
    ('sensitive', 'definition_pos2', 100.0)
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

import numpy as np

from .bootstrap import rng_for
from .chance import Chance, chance_of
from .harness_effects import NO_EFFECT_ALPHA as ALPHA
from .instruction_test import POWER_SIMULATIONS, detectable_shift_sd, permutation_test
from .sensitivity_card import SensitivityCard, build_card
from .verdict import MIN_ROWS, Pick, Verdict, item_interval, stock_se

BUDGETED = ("a budgeted grid: its instruction SD and card need every cell (no validated estimator for graded "
            "scores under a budget); rerun without --budget")
STANDARD = "definition_pos2"  # the benchmark's standard encoding (Tk-Instruct's Definition + 2 positive examples)
METRIC = "rougeL"
WHERE = "[ROUGE-L, zero-shot]"


def ni_grid(variants: Sequence) -> tuple[list[str], np.ndarray] | None:
    """``(instruction labels, instructions x instances)`` of one (model, task)'s variants (``ni_report.NIVariant``)
    over the instances every one scored; a budgeted sweep's over every instance any one scored, NaN
    where an instruction was not dealt it. None with fewer than 2 instructions or 2 instances."""
    with_values = [v for v in variants if v.values.get(METRIC)]
    if len(with_values) < 2:
        return None
    sets = [set(v.values[METRIC]) for v in with_values]
    ids = sorted(set.union(*sets) if any(v.budgeted for v in with_values) else set.intersection(*sets))
    if len(ids) < 2:
        return None
    labels = [v.instruction for v in with_values]
    return labels, np.array([[v.values[METRIC].get(i, np.nan) for i in ids] for v in with_values], dtype=np.float64)


def _method(label: str) -> str:
    if label == "null":
        return "null"
    return label.split("-", 1)[0] if "-" in label else "ni_header"


def standard_chance(members: Sequence) -> Chance | None:
    """The chance test of the standard encoding's exact match (``chance``): against always giving the
    instances' most frequent acceptable output (normalised as the benchmark compares answers), the
    floor on its ROUGE-L; None without the standard variant's per-instance values."""
    std = next((v for v in members if v.instruction == STANDARD), None)
    if std is None or not std.values.get("exact_match"):
        return None
    ids = sorted(std.values["exact_match"])
    y = np.array([std.values["exact_match"][i] for i in ids])
    rouge = std.values.get(METRIC) or {}
    floor = float(np.mean([rouge[i] for i in ids])) if all(i in rouge for i in ids) else None
    gold = [std.gold.get(i) for i in ids] if all(i in std.gold for i in ids) else None
    said = [std.said.get(i) for i in ids]
    if gold is None or any(a is None for a in said) or any((a in g) != (v >= 0.5) for a, g, v in zip(said, gold, y)):
        said = None  # answers unknown, or not those the exact match scored
    return chance_of(y, gold, predicted=said, floor_score=floor)


def ni_verdict(model: str, task: str, labels: Sequence[str], Y: np.ndarray, *, level: float, seed: str,
               n_perm: int = 999, n_power: int | None = None, card: SensitivityCard | None = None,
               chance: Chance | None = None) -> Verdict:
    """The verdict of one (model, task)'s grid (module doc); ``card`` gives the instruction SD's interval,
    ``chance`` the standard encoding's chance test (``standard_chance``)."""
    n_power = POWER_SIMULATIONS if n_power is None else n_power
    labels = list(labels)
    std = labels.index(STANDARD) if STANDARD in labels else None
    rng = rng_for(seed, "ni-verdict", model, task)
    test = permutation_test(Y, n_perm=n_perm, rng=rng)
    detect = math.nan
    if test.p_value > ALPHA and n_power > 0:
        found = detectable_shift_sd(Y, alpha=ALPHA, n_sim=n_power, rng=rng)
        detect = found.detectable_sd if found.detectable_sd is not None else math.nan
    sd = card.measures.get("instruction_sd") if card is not None else None
    scores = np.nanmean(Y, axis=1)  # a budgeted grid: each instruction over the instances it was dealt
    budgeted = bool(np.isnan(Y).any())
    others = sorted((i for i in range(len(labels)) if i != std), key=lambda i: (-scores[i], labels[i]))

    def pick(i: int) -> Pick:
        row = Y[i][np.isfinite(Y[i])]
        return Pick(labels[i], float(scores[i]), *item_interval(row, level))

    return Verdict(model, task, WHERE, float(scores[std]) if std is not None else math.nan,
                   stock_se(Y[std][np.isfinite(Y[std])]) if std is not None else math.nan, int(Y.shape[1]),
                   sd.value if sd is not None and sd.value is not None else math.nan,
                   sd.ci_low if sd is not None and sd.ci_low is not None else math.nan,
                   sd.ci_high if sd is not None and sd.ci_high is not None else math.nan,
                   test.p_value, detect, best=pick(others[0]) if others else None,
                   worst=pick(others[-1]) if others else None, setting="zero_shot", stock_label=STANDARD,
                   no_power="" if n_power > 0 else "no power simulated", abstained=BUDGETED if budgeted else "",
                   chance=chance)


def ni_card(model: str, task: str, labels: Sequence[str], Y: np.ndarray, *, n_boot: int, level: float,
            seed: str) -> SensitivityCard:
    """The sensitivity card of one (model, task)'s grid (module doc); on fewer than ``MIN_ROWS`` instances
    it has no intervals (a bootstrap of a handful of instances prints certainty it does not have)."""
    few = Y.shape[1] < MIN_ROWS
    card = build_card(model, task, "zero_shot", [(_method(label), label) for label in labels], Y, None,
                      n_boot=0 if few else n_boot, level=level, seed=seed, metric=METRIC)
    if few and n_boot > 0:
        card.notes.append(f"only {Y.shape[1]} instances: no intervals (they need {MIN_ROWS})")
    return card


def ni_verdicts_and_cards(variants: Sequence, *, n_boot: int, level: float, seed: str, n_perm: int = 999,
                          n_power: int | None = None) -> tuple[list[Verdict], list[SensitivityCard]]:
    """Every (model, task)'s verdict and card, in (model, task) order; a grid without 2 instructions
    and 2 shared instances has neither."""
    grouped: dict[tuple[str, str], list] = {}
    for v in variants:
        grouped.setdefault((v.model, v.task), []).append(v)
    verdicts: list[Verdict] = []
    cards: list[SensitivityCard] = []
    for (model, task), members in sorted(grouped.items()):
        grid = ni_grid(members)
        if grid is None:
            continue
        labels, Y = grid
        card = None if np.isnan(Y).any() else ni_card(model, task, labels, Y, n_boot=n_boot, level=level, seed=seed)
        verdict = ni_verdict(model, task, labels, Y, level=level, seed=seed, n_perm=n_perm, n_power=n_power, card=card,
                             chance=standard_chance(members))
        std = next((v for v in members if v.instruction == STANDARD), None)
        if STANDARD not in labels and std is not None and METRIC in std.means:
            # its score is in the results, its per-instance values were dropped (reported): the same number
            # as the score tables, without the SE those values would give
            verdict = replace(verdict, stock=std.means[METRIC])
        verdicts.append(verdict)
        if card is not None:
            card.verdict = verdict.as_dict()
            cards.append(card)
    return verdicts, cards
