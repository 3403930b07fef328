"""Estimates of a budgeted sweep's grids: every instruction's accuracy on the full grid from the
cells the budget evaluated.

- ``protocol``: the observed cells (``Cells``, ``ChoiceGrid``) and what an estimator is
  (``Estimator``: fit the observed cells -> ``GridFit``: estimates and draws);
- ``registry``: the estimators by the name the results record, ``estimator_for(cells)``;
- ``item_response``: the crossed item-response model, which fits any grid;
- ``choice_scores``: the label-score model of a classification grid whose samples give every
  label's score.

The sweep's adaptive rounds choose their cells by a grid's fit (``instructeval_tasks.sweep.budget``);
the aggregation reports the estimates (``instructeval_aggregation.budgeted``). See docs/budget.md.
"""

from __future__ import annotations

from .choice_scores import ESTIMATOR as CHOICE_SCORES
from .item_response import ESTIMATOR as ITEM_RESPONSE
from .protocol import Cells, ChoiceGrid, Estimator, GridFit
from .registry import ESTIMATORS, estimator_for

__all__ = ["CHOICE_SCORES", "ESTIMATORS", "ITEM_RESPONSE", "Cells", "ChoiceGrid", "Estimator", "GridFit", "estimator_for"]
