"""The estimators of budgeted grids, by the name the results record.

``ESTIMATORS`` maps each name (a round's ``budget.allocation``, the aggregation's ``estimator``
column) to its :class:`~.protocol.Estimator`, in order of preference: :func:`estimator_for` gives
the first that applies to a grid's cells -- the label-score model where the cells carry their
label scores (a classification grid scored by ``acc`` or ``acc_per_token`` whose samples give
every label's log-likelihood), else the crossed item-response model, which fits any grid.

Example:
    >>> import numpy as np
    >>> from .protocol import Cells
    >>> cells = Cells(np.array([0, 1]), np.array([0, 1]), np.array([1.0, 0.0]), 2, 2)
    >>> list(ESTIMATORS), estimator_for(cells).name
    (['choice scores', 'item-response'], 'item-response')
"""

from __future__ import annotations

from .choice_scores import ChoiceScoreEstimator
from .item_response import ItemResponseEstimator
from .protocol import Cells, Estimator

ESTIMATORS: dict[str, Estimator] = {estimator.name: estimator
                                    for estimator in (ChoiceScoreEstimator(), ItemResponseEstimator())}


def estimator_for(cells: Cells) -> Estimator:
    """The first estimator of ``ESTIMATORS`` that applies to ``cells``."""
    return next(estimator for estimator in ESTIMATORS.values() if estimator.applies(cells))
