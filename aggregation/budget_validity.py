"""Which statistics a budgeted design resolves, as the budget validation measured them.

``budget_validity.json`` (beside this module) is written by ``benchmarks/budget_validation.py
--write-validity``: for each estimator (``item-response``, ``choice scores``), design (``uniform``,
``balanced``, ``adaptive``), validated budget (``0.05``, ``0.1``, ``0.25``) and statistic
(``draw_statistics.STATISTICS``, ``instruction`` for each instruction's accuracy, ``instruction_sd``),
the pooled interval coverage over the shipped full grids, the worst grid's (the grid with the strongest
evidence of a coverage below ``RULE["grid_coverage_low"]``: the smallest one-sided binomial p-value
of its intervals' hits), the median relative bias
(``instruction_sd``) and ``resolved``: whether the statistic meets the validation's targets there
(``RULE``). A report prints a budgeted statistic only where :func:`resolution` says it is resolved;
elsewhere it prints the reason instead of a number.

``INSTRUCTEVAL_BUDGET_VALIDITY=FILE`` replaces the shipped table by another one of the same form (a
validation of your own grids, ``benchmarks/budget_validation.py --write-validity FILE``).

A run's budget ``f`` counts as the largest validated budget ``b <= f`` of its design: a statistic is
resolved if it is resolved at ``b``. Otherwise the reason names the smallest validated budget that
resolves it (``needs about N cells per instruction; run --budget-extend B``), or says none does.

Example:
    >>> table = {"item-response": {"uniform": {"0.1": {"max": {"resolved": False}}, "0.25": {"max": {"resolved": True}}}}}
    >>> resolution("max", "item-response", "uniform", 0.1, 200, table=table).why
    'not resolved at --budget 0.1 (needs about 50 cells per instruction; run --budget-extend 0.25)'
    >>> resolution("max", "item-response", "uniform", 0.3, 200, table=table).resolved
    True
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .draw_statistics import STATISTICS
from .issues import AggregationError

TABLE_PATH = Path(__file__).with_name("budget_validity.json")
TABLE_ENV = "INSTRUCTEVAL_BUDGET_VALIDITY"  # another table's path
# What "resolved" means (the benchmark applies it; the page states it)
# (a grid's coverage counts as below grid_coverage_low where a one-sided binomial test of its intervals'
# hits says so at the level grid_evidence: with 10 seeds, 8 of 10 is no evidence against 85%)
RULE = {"coverage_low": 0.90, "coverage_high": 0.97, "grid_coverage_low": 0.85, "grid_evidence": 0.05, "sd_bias": 0.20,
        "sd_floor_points": 1.0}


@dataclass(frozen=True)
class Resolution:
    """Whether a statistic is resolved; ``why`` is the sentence a report prints instead of a number."""

    resolved: bool
    why: str | None = None


def _shipped() -> Mapping[str, Any]:
    """The ``resolved`` table of ``$INSTRUCTEVAL_BUDGET_VALIDITY``, else the shipped one ({} without)."""
    return _read(os.environ.get(TABLE_ENV) or str(TABLE_PATH))


@lru_cache(maxsize=4)
def _read(path: str) -> Mapping[str, Any]:
    file = Path(path)
    if not file.is_file():
        if path != str(TABLE_PATH):
            raise AggregationError(f"{TABLE_ENV}={path}: no such file; unset it to use the shipped table")
        return {}
    fix = "give a file written by benchmarks/budget_validation.py --write-validity, or unset it"
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise AggregationError(f"{TABLE_ENV}={path}: cannot be read as JSON ({err}); {fix}") from None
    where = _shape_error(data)
    if where:
        raise AggregationError(f"{TABLE_ENV}={path}: {where}; {fix}")
    return data["resolved"]


def _shape_error(data: Any) -> str:
    """Where ``data`` departs from ``{"resolved": {estimator: {design: {budget: {statistic: {"resolved":
    bool}}}}}}`` ("" where it does not)."""
    if not isinstance(data, dict) or not isinstance(data.get("resolved"), dict):
        return "expected a JSON object with a \"resolved\" object"
    for estimator, designs in data["resolved"].items():
        if not isinstance(designs, dict):
            return f"resolved.{estimator} is not an object of designs"
        for design, budgets in designs.items():
            if not isinstance(budgets, dict):
                return f"resolved.{estimator}.{design} is not an object of budgets"
            for budget, statistics in budgets.items():
                try:
                    float(budget)
                except ValueError:
                    return f"resolved.{estimator}.{design}: budget {budget!r} is not a number"
                if not isinstance(statistics, dict):
                    return f"resolved.{estimator}.{design}.{budget} is not an object of statistics"
                for name, entry in statistics.items():
                    if not isinstance(entry, dict) or not isinstance(entry.get("resolved"), bool):
                        return f"resolved.{estimator}.{design}.{budget}.{name}.resolved is not true or false"
    return ""


def check_table() -> None:
    """Read ``$INSTRUCTEVAL_BUDGET_VALIDITY`` now (a command checks it before any work): one clear error."""
    _shipped()


def validated_budgets(estimator: str, design: str, table: Mapping[str, Any] | None = None) -> list[float]:
    """The budgets the validation measured for ``estimator`` and ``design``, ascending."""
    table = _shipped() if table is None else table
    return sorted(float(b) for b in table.get(estimator, {}).get(design, {}))


def resolution(statistic: str, estimator: str, design: str, fraction: float, n_items: int,
               *, table: Mapping[str, Any] | None = None, nominal: float | None = None) -> Resolution:
    """Whether ``statistic`` of a grid of ``n_items`` items, estimated by ``estimator`` from cells
    dealt by ``design`` at a share ``fraction`` of its cells, is resolved (module doc); ``nominal``: the
    ``--budget`` asked for, where the cells dealt exceed it (``--budget-min-items``)."""
    table = _shipped() if table is None else table
    at = (f"--budget {nominal:g} ({fraction:.1%} of the cells dealt)" if nominal is not None
          and not math.isnan(nominal) and fraction > nominal + 1e-9 else f"--budget {fraction:g}")
    by_budget = table.get(estimator, {}).get(design, {})
    budgets = sorted(by_budget, key=float)
    if not budgets:
        return Resolution(False, f"not resolved: the {design} design is not validated for the {estimator} estimator "
                                 "(benchmarks/budget_validation.py --write-validity measures it)")

    def ok(budget: str) -> bool:
        return bool(by_budget[budget].get(statistic, {}).get("resolved", False))

    below = [b for b in budgets if float(b) <= fraction + 1e-9]
    if below and ok(below[-1]):
        return Resolution(True)
    above = [b for b in budgets if float(b) > fraction + 1e-9 and ok(b)]
    if above:
        need = float(above[0])
        return Resolution(False, f"not resolved at {at} (needs about {math.ceil(need * n_items)} cells "
                                 f"per instruction; run --budget-extend {need:g})")
    return Resolution(False, f"not resolved at {at}: no validated budget of the {design} design "
                             f"(up to {float(budgets[-1]):g}) resolves it; evaluate the full grid (no --budget)")


# every statistic the validation judges: those of draw_statistics, each instruction's accuracy, the SD
VALIDATED = (*STATISTICS, "instruction", "instruction_sd")
ESTIMATORS = ("item-response", "choice scores")
DESIGNS = ("uniform", "balanced", "adaptive")
BUDGETS = (0.05, 0.1, 0.25)


def table_of(resolved: Callable[[str, str, float], bool], statistics: Sequence[str] = VALIDATED) -> dict[str, Any]:
    """A table of this module's form (``{"resolved": ...}``) for both estimators, every design and
    the budgets 5, 10 and 25%, in which ``resolved(statistic, design, budget)`` says where each of
    ``statistics`` (default every validated one) is resolved (for a table of your own, or a test's).

        >>> t = table_of(lambda s, d, b: b >= 0.1, ["max"])["resolved"]
        >>> resolution("max", "item-response", "balanced", 0.05, 100, table=t).resolved
        False
    """
    return {"resolved": {estimator: {design: {str(b): {s: {"resolved": bool(resolved(s, design, b))} for s in statistics}
                                              for b in BUDGETS} for design in DESIGNS} for estimator in ESTIMATORS}}
