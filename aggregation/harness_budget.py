"""A budgeted harness grid's statistics from its draws, printed only where the validation resolves them.

A harness task swept with ``--budget F`` has the stock (null) instruction on every row and each other
instruction on its own cells (``harness_effects``). Its summary across instructions (min, median,
max, the stock score's percentile) is computed draw by draw from the crossed item-response model's
predictive draws (``draw_statistics``), and each is kept only where ``budget_validity.resolution``
says the grid's design resolves it at its budget; elsewhere the value is NaN and ``not_resolved``
says why and what would resolve it. The same holds for each instruction's score (``instruction``)
and the instruction-effect SD (``instruction_sd``).

Example (a uniform grid at 2% against a table that resolves nothing below 10%):
    >>> table = {"item-response": {"uniform": {"0.1": {"max": {"resolved": True}}}}}
    >>> design_of([{"fraction": 0.02}]), resolve("max", ("uniform", 0.02), 200, table=table).why
    (('uniform', 0.02, 0.02), 'not resolved at --budget 0.02 (needs about 20 cells per instruction; run --budget-extend 0.1)')

The ``--budget-min-items`` floor can deal more than the budget asks (10 items of 40 at ``--budget
0.02``): the cells dealt decide.
    >>> design = design_of([{"fraction": 0.02, "items": list(range(10)), "n_items": 40}])
    >>> design, resolve("max", design, 40, table=table).resolved
    (('uniform', 0.25, 0.02), True)
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from instructeval_tasks.estimation.item_response import ESTIMATOR

from .budget_validity import Resolution, resolution
from .draw_statistics import EFFECT_STATISTICS, statistic_draws, summarize


FLOOR_RAISED = 1.1  # the cells dealt count instead of --budget where they exceed it by this factor


def design_of(records: Sequence[Mapping[str, Any]]) -> tuple:
    """``(design, budget, nominal)`` of a grid's budget records: the ``--budget-design`` (a record without
    one is uniform), the share of cells its budgeted instructions were dealt (the mean of each record's
    ``len(items) / n_items``: what the estimates rest on, ``--budget-min-items`` floors included) where
    that exceeds the largest share asked for (``--budget``, or ``--budget-extend``'s) by more than a tenth
    (else that share), and the share asked for.
    Resolution is judged on the cells dealt, so that the advice it gives (``--budget-extend B``) adds cells."""
    designs = sorted({str(r.get("design", "uniform")) for r in records if r})
    shares = [float(r[key]) for r in records if r for key in ("fraction", "extend")
              if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)]
    nominal = max(shares) if shares else math.nan
    dealt = [len(r["items"]) / r["n_items"] for r in records if r and isinstance(r.get("items"), list)
             and isinstance(r.get("n_items"), int) and r["n_items"] > 0 and len(r["items"]) < r["n_items"]]
    share = float(np.mean(dealt)) if dealt and not math.isnan(nominal) else nominal
    # a draw deals about the share asked; a floor that raised it by more than a tenth is what decides
    return ",".join(designs) or "uniform", share if share > FLOOR_RAISED * nominal else nominal, nominal


def resolve(statistic: str, design: tuple, n_items: int, *,
            table: Mapping[str, Any] | None = None) -> Resolution:
    """``budget_validity.resolution`` of ``statistic`` under the crossed model, for ``design`` (``design_of``)."""
    return resolution(statistic, ESTIMATOR, design[0], design[1], n_items, table=table,
                      nominal=design[2] if len(design) > 2 else None)


def effect_statistics(drawn: np.ndarray, stock: int | None, level: float, design: tuple[str, float], n_items: int,
                      *, table: Mapping[str, Any] | None = None) -> tuple[dict[str, float], list[str]]:
    """The columns ``<s>``, ``<s>_low``, ``<s>_high`` of every ``draw_statistics.EFFECT_STATISTICS`` (scores as
    fractions, the percentile in percent), NaN where not resolved, and the reasons (``"<s>: <why>"``)."""
    columns: dict[str, float] = {}
    reasons: list[str] = []
    for name in EFFECT_STATISTICS:
        verdict = resolve(name, design, n_items, table=table)
        summary = summarize(statistic_draws(name, drawn, stock), level)
        if not verdict.resolved:
            reasons.append(f"{name}: {verdict.why}")
            summary = type(summary)(math.nan, math.nan, math.nan)
        columns.update({name: summary.estimate, f"{name}_low": summary.low, f"{name}_high": summary.high})
    return columns, reasons


def merged_reasons(reasons: Sequence[str]) -> str:
    """One sentence for several statistics with the same reason: ``"min, max: <why>"``.

        >>> merged_reasons(["min: not resolved (x)", "max: not resolved (x)", "instruction_sd: no (y)"])
        'min, max: not resolved (x); instruction_sd: no (y)'
    """
    by_why: dict[str, list[str]] = {}
    for reason in reasons:
        name, _, why = reason.partition(": ")
        by_why.setdefault(why, []).append(name)
    return "; ".join(f"{', '.join(names)}: {why}" for why, names in by_why.items())

