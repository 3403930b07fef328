"""``--budget F``: evaluate a seeded share of the (instruction, test item) cells of each grid.

A *grid* is one (task, setting code) of a sweep -- e.g. AG News zero-shot, or AG News few-shot with
one demo set -- whose rows are the plan's instructions and whose columns are the test sample's items
(positions 0..n-1 in the task's evaluation docs, the harness's ``doc_id``). A budget keeps about
``F`` of its ``m x n`` cells, with three guarantees:

- **every instruction** gets its quota of items: ``q = max(ceil(F * n), min_items, ceil(n / m))``
  (at most ``n``) under ``--budget-design uniform``; under ``balanced`` the same
  ``m * max(ceil(F * n), ceil(n / m))`` cells are shared among the selection methods by the square
  root of their instruction counts (``balanced_quotas``), each instruction at least ``min_items``
  (default ``BALANCED_MIN_ITEMS``);
- **every item** gets at least one instruction;
- **classes are balanced** within each instruction's items: the gold classes' counts differ by at
  most one (``balanced_counts``), as far as each class's items allow; the extra items go to a
  different class for each instruction.

The default design, ``uniform``, is the one the budget validation supports best for the statistics
the reports lead with (``docs/validation/budget.md``: it resolves the most of them for the
item-response model, and its cells, fixed before any outcome, keep the no-effect test valid).
``adaptive`` (``sweep.adaptive``) deals half of the budget as the uniform design does and chooses
the rest in rounds from the scores of the cells saved before them.

The instructions of ``full_methods`` (default: ``null``) are evaluated on every item: the null
instruction is the baseline of every relative gain, and one row of ``n`` cells costs ``1/m`` of
the grid. ``m`` in the quota counts the other instructions.

Items are dealt from one shuffled queue per class, so each item is used ``floor`` or ``ceil`` of
its class's share before any item is used again; an item still uncovered at the end (a class
whose share is smaller than its size) joins the instruction with the fewest cells. Every draw comes
from ``random.Random(f"instructeval-budget:{grid}:{seed}")``: the cells of one grid never depend
on another's, and the same command draws the same cells.

The runner evaluates each variant on its cells through the harness's own ``samples`` argument of
``simple_evaluate`` (``lm_eval --samples``): every variant is still one standard results entry with
per-sample logs whose ``doc_id`` is the item's position in the test sample. The cells are recorded
in the variant's metadata under ``budget`` (and so in its fingerprint); ``instructeval aggregate``
estimates the full grids from them (``instructeval_tasks.estimation``, ``instructeval_aggregation.budgeted``).

Example:
    >>> cells = assign_cells(["a", "b", "c", "d"], [0, 0, 0, 1, 1, 1], Budget(0.5, min_items=2), "demo:zs")
    >>> {k: len(v) for k, v in cells.items()}
    {'a': 3, 'b': 3, 'c': 3, 'd': 3}
    >>> sorted(set().union(*cells.values())) == list(range(6))
    True
"""

from __future__ import annotations

import difflib
import math
import random
from collections import Counter
from dataclasses import asdict, dataclass, replace
from typing import Any, Hashable, Mapping, Sequence

import numpy as np

from ..errors import UserError
from ..estimation import Cells, ChoiceGrid, estimator_for
from ..estimation.item_response import allocate_cells, item_classes, unobserved_variance
from ..sampling import balanced_counts

BUDGET_KEY = "budget"
DEFAULT_MIN_ITEMS = 10
# The balanced design's floor: lower than the uniform one's, or at 10% of 100 items (10 each) it
# could move no cell from the large methods to the small ones.
BALANCED_MIN_ITEMS = 5
BALANCED_POWER = 0.5  # a method's share of the cells goes as (its instruction count) ** BALANCED_POWER
DEFAULT_FULL_METHODS = ("null",)
DESIGNS = ("uniform", "balanced", "adaptive")
# The closest design at 10% on every validated grid (docs/budget-accuracy.md); a folder begun with
# another design keeps it when the command names none (``Budget.resumed``).
DEFAULT_DESIGN = "uniform"  # the design the budget validation supports best for what the reports lead with
ADAPTIVE_FIRST_SHARE = 0.5  # of the budget, dealt uniformly before the model chooses
ADAPTIVE_ROUNDS = 2
ADAPTIVE_FIRST_DESIGN = "uniform"  # how the first slice is dealt
EXTEND_ROUNDS = 2  # rounds of an extension (--budget-extend), each fitted to every cell saved before it


