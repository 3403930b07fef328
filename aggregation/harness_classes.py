"""Each instruction's accuracy per gold answer, and its score at the split's own class mix.

A harness task's rows (``--test-sample``) and a budget's cells are balanced over the gold answers of a
multiple-choice task, so an instruction that moves every answer toward one label (more "yes" on BoolQ)
leaves its accuracy on those rows unchanged: it gains on one class what it loses on the other. The
leaderboard's score is taken at the whole split's class mix (BoolQ's validation split is about 62%
"yes"), where the same shift moves it. Per (model, task, placement, n-shot) with gold classes, each
instruction gets, per class ``c``, its accuracy ``acc_ic`` on the class's items and

    at_split_mix_i = sum_c pi_c acc_ic,    pi_c = the class's share of the evaluation split

(``split_classes`` of the variants' ``harness`` record; without it the rows' own shares, and
``mix`` says ``rows``). A full grid's values are exact; a budgeted grid's come from the crossed
model's drawn grids (the draws' median and percentile interval), and are NaN where the budget does
not resolve its instruction scores (``harness_budget``).

Example (one instruction answering "yes" to everything on 2 "yes" and 2 "no" rows; the split 60% "yes"):
    >>> Y = np.array([[1, 1, 0, 0.]])
    >>> rows = class_rows(["x"], Y, np.array([1, 1, 0, 0]), ["no", "yes"], {"no": 40, "yes": 60}, None, 0.95)
    >>> [(r["class"], r["accuracy"]) for r in rows], rows[0]["at_split_mix"]
    ([('no', 0.0), ('yes', 1.0)], 0.6)
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from .budget_validity import Resolution
from .draw_statistics import summarize

CLASS_COLUMNS = ["model", "task", "placement", "num_fewshot", "method", "instruction", "class", "items", "accuracy",
                 "accuracy_low", "accuracy_high", "split_share", "mix", "at_split_mix", "at_split_mix_low",
                 "at_split_mix_high", "not_resolved"]


def class_rows(instructions: Sequence[str], Y: np.ndarray, classes: np.ndarray, labels: Sequence[str],
               split: Mapping[str, int] | None, by_class: np.ndarray | None, level: float, *,
               resolved: Resolution | None = None) -> list[dict[str, Any]]:
    """One row per (instruction, class) (module doc); ``by_class`` the drawn per-class accuracies
    (draws x instructions x classes) of a budgeted grid, None for a full one. The caller adds the
    grid's keys (model, task, ...)."""
    n_classes = len(labels)
    if split and sum(split.get(label, 0) for label in labels) > 0:
        total = sum(split.get(label, 0) for label in labels)
        shares, mix = np.array([split.get(label, 0) / total for label in labels]), "split"
    else:
        shares, mix = np.bincount(classes, minlength=n_classes) / len(classes), "rows"
    unresolved = by_class is not None and resolved is not None and not resolved.resolved
    out = []
    for i, name in enumerate(instructions):
        exact = by_class is None or bool(np.isfinite(Y[i]).all())  # every item scored (the stock row): exact
        if exact:
            acc = np.array([np.nanmean(Y[i, classes == c]) if np.isfinite(Y[i, classes == c]).any() else math.nan
                            for c in range(n_classes)])
            per_class = [(float(a), math.nan, math.nan) for a in acc]
            mixed = (float(shares @ acc), math.nan, math.nan)
        else:
            per_class = [tuple(summarize(by_class[:, i, c], level).__dict__.values()) for c in range(n_classes)]
            mixed = tuple(summarize(by_class[:, i, :] @ shares, level).__dict__.values())
        hidden = unresolved and not exact
        for c, label in enumerate(labels):
            values = (math.nan,) * 3 if hidden else per_class[c]
            mixed_values = (math.nan,) * 3 if hidden else mixed
            out.append({"instruction": name, "class": label, "items": int(np.isfinite(Y[i, classes == c]).sum()),
                        "accuracy": values[0], "accuracy_low": values[1], "accuracy_high": values[2],
                        "split_share": float(shares[c]) if mix == "split" else math.nan, "mix": mix,
                        "at_split_mix": mixed_values[0], "at_split_mix_low": mixed_values[1],
                        "at_split_mix_high": mixed_values[2], "not_resolved": resolved.why if hidden else ""})
    return out
