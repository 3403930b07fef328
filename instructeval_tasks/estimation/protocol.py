"""What a budgeted grid's estimator is: fitted to the observed cells, it gives estimates and draws.

A *grid* is one (task, setting) of a budgeted sweep (``instructeval run --budget F``): its rows are
the instructions, its columns the test items, and the budget evaluated some of its cells
(:class:`Cells`). An :class:`Estimator` fits the observed cells (:meth:`Estimator.fit`); the
:class:`GridFit` it returns gives

- ``probabilities()``: every cell's predicted P(correct), ``n_rows x n_cols`` (what the adaptive
  design's rounds allocate their cells by, ``item_response.allocate_cells``);
- ``estimates()``: every instruction's accuracy on the full grid, the observed cells as scored and
  the others predicted, ``acc_i = (sum_{j observed} y_ij + sum_{j not observed} p_ij) / n``;
- ``draws(n_draws, rng)``: ``n_draws x n_rows`` accuracies on the full grid from the model's
  predictive distribution (the intervals, ``P(best)``);
- ``quantiles_from_draws``: whether the quantiles across instructions are the draws' (the
  estimates are pulled toward their method's, so their own quantiles are too narrow) or the
  estimates' own;
- ``s_instruction``, ``s_item``: the fitted spread of the instruction and item effects (logits).

The estimators are registered under the name the results record (``registry``: a round's
``budget.allocation``, the aggregation's ``estimator`` column).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class ChoiceGrid:
    """A classification grid's label scores (``choice_scores``): ``scores`` (``rows x items x labels``,
    NaN where unobserved) under the primary metric's rule, each item's gold label index ``gold``."""

    scores: np.ndarray
    gold: np.ndarray
    labels: tuple


@dataclass(frozen=True)
class Cells:
    """The observed cells of one grid: instruction ``rows[k]`` on item ``cols[k]`` scored ``y[k]``.

    ``groups[i]`` (optional) is instruction i's method index; without it every instruction shares
    one effect. ``classes[j]`` (optional) is item j's gold class index; with it an instruction's
    effect is one per class (``item_response``); without it one per instruction. ``label_scores``
    (optional) are every observed cell's label scores on a classification grid (``choice_scores``).
    """

    rows: np.ndarray
    cols: np.ndarray
    y: np.ndarray
    n_rows: int
    n_cols: int
    groups: np.ndarray | None = None
    classes: np.ndarray | None = None
    label_scores: ChoiceGrid | None = None

    @property
    def n_groups(self) -> int:
        return 1 if self.groups is None else int(self.groups.max()) + 1

    @property
    def n_classes(self) -> int:
        return 1 if self.classes is None else int(np.max(self.classes)) + 1

    def group_index(self) -> np.ndarray:
        return np.zeros(self.n_rows, dtype=int) if self.groups is None else np.asarray(self.groups, dtype=int)

    def class_index(self) -> np.ndarray:
        return np.zeros(self.n_cols, dtype=int) if self.classes is None else np.asarray(self.classes, dtype=int)

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """``(Y, O)``: ``n_rows x n_cols`` scores (0 where unobserved) and the observed mask."""
        observed = np.zeros((self.n_rows, self.n_cols), dtype=bool)
        observed[self.rows, self.cols] = True
        scores = np.zeros((self.n_rows, self.n_cols))
        scores[self.rows, self.cols] = self.y
        return scores, observed


@runtime_checkable
class GridFit(Protocol):
    """One grid's fit (module doc)."""

    name: ClassVar[str]  # the estimator's (``Estimator.name``)
    quantiles_from_draws: ClassVar[bool]

    @property
    def s_instruction(self) -> float: ...

    @property
    def s_item(self) -> float: ...

    def probabilities(self) -> np.ndarray: ...

    def estimates(self) -> np.ndarray: ...

    def draws(self, n_draws: int, rng: np.random.Generator) -> np.ndarray: ...


@runtime_checkable
class Estimator(Protocol):
    """A model of a grid's cells, registered under ``name`` (``registry.ESTIMATORS``)."""

    name: ClassVar[str]  # what the results record: a round's ``budget.allocation``, the aggregation's ``estimator``

    def applies(self, cells: Cells) -> bool:
        """Whether it can fit ``cells`` (the label-score model needs their label scores)."""
        ...

    def fit(self, cells: Cells) -> GridFit:
        """Fit the observed cells; deterministic (the draws take their generator)."""
        ...