class BudgetError(UserError, ValueError):
    """A ``--budget`` option out of range."""


@dataclass(frozen=True)
class Budget:
    """A share ``fraction`` of each grid's cells, drawn with ``seed``; ``min_items`` per instruction
    (default ``DEFAULT_MIN_ITEMS``, ``BALANCED_MIN_ITEMS`` under the balanced design); ``design``
    (default ``DEFAULT_DESIGN``; left out, a folder begun with another design continues with it:
    ``resumed``)."""

    fraction: float
    seed: int = 0
    min_items: int | None = None
    full_methods: tuple[str, ...] = DEFAULT_FULL_METHODS
    design: str = None  # type: ignore[assignment]  # None: DEFAULT_DESIGN, or the folder's (resumed)
    # --budget-extend: the share each grid is brought to after the design's cells, in rounds where the
    # model is least sure (``budget_rounds``); not part of the cells' records (``as_dict``), so the
    # saved cells of the folder's --budget keep their fingerprints
    extend_to: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "full_methods", tuple(self.full_methods))
        # which options were left to their defaults (not fields: records and equality ignore them)
        object.__setattr__(self, "defaulted", frozenset(
            name for name, value in (("design", self.design), ("min_items", self.min_items)) if value is None))
        if self.design is None:
            object.__setattr__(self, "design", DEFAULT_DESIGN)
        if self.min_items is None:
            object.__setattr__(self, "min_items", BALANCED_MIN_ITEMS if self.design == "balanced" else DEFAULT_MIN_ITEMS)
        if self.design not in DESIGNS:
            raise BudgetError(f"--budget-design {self.design!r}: expected one of {', '.join(DESIGNS)}")
        if isinstance(self.fraction, bool) or not isinstance(self.fraction, (int, float)) or not 0 < self.fraction <= 1:
            raise BudgetError(f"--budget {self.fraction!r}: expected a share of the cells in (0, 1], e.g. --budget 0.1")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise BudgetError(f"--budget-seed {self.seed!r}: expected an integer >= 0")
        if isinstance(self.min_items, bool) or not isinstance(self.min_items, int) or self.min_items < 1:
            raise BudgetError(f"--budget-min-items {self.min_items!r}: expected an integer >= 1")
        if self.extend_to is not None and (isinstance(self.extend_to, bool) or not isinstance(self.extend_to, (int, float))
                                           or not self.fraction < self.extend_to <= 1):
            raise BudgetError(f"--budget-extend {self.extend_to!r}: expected a share above --budget {self.fraction:g} "
                              f"and at most 1, e.g. --budget {self.fraction:g} --budget-extend "
                              f"{min(1.0, round(self.fraction * 2.5, 3)):g}")

    def quota(self, n_items: int, n_instructions: int) -> int:
        """Items per instruction: ``min(n, max(ceil(F * n), min_items, ceil(n / m)))``.

        Example:
            >>> Budget(0.1).quota(100, 51)
            10
            >>> Budget(0.1, min_items=3).quota(100, 5)
            20
        """
        if n_items <= 0 or n_instructions <= 0:
            return 0
        wanted = max(math.ceil(self.fraction * n_items - 1e-9), self.min_items, math.ceil(n_items / n_instructions))
        return min(n_items, wanted)

    def check_methods(self, known: Sequence[str]) -> None:
        """Refuse a ``full_methods`` name that is no bank method (it would leave the baseline estimated)."""
        for name in self.full_methods:
            if name not in known:
                close = difflib.get_close_matches(name, list(known), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise BudgetError(f"--budget-full-methods: unknown method {name!r}{hint}; known: {', '.join(known)}")

    def as_dict(self) -> dict[str, Any]:
        record = {**asdict(self), "full_methods": list(self.full_methods)}
        del record["extend_to"]
        if self.design == "uniform":  # the records of uniform budgets stay as they were before designs existed
            del record["design"]
        return record

    def resumed(self, design: str) -> "Budget":
        """This budget with the ``design`` of a folder's saved cells, when this one's design is the
        default (the command named none): a folder begun under an earlier default continues as it began.

            >>> Budget(0.1).resumed("balanced").as_dict()["design"], Budget(0.1).resumed("balanced").min_items
            ('balanced', 5)
            >>> Budget(0.1, design="uniform").resumed("balanced").design
            'uniform'
        """
        if "design" not in self.defaulted or design == self.design:
            return self
        return Budget(self.fraction, seed=self.seed, min_items=None if "min_items" in self.defaulted else self.min_items,
                      full_methods=self.full_methods, design=design, extend_to=self.extend_to)

    def first_slice(self) -> "Budget":
        """The uniform budget an adaptive design starts from: ``ADAPTIVE_FIRST_SHARE`` of the fraction
        and of the minimum items per instruction (at least 1)."""
        if self.design != "adaptive":
            return self
        return Budget(self.fraction * ADAPTIVE_FIRST_SHARE, seed=self.seed,
                      min_items=max(1, math.ceil(self.min_items * ADAPTIVE_FIRST_SHARE)), full_methods=self.full_methods,
                      design=ADAPTIVE_FIRST_DESIGN)


def _sorted_classes(labels: Sequence[Hashable]) -> list[Hashable]:
    try:
        return sorted(set(labels))
    except TypeError:  # mixed label types: any fixed order will do
        return sorted(set(labels), key=repr)


def _class_counts(quota: int, sizes: list[int], rotation: int) -> list[int]:
    """``balanced_counts(quota, C)`` rotated by ``rotation``, capped at each class's size.

    Items a full class cannot take go, one at a time, to the classes with room, smallest count first.
    """
    counts = balanced_counts(quota, len(sizes))
    shift = rotation % len(sizes)
    counts = counts[-shift:] + counts[:-shift] if shift else counts
    counts = [min(c, s) for c, s in zip(counts, sizes)]
    while sum(counts) < quota:
        room = [i for i in range(len(sizes)) if counts[i] < sizes[i]]
        counts[min(room, key=lambda i: (counts[i], i))] += 1
    return counts


def balanced_quotas(methods: Sequence[str], n_items: int, budget: Budget) -> list[int]:
    """Items per instruction under the balanced design, for instructions of ``methods[i]``.

    The grid keeps the uniform design's cells, ``T = m * max(ceil(F * n), ceil(n / m))``, but
    shares them among the methods by square-root power allocation (Bankier 1988): method k, with
    ``m_k`` instructions, gets ``T * sqrt(m_k) / sum_k' sqrt(m_k')`` cells, so each of its
    instructions ``q_k = T / (sqrt(m_k) * sum_k' sqrt(m_k'))`` items. A method mean's sampling
    variance goes as ``1 / (m_k q_k)``: uniform quotas leave a small method's mean few cells (a
    method of ``m_k`` instructions gets ``m_k / m`` of them); equal method totals would starve the
    many instructions of a large one, which the quantiles across instructions rest on; the square
    root sits between. Each quota
    is kept within ``[min_items, n]`` (a method held at a bound leaves the rest to the others), then
    rounded down, the cells left going one per instruction, largest remainder first (ties: the
    earlier instruction).

    Example (5 generic, 5 PromptSource, 40 ad hoc instructions, 100 items, 10%):
        >>> q = balanced_quotas(["generic"] * 5 + ["promptsource"] * 5 + ["adhoc"] * 40, 100, Budget(0.1, design="balanced"))
        >>> q[0], q[5], q[10], q[-1], sum(q)
        (21, 21, 8, 7, 500)
    """
    m, n = len(methods), n_items
    if m == 0 or n <= 0:
        return [0] * m
    total = m * min(n, max(math.ceil(budget.fraction * n - 1e-9), math.ceil(n / m)))
    floor = min(n, budget.min_items)
    sizes = Counter(methods)
    per: dict[str, float] = {}
    free, left = set(sizes), float(total)
    while free:
        weight = sum(sizes[k] ** BALANCED_POWER for k in free)
        trial = {k: left * sizes[k] ** BALANCED_POWER / weight / sizes[k] for k in free}
        bound = {k: float(floor) if q < floor else float(n) for k, q in trial.items() if q < floor or q > n}
        if not bound:
            per.update(trial)
            break
        per.update(bound)
        left -= sum(sizes[k] * q for k, q in bound.items())
        free -= set(bound)
    wanted = [per[method] for method in methods]
    quotas = [min(n, int(math.floor(q + 1e-9))) for q in wanted]
    extra = round(sum(wanted)) - sum(quotas)
    for i in sorted(range(m), key=lambda i: (-(wanted[i] - quotas[i]), i)):
        if extra <= 0:
            break
        if quotas[i] < n:
            quotas[i] += 1
            extra -= 1
    return quotas


def dealt_cells(methods: Sequence[str], n_items: int, budget: Budget) -> int:
    """The cells ``budget``'s quotas give a grid of ``n_items`` items whose instructions are of
    ``methods``: ``n_items`` for each instruction of a full method, plus the other instructions'
    quotas (``balanced_quotas`` under the balanced design, ``Budget.quota`` each under the uniform and
    adaptive ones: the adaptive design ends with the uniform one's cells). ``assign_cells`` deals
    exactly these unless a class has more items than its share of the quotas (those join the
    emptiest instruction).

    Example (null on all 100 items, 50 instructions at 10%):
        >>> dealt_cells(["null"] + ["generic"] * 5 + ["adhoc"] * 45, 100, Budget(0.1))
        600
    """
    full = sum(1 for method in methods if method in budget.full_methods)
    rest = [method for method in methods if method not in budget.full_methods]
    if budget.design == "balanced":
        return full * n_items + sum(balanced_quotas(rest, n_items, budget))
    return full * n_items + len(rest) * budget.quota(n_items, len(rest))


def assign_cells(
    instructions: Sequence[str], labels: Sequence[Hashable], budget: Budget, grid: str, *, full: Sequence[str] = (),
    methods: Sequence[str] | None = None,
) -> dict[str, list[int]]:
    """The item positions (sorted) each instruction of one grid evaluates; see the module doc.

    ``labels[j]`` is item j's gold class (one constant for tasks without classes); ``grid`` names
    the grid in the seed (``"<task>:<setting code>"``); the instructions in ``full`` get every item;
    ``methods[i]`` is instruction i's selection method (the balanced design shares the cells among
    them; without ``methods`` all are one method, and it deals as the uniform design does).
    """
    if len(set(instructions)) != len(instructions):
        raise ValueError("instruction names must be unique within a grid")
    if methods is not None and len(methods) != len(instructions):
        raise ValueError("methods: one per instruction")
    method_of = dict(zip(instructions, methods)) if methods is not None else {name: "" for name in instructions}
    everything = {name: list(range(len(labels))) for name in instructions if name in set(full)}
    instructions = [name for name in instructions if name not in everything]
    n, m = len(labels), len(instructions)
    if n == 0 or m == 0:
        return {**everything, **{name: [] if n == 0 else list(range(n)) for name in instructions}}
    rng = random.Random(f"instructeval-budget:{grid}:{budget.seed}")
    classes = _sorted_classes(labels)
    pools = [[j for j, label in enumerate(labels) if label == c] for c in classes]
    queues: list[list[int]] = [[] for _ in classes]
    quotas = (balanced_quotas([method_of[name] for name in instructions], n, budget) if budget.design == "balanced"
              else [budget.quota(n, m)] * m)

    def take(c: int, k: int, chosen: set[int]) -> None:
        while k > 0:
            if not queues[c]:
                queues[c] = rng.sample(pools[c], len(pools[c]))
            item = queues[c].pop()
            if item not in chosen:  # only after a wrap-around: every item was dealt once already
                chosen.add(item)
                k -= 1

    cells: list[set[int]] = []
    for row in range(m):
        chosen: set[int] = set()
        for c, k in enumerate(_class_counts(quotas[row], [len(p) for p in pools], row)):
            take(c, k, chosen)
        cells.append(chosen)
    covered = set().union(*cells, *map(set, everything.values()))
    uncovered = [j for j in range(n) if j not in covered]
    tie_break = rng.sample(range(m), m)
    for item in rng.sample(uncovered, len(uncovered)):
        row = min(range(m), key=lambda r: (len(cells[r]), tie_break.index(r)))
        cells[row].add(item)
    return {**everything, **{name: sorted(rows) for name, rows in zip(instructions, cells)}}


def budget_record(budget: Budget, items: list[int], n_items: int, grid: str, grid_cells: int, grid_size: int) -> dict[str, Any]:
    """What a budgeted variant's metadata records under ``budget``.

    An adaptive design's first-slice variants also record ``round: 0`` (``rounds.plan_round``
    writes the later rounds' records); ``grid_cells`` is then the grid's cells after the last round.
    """
    record = {
        **budget.as_dict(),
        "grid": grid,
        "items": items,
        "n_items": n_items,
        "grid_cells": grid_cells,
        "grid_size": grid_size,
    }
    if budget.design == "adaptive":
        record["round"] = 0
    return record


def grid_cells_of(instructions: Sequence[str], labels: Sequence[Hashable], budget: Budget, grid: str, *,
                  full: Sequence[str] = (), methods: Sequence[str] | None = None) -> tuple[dict[str, list[int]], int]:
    """The cells evaluated first, and the grid's cells at the end.

    Uniform and balanced: ``assign_cells`` at the budget, both the same. Adaptive: ``assign_cells``
    at the first slice, and the total the uniform design would evaluate at the whole budget (the
    later rounds add the difference).
    """
    first = assign_cells(instructions, labels, budget.first_slice(), grid, full=full, methods=methods)
    if budget.design != "adaptive":
        return first, sum(map(len, first.values()))
    uniform = assign_cells(instructions, labels, replace(budget, design="uniform"), grid, full=full)
    return first, sum(map(len, uniform.values()))


@dataclass(frozen=True)
class BudgetRound:
    """One round of cells after a grid's first ones (see ``budget_rounds``)."""

    number: int  # in the grid: the variants ``<name>__r<number>``, ``budget.round`` in their records
    extend: float | None  # the share an extension brings the grid to; None: an adaptive design's own round
    step: int  # its place in its stage (the adaptive rounds, or one extension's), from 1
    steps: int  # the rounds of its stage: round ``step`` takes 1 / (steps - step + 1) of the cells left

    @property
    def rounds_left(self) -> int:
        return self.steps - self.step + 1


def budget_rounds(budget: Budget, saved_extensions: Sequence[float] = (), where: str = "the output folder") -> list[BudgetRound]:
    """The rounds a budgeted grid gets after its first cells, numbered on from 1: the adaptive
    design's ``ADAPTIVE_ROUNDS``, then ``EXTEND_ROUNDS`` for each extension up to ``extend_to`` --
    first those the folder already holds (``saved_extensions``, re-derived from the saved cells, as
    a resumed adaptive design's rounds are), then the one asked for. A saved extension beyond the one
    asked is refused: the asked one would plan other cells after the same saved ones.

    Example (a balanced folder extended to 0.25 before, now to 0.5):
        >>> [(r.number, r.extend, r.step) for r in budget_rounds(Budget(0.1, design="balanced", extend_to=0.5), [0.25])]
        [(1, 0.25, 1), (2, 0.25, 2), (3, 0.5, 1), (4, 0.5, 2)]
    """
    rounds = [BudgetRound(r, None, r, ADAPTIVE_ROUNDS) for r in range(1, ADAPTIVE_ROUNDS + 1)] if budget.design == "adaptive" else []
    if budget.extend_to is None:
        return rounds
    beyond = sorted(share for share in set(saved_extensions) if share > budget.extend_to)
    if beyond:
        raise BudgetError(f"{where} holds grids extended to {beyond[-1]:g} (--budget-extend {beyond[-1]:g}); "
                          f"--budget-extend {budget.extend_to:g} would plan other cells after the same saved ones. "
                          f"Resume with --budget-extend {beyond[-1]:g} (or more)")
    for share in sorted({s for s in saved_extensions if s < budget.extend_to} | {budget.extend_to}):
        rounds += [BudgetRound(len(rounds) + step, share, step, EXTEND_ROUNDS) for step in range(1, EXTEND_ROUNDS + 1)]
    return rounds


def extended_cells(methods: Sequence[str], n_items: int, budget: Budget, share: float) -> int:
    """The cells ``budget``'s design deals such a grid at the extension's ``share`` (``dealt_cells``)."""
    return dealt_cells(methods, n_items, replace(budget, fraction=share, extend_to=None))


def round_target(budget: Budget, budget_round: BudgetRound, methods: Sequence[str], n_items: int, record: Mapping[str, Any]) -> int:
    """The grid's cells at the end of ``budget_round``'s stage: the adaptive design's total
    (``record["grid_cells"]``, its first-slice record) or, for an extension, the cells the design
    deals at the extension's share (``extended_cells``)."""
    if budget_round.extend is None:
        return int(record["grid_cells"])
    return extended_cells(methods, n_items, budget, budget_round.extend)


def round_record(record: Mapping[str, Any], items: list[int], budget_round: BudgetRound) -> dict[str, Any]:
    """A later round's ``budget`` record: its first-slice variant's, with the round's items, its
    number and, for an extension, the share it extends the grid to (``extend``)."""
    out = {**record, "items": items, "round": budget_round.number}
    if budget_round.extend is not None:
        out["extend"] = budget_round.extend
    return out


def observed_cells(observed: Mapping[str, Mapping[int, float]], methods: Mapping[str, str], n_items: int,
                   targets: Mapping[int, str | None] | None = None, label_scores: ChoiceGrid | None = None) -> Cells:
    """The evaluated cells of one grid, a row per instruction of ``observed`` in its order (``groups``:
    the methods' sorted names; ``classes`` from ``targets``, the items' gold answers; their
    ``label_scores``, rows in the same order, where given)."""
    names = list(observed)
    method_names = sorted({methods[name] for name in names})
    rows, cols, ys = [], [], []
    for i, name in enumerate(names):
        for item, score in sorted(observed[name].items()):
            rows.append(i)
            cols.append(item)
            ys.append(score)
    return Cells(rows=np.asarray(rows, dtype=int), cols=np.asarray(cols, dtype=int), y=np.asarray(ys, dtype=float),
                 n_rows=len(names), n_cols=n_items,
                 groups=np.asarray([method_names.index(methods[name]) for name in names], dtype=int),
                 classes=item_classes(targets or {}, n_items), label_scores=label_scores)


def next_round_cells(
    observed: dict[str, dict[int, float]],
    methods: dict[str, str],
    n_items: int,
    target: int,
    rounds_left: int,
    frozen: Sequence[str] = (),
    targets: Mapping[int, str | None] | None = None,
    choice: ChoiceGrid | None = None,
) -> dict[str, list[int]]:
    """An adaptive design's next cells: where the model is least sure of the outcome.

    ``observed[name]`` maps each evaluated item of an instruction to its score; ``methods[name]`` is
    its method; ``target`` the grid's total cells at the end (what the uniform design at the same
    budget would evaluate). This round takes ``ceil((target - evaluated) / rounds_left)`` cells,
    allocated by ``item_response.allocate_cells`` after fitting the grid's estimator
    (``estimation.estimator_for``, the model the aggregation then estimates the grid by) to every
    cell evaluated so far: the crossed item-response model (with one effect per gold class when
    ``targets`` gives every item's gold answer: ``item_response.item_classes``) or, given ``choice``
    (the label scores of every evaluated cell, rows in ``observed``'s order:
    ``choice_scores.choice_grid`` on ``observed_cells``), the label-score model; ``frozen``
    instructions (the fully evaluated methods) get none. Each instruction's Neyman share is
    weighted by ``m_k ** (BALANCED_POWER - 1)``, ``m_k`` the instruction count of its method, so that
    a method's share of the round grows as ``m_k ** BALANCED_POWER``, as in the balanced design
    (unweighted, it would grow as ``m_k``). Items every instruction seen so far answered alike get
    few cells, so an item the first slice saw right each time may not be seen again.
    Deterministic: the same evaluated cells give the same next cells, so a resumed run re-derives
    them.

    Example:
        >>> seen = {"a": {0: 1.0, 1: 0.0}, "b": {2: 1.0, 3: 1.0}}
        >>> nxt = next_round_cells(seen, {"a": "x", "b": "y"}, 4, 6, 1)
        >>> sum(map(len, nxt.values())), all(set(v).isdisjoint(seen[k]) for k, v in nxt.items())
        (2, True)
    """
    names = list(observed)
    done = sum(len(cells) for cells in observed.values())
    wanted = math.ceil(max(target - done, 0) / max(rounds_left, 1))
    if wanted <= 0 or not names:
        return {}
    cells = observed_cells(observed, methods, n_items, targets, label_scores=choice)
    variance = unobserved_variance(estimator_for(cells).fit(cells).probabilities(), cells.matrices()[1])
    frozen_names = set(frozen)
    frozen_rows = np.asarray([name in frozen_names for name in names], dtype=bool)
    sizes = Counter(methods[name] for name in names)
    weights = np.asarray([sizes[methods[name]] ** (BALANCED_POWER - 1) for name in names], dtype=float)
    chosen = allocate_cells(variance, wanted, frozen_rows=frozen_rows, row_weights=weights)
    return {names[i]: items for i, items in sorted(chosen.items())}

