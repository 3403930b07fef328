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
    (('uniform', 0.02), 'not resolved at --budget 0.02 (needs about 20 cells per instruction; run --budget-extend 0.1)')
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from instructeval_tasks.estimation.item_response import ESTIMATOR

from .budget_validity import Resolution, resolution
from .draw_statistics import EFFECT_STATISTICS, statistic_draws, summarize


def design_of(records: Sequence[Mapping[str, Any]]) -> tuple[str, float]:
    """``(design, budget)`` of a grid's budget records: the ``--budget-design`` (a record without one
    is uniform) and the largest share its cells reached (``--budget``, or ``--budget-extend``'s)."""
    designs = sorted({str(r.get("design", "uniform")) for r in records if r})
    shares = [float(r[key]) for r in records if r for key in ("fraction", "extend")
              if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)]
    return ",".join(designs) or "uniform", max(shares) if shares else math.nan


def resolve(statistic: str, design: tuple[str, float], n_items: int, *,
            table: Mapping[str, Any] | None = None) -> Resolution:
    """``budget_validity.resolution`` of ``statistic`` under the crossed model, for ``design`` (``design_of``)."""
    return resolution(statistic, ESTIMATOR, design[0], design[1], n_items, table=table)


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

