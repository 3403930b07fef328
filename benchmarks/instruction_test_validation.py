"""Size and power of the test of "no instruction matters" on the shipped full grids, per budget and design.

The test (``instructeval_aggregation.instruction_test.permutation_test``: item-centred residuals summed
per instruction and gold class, each item's observed scores permuted among the instructions that
scored it) is run on the cells ``instructeval run --budget F --budget-design D`` deals
(``budget_validation.choose_cells``: the null instruction on every item, ``--budget-min-items 1``):

- **size**: on null grids built from each real grid by shuffling every item's column of scores among
  the instructions (no instruction matters; the items' difficulties and the grid's answer mix are the
  real ones), the share of seeds in which the test rejects at 5%;
- **power**: on the real grid itself, the share of seeds (the design's draw of cells) in which it
  rejects, beside the full grid's own p-value (``full p``); power is only meaningful on grids where
  the full grid shows an effect.

Each seed draws its cells, its shuffle and its permutations from ``random`` generators seeded by the
string ``"instruction-test|<grid>|<design>|<budget>|<seed>"``. ``--write-page FILE`` writes the table
as a documentation page stamped with the commit and the command.

``--test score`` runs the verdict's own test instead (residuals summed per instruction only: it
rejects where the instructions' scores differ, not where answers merely move between labels);
``--test labels`` (the default) the per-gold-answer test above.

Usage:
    python benchmarks/instruction_test_validation.py --seeds 100 --write-page docs/validation/instruction-test.md
    python benchmarks/instruction_test_validation.py --test score --seeds 100 --write-page docs/validation/score-test.md
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import budget_validation as bv  # noqa: E402

BUDGETS = (0.05, 0.1, 0.25, 1.0)
TESTS = ("score", "labels")
TITLES = {"labels": "# The test of \"no instruction matters\", per gold answer: size and power",
          "score": "# The test of \"no instruction moves the score\" (the verdict's word): size and power"}
DESIGNS = ("uniform", "balanced")
ALPHA = 0.05


def _cells_mask(grid: dict, key: str, budget: float, seed: int, design: str) -> np.ndarray:
    y, names, _, _ = bv._matrix(grid)
    if budget >= 1.0:
        return np.ones(y.shape, dtype=bool)
    chosen = bv.choose_cells(grid, key, budget, seed, design, min_items=1, full_methods=("null",))
    mask = np.zeros(y.shape, dtype=bool)
    for i, name in enumerate(names):
        mask[i, chosen[name]] = True
    return mask


def rates(grid: dict, key: str, budget: float, design: str, seeds: int, n_perm: int,
          test: str = "labels") -> tuple[float, float]:
    """``(size, power)`` of the test on ``grid`` (module doc), over ``seeds`` seeds; ``test``: ``score`` (one
    residual sum per instruction: the verdict's word) or ``labels`` (per instruction and gold answer)."""
    from instructeval_aggregation.bootstrap import rng_for
    from instructeval_aggregation.instruction_test import permutation_test

    y, _, _, _ = bv._matrix(grid)
    classes = bv.grid_classes(grid) if test == "labels" else None
    null_rejects = real_rejects = 0
    for seed in range(seeds):
        rng = rng_for("instruction-test", key, design, budget, seed)
        mask = _cells_mask(grid, key, budget, seed, design)
        shuffled = np.take_along_axis(y, np.argsort(rng.random(y.shape), axis=0), axis=0)
        null_rejects += permutation_test(np.where(mask, shuffled, np.nan), classes, n_perm=n_perm, rng=rng).p_value <= ALPHA
        real_rejects += permutation_test(np.where(mask, y, np.nan), classes, n_perm=n_perm, rng=rng).p_value <= ALPHA
    return null_rejects / seeds, real_rejects / seeds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--permutations", type=int, default=99)
    parser.add_argument("--grids", default="", help="comma list of grid keys (default: every grid of the caches)")
    parser.add_argument("--test", choices=TESTS, default="labels",
                        help="score: residuals summed per instruction (the verdict's word); labels: per instruction "
                             "and gold answer (the verdict's 'answers shift between gold labels')")
    parser.add_argument("--write-page", type=Path, default=None)
    args = parser.parse_args(argv)
    from instructeval_aggregation.bootstrap import rng_for
    from instructeval_aggregation.instruction_test import permutation_test

    started = time.time()
    grids = bv.load_caches(sorted((ROOT / "benchmarks" / "data").glob("budget_grid_*.json")))
    keys = [k for k in grids if not args.grids or k in args.grids.split(",")]
    rows, pooled = [], {}
    for key in keys:
        grid = grids[key]
        y, _, _, _ = bv._matrix(grid)
        classes = bv.grid_classes(grid) if args.test == "labels" else None
        full_p = permutation_test(y, classes, n_perm=999, rng=rng_for("instruction-test", key, "full")).p_value
        for design in DESIGNS:
            for budget in BUDGETS:
                if budget >= 1.0 and design != DESIGNS[0]:
                    continue
                size, power = rates(grid, key, budget, design, args.seeds, args.permutations, args.test)
                label = "full grid" if budget >= 1.0 else design
                rows.append((key, label, budget, size, power, full_p))
                pooled.setdefault((label, budget), []).append((size, power, full_p))
                print(f"{key:28s} {label:9s} {budget:5.0%}  size {size:6.1%}  power {power:6.1%}  full p {full_p:.3f}",
                      flush=True)
    lines = []
    for (label, budget), values in sorted(pooled.items(), key=lambda kv: (kv[0][0] != "full grid", kv[0])):
        size = np.mean([v[0] for v in values])
        effect = [v[1] for v in values if v[2] <= ALPHA]
        lines.append(f"| {label} | {budget:.0%} | {size:.1%} | {np.mean(effect):.1%} ({len(effect)} grids) |"
                     if effect else f"| {label} | {budget:.0%} | {size:.1%} | (no grid with an effect) |")
        print(lines[-1])
    if args.write_page:
        command = bv.page_command(Path(__file__).name, argv or sys.argv[1:])
        page = [
            TITLES[args.test], "",
            "*Generated by `benchmarks/instruction_test_validation.py --write-page`: edit the script or rerun it, not this page.*", "",
            f"Measured at commit `{bv.git_stamp()}` on {datetime.date.today().isoformat()}, in {time.time() - started:.0f} s, by", "",
            "```bash", command, "```", "",
            f"**Settings:** {args.seeds} seeds per grid, design and budget; {args.permutations} permutations per test; "
            f"level {ALPHA:.0%}; the null instruction on every item; `--budget-min-items 1`; grids: {', '.join(keys)}.", "",
            "**Size** is the share of seeds in which the test rejects on a null grid made from the real one (each item's "
            "scores shuffled among the instructions): a valid test rejects in about 5%. **Power** is the share in which it "
            "rejects on the real grid, pooled over the grids whose full grid rejects at 5% (their count in brackets).", "",
            "## Pooled over the grids", "",
            "| design | budget | size | power (grids with an effect) |", "|---|---:|---:|---:|", *lines, "",
            "## Per grid", "",
            "| grid | design | budget | size | power | full grid's p |", "|---|---|---:|---:|---:|---:|",
            *[f"| {k} | {d} | {b:.0%} | {s:.1%} | {p:.1%} | {fp:.3f} |" for k, d, b, s, p, fp in rows], "",
        ]
        args.write_page.write_text("\n".join(page), encoding="utf-8")
        print(f"wrote {args.write_page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
