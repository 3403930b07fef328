"""The harness tasks' budgeted estimator with one instruction effect per gold answer, against one per instruction.

A ``--harness-tasks`` budgeted grid of a multiple-choice task is fitted with one instruction effect
per gold answer (``instructeval_aggregation.harness_effects``: the samples' ``target``). This
benchmark measures what that buys on real grids: the budget validation's full SmolLM2 grids with
classes (``benchmarks/data/budget_grid_smollm2*.json``; open-answer grids left out), cells chosen as
``instructeval run --budget F`` chooses them (``budget_validation.choose_cells``, balanced design
by default), and the harness path's estimator (``harness_effects.budgeted_instruction_sd``) fitted
with and without the items' gold classes. Per grid, averaged over seeds:

- the per-instruction MAE of the estimated scores against the full grid's exact ones (points; the
  ``--full-methods`` instructions are exact and left out);
- the error of the instruction-effect SD beyond item noise against the same estimator on the full
  grid (``sensitivity_measures.instruction_effect_sd``, points).

Usage:
    python benchmarks/harness_budget_classes.py                     # 10 seeds at 10%
    python benchmarks/harness_budget_classes.py --seeds 3 --grids boolq:zs,anli:zs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import budget_validation as bv  # noqa: E402


def grid_errors(grid: dict, key: str, fraction: float, seed: int, design: str, *, with_classes: bool,
                full_methods: tuple[str, ...] = ("null",), n_draws: int = 100) -> tuple[float, float]:
    """``(per-instruction MAE, instruction-effect SD error)`` in points for one draw of cells.

    Example (instructions that differ only in the label they favour; every cell observed):
        >>> grid = {"rows": [{"method": "null", "instruction": "0", "correct": [1, 0] * 4},
        ...                  {"method": "generic", "instruction": "1", "correct": [1, 1, 0, 0] * 2},
        ...                  {"method": "generic", "instruction": "2", "correct": [0, 1] * 4}],
        ...         "labels": ["a", "b"] * 4, "metric": bv.METRIC}
        >>> mae, _ = grid_errors(grid, "doc", 1.0, 0, "uniform", with_classes=True)
        >>> round(mae, 6)
        0.0
    """
    from instructeval_aggregation.bootstrap import rng_for
    from instructeval_aggregation.harness_effects import budgeted_instruction_sd
    from instructeval_aggregation.sensitivity_measures import instruction_effect_sd
    from instructeval_tasks.estimation.item_response import Cells

    y, names, method_of, methods = bv._matrix(grid)
    m, n = y.shape
    chosen = bv.choose_cells(grid, key, fraction, seed, design, min_items=1, full_methods=full_methods)
    rows = np.concatenate([np.full(len(chosen[name]), i) for i, name in enumerate(names)]).astype(int)
    cols = np.concatenate([np.array(chosen[name], dtype=int) for name in names])
    cells = Cells(rows, cols, y[rows, cols], m, n, method_of, bv.grid_classes(grid) if with_classes else None)
    accuracy, sd, _, _ = budgeted_instruction_sd(cells, n_draws=n_draws, n_boot=0, level=0.95,
                                                 rng=rng_for("harness-budget-classes", key, fraction, seed))
    estimated = np.array([methods[k] not in full_methods for k in method_of])
    mae = 100.0 * float(np.abs(accuracy - y.mean(axis=1))[estimated].mean())
    return mae, abs(sd.value - 100.0 * instruction_effect_sd(y))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grids", default="", help="comma list of grid keys (default: every grid with classes)")
    parser.add_argument("--budget", type=float, default=0.1)
    parser.add_argument("--design", default="balanced")
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args(argv)
    grids = bv.load_caches(sorted((bv.HERE / "data").glob(bv.CACHES)))
    keys = [k for k in args.grids.split(",") if k] or sorted(k for k, g in grids.items() if bv.grid_classes(g) is not None)
    print(f"harness-path estimates at {args.budget:.0%} ({args.design} design, {args.seeds} seeds): "
          "one effect per instruction -> one per gold answer")
    pooled: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    for key in keys:
        if key not in grids:
            raise SystemExit(f"unknown grid {key!r}; known: {', '.join(sorted(grids))}")
        per = {flag: [grid_errors(grids[key], key, args.budget, seed, args.design, with_classes=flag)
                      for seed in range(args.seeds)] for flag in (False, True)}
        for flag in per:
            pooled[flag] += per[flag]
        (a0, s0), (a1, s1) = (np.mean(per[False], axis=0), np.mean(per[True], axis=0))
        print(f"  {key:16s} per-instruction MAE {a0:5.2f} -> {a1:5.2f}   instruction-SD error {s0:5.2f} -> {s1:5.2f}",
              flush=True)
    (a0, s0), (a1, s1) = (np.mean(pooled[False], axis=0), np.mean(pooled[True], axis=0))
    print(f"  {'pooled':16s} per-instruction MAE {a0:5.2f} -> {a1:5.2f}   instruction-SD error {s0:5.2f} -> {s1:5.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
