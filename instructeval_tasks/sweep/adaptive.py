"""``--budget-design adaptive``: after a uniform first slice, rounds of cells where the model is least sure.

The first slice is ``ADAPTIVE_FIRST_SHARE`` of the budget, dealt as the uniform design deals it
(``budget.grid_cells_of``). Round r (1..``ADAPTIVE_ROUNDS``) of a grid starts once every variant of
its earlier rounds is saved: the score of every evaluated cell is read back from the saved per-sample
logs (the primary metric the aggregation uses), the model the aggregation will estimate the grid by
is fitted (``estimation.estimator_for``) -- on a classification grid, the label scores'
(``choice_scores``: every label's log-likelihood in the logs, the labels' token counts in the
results), else the crossed item-response model -- and ``budget.next_round_cells`` picks
``ceil(cells left / rounds left)`` cells -- instructions with the most uncertain unobserved total,
and in each the items whose outcome is least certain. Each round's ``budget`` record names the
model in ``allocation`` (its registered name: ``choice scores`` or ``item-response``). Each
instruction that gets cells becomes a variant ``<name>__r<r>`` of its own: the same instruction,
setting and task config, its ``budget`` record listing the new items and ``round: r``, evaluated and
saved like any variant. The aggregation joins an instruction's rounds into one row of its grid.

The fit is deterministic, so rerunning the command re-derives every round from the saved cells and
resumes where an interruption stopped it. At the end a grid has as many cells as the uniform design
at the same budget. The rounds are chosen in the sweep's process whatever the executor (a Ray
executor's workers, kept from one round to the next, evaluate them); under ``--shard`` every shard
chooses them from every shard's saved cells (``shards``).

``--budget-extend F`` (any design) adds rounds of the same kind after a grid's cells: ``EXTEND_ROUNDS``
rounds bring it to the cells its design deals at ``F`` (``budget.round_target``), numbered on after
the design's own rounds, their records saying ``extend: F`` (``budget.budget_rounds``). The cells
already saved keep their records and fingerprints, so a folder run at ``--budget 0.1`` is extended
in place, each extension after the earlier ones.

The rounds are planned by ``rounds.plan_round`` for every kind of job; ``native_grid_cells`` reads a
grid of the nine tasks' variants back for it.

Example (the rounds' names):
    >>> from instructeval_banks import BankEntry
    >>> v = Variant("agnews", BankEntry("generic-01", "Classify the news.", "generic", "agnews", 0), "zero_shot")
    >>> v.in_round(2, {}).name
    'instructeval_agnews__generic-01__zs__r2'
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..data import read_jsonl
from ..errors import UserError
from ..estimation import ChoiceGrid, estimator_for
from ..estimation.choice_scores import choice_grid, choice_scores_of
from ..estimation.item_response import target_text
from ..specs import get_spec
from .budget import BUDGET_KEY, observed_cells
from .plan import Variant
from .rounds import GridCells
from .store import SweepStore

# The primary metric, first present wins (the aggregation's choice): what a round fits, what the
# runner's progress lines show.
SAMPLE_METRICS = ("acc_per_token", "acc", "quasi_exact_match", "execution_accuracy")


def saved_rows(store: SweepStore, name: str) -> tuple[Path, list[dict[str, Any]]]:
    """``(path, rows)`` of a saved variant's per-sample log (the newest, if a rerun wrote another)."""
    files = sorted(store.root.glob(f"samples_{name}_[0-9]*.jsonl"))  # not "<name>__r1_..."
    if not files:
        raise UserError(f"{store.root}: no per-sample log of {name}; --budget-design adaptive chooses its later "
                        f"cells from the scores of the earlier ones (run without --no-log-samples)")
    return files[-1], read_jsonl(files[-1])


def saved_cells(store: SweepStore, name: str, targets: dict[int, str | None] | None = None) -> dict[int, float]:
    """``{item: score}`` of a saved variant, from its per-sample log; with ``targets``, each item's
    gold ``target`` (text) is added to it."""
    return _cells_of(*saved_rows(store, name), targets)[0]


def _cells_of(path: Path, rows: list[dict[str, Any]],
              targets: dict[int, str | None] | None) -> tuple[dict[int, float], str]:
    """``saved_cells`` of already read rows, and the metric they were scored by."""
    metric = next((m for m in SAMPLE_METRICS if rows and m in rows[0]), None)
    if metric is None:
        raise UserError(f"{path}: no per-sample {' / '.join(SAMPLE_METRICS)} to fit the adaptive rounds to")
    if targets is not None:
        for row in rows:
            targets[int(row["doc_id"])] = target_text(row.get("target"))
    return {int(row["doc_id"]): float(row[metric]) for row in rows}, metric


def native_grid_cells(variants: list[Variant], earlier: dict[str, list[Variant]], store: SweepStore) -> GridCells:
    """A grid of the nine tasks' variants read back for ``rounds.plan_round``: every variant's cells of
    its earlier rounds (``earlier[name]``, itself included), the gold classes the fit gives their own
    effects (none for open answers), on a classification grid the label scores, and the estimator the
    round's allocation fits (``estimation.estimator_for``: its registered name goes in ``allocation``)."""
    record = variants[0].metadata[BUDGET_KEY]
    kind = get_spec(variants[0].task).kind
    targets: dict[int, str | None] | None = {} if kind != "gqa" else None
    wants_scores = kind == "cls"  # only then are the lines' label scores read
    saved_meta = {name: meta for _, name, meta in store.saved_variants()} if wants_scores else {}
    observed: dict[str, dict[int, float]] = {}
    scored = []
    metrics, token_counts = set(), []
    for i, v in enumerate(variants):
        observed[v.name], lines = {}, []
        for part in earlier[v.name]:
            path, rows = saved_rows(store, part.name)
            part_cells, metric = _cells_of(path, rows, targets)
            observed[v.name].update(part_cells)
            metrics.add(metric)
            if wants_scores:
                lines += rows
                token_counts.append(saved_meta.get(part.name, {}).get("choice_token_counts"))
        if wants_scores:
            scored.append((i, choice_scores_of(lines)))
    cells = observed_cells(observed, {v.name: v.method for v in variants}, record["n_items"], targets)
    if wants_scores and len(metrics) == 1:
        built = choice_grid(cells, scored, metrics.pop(), token_counts)
        if isinstance(built, ChoiceGrid):
            cells = dataclasses.replace(cells, label_scores=built)
    return GridCells(observed, targets, cells.label_scores, estimator_for(cells).name)
