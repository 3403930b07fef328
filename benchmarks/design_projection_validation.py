"""Does the design projection keep its promise? Its power against the power realised on real grids.

A verdict that is ``not resolved`` names the design that would resolve it
(``instructeval_aggregation.design_projection``): variance components of the run's grid by moments,
and the F approximation's power of the test of "no instruction moves the score" at a design of ``m``
instructions x ``n`` rows. This script checks that power model on the shipped full grids
(``benchmarks/data/budget_grid_*.json``, and the harness study's grids where present), taking each
grid as the population:

- **promised**: the F approximation's power at ``(m, n)`` to detect the grid's own instruction-effect SD
  (its moment estimate on the whole grid), with the whole grid's residual variance;
- **realised**: the share of ``--draws`` designs drawn from the grid (``m`` of its instructions and ``n``
  of its rows, without replacement) in which the permutation test (``permutation_test`` without
  classes, the verdict's test; ``--permutations`` permutations) rejects at 5%.

Per grid the designs are ``m`` in ``DESIGN_INSTRUCTIONS`` (up to half its instructions) at ``n`` half its
rows and at all of them (then only the instructions are drawn); per row count, the grid's **80% design**
is the smallest ``m`` whose promised power reaches 80%, at which the realised power should be within 15
points of 80%. Grids whose effect no design up to half their
instructions detects with 80% are listed without one. Each draw is seeded from the string
``"design-projection|<grid>|<m>|<n>|<draw>"``. ``--write-page FILE`` writes the tables as a
documentation page stamped with the commit and the command.

Usage:
    python benchmarks/design_projection_validation.py --draws 200 --write-page docs/validation/design-projection.md
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

DESIGN_INSTRUCTIONS = (3, 4, 6, 8, 12, 16, 20, 25)
ALPHA = 0.05
TOLERANCE = 0.15  # the realised power at the 80% design within this of 80%


def realised(y: np.ndarray, key: str, m: int, n: int, draws: int, n_perm: int) -> float:
    """The share of ``draws`` subsampled ``m x n`` designs in which the score test rejects at ``ALPHA``."""
    from instructeval_aggregation.bootstrap import rng_for
    from instructeval_aggregation.instruction_test import permutation_test

    rejected = 0
    for draw in range(draws):
        rng = rng_for("design-projection", key, m, n, draw)
        rows = rng.choice(y.shape[0], size=m, replace=False)
        cols = rng.choice(y.shape[1], size=n, replace=False)
        rejected += permutation_test(y[np.ix_(rows, cols)], n_perm=n_perm, rng=rng).p_value <= ALPHA
    return rejected / draws


def grid_rows(key: str, y: np.ndarray, draws: int, n_perm: int) -> list[tuple]:
    """``(grid, m, n, promised, realised, is the 80% design)`` per design of one grid."""
    from instructeval_aggregation.design_projection import components, power

    c = components(y, None)
    tau, out = c.instruction ** 0.5, []
    for n in (y.shape[1] // 2, y.shape[1]):  # half the rows (drawn), then every row (only instructions drawn)
        found = False
        for m in [m for m in DESIGN_INSTRUCTIONS if m <= y.shape[0] // 2]:
            promised = power(m, n, c.residual, tau)
            first = promised >= 0.8 and not found
            found = found or first
            out.append((key, m, n, promised, realised(y, key, m, n, draws, n_perm), first, 100 * tau))
            print(f"{key:24s} m={m:3d} n={n:4d} tau={100 * tau:5.1f}  promised {promised:6.1%}  realised {out[-1][4]:6.1%}"
                  + ("  <- 80% design" if first else ""), flush=True)
            if promised >= 0.97:
                break
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--permutations", type=int, default=99)
    parser.add_argument("--grids", default="", help="comma list of grid keys (default: every grid of the caches)")
    parser.add_argument("--write-page", type=Path, default=None)
    args = parser.parse_args(argv)
    started = time.time()
    grids = bv.load_caches(sorted((ROOT / "benchmarks" / "data").glob("*grid_*.json")))
    keys = [k for k in grids if not args.grids or k in args.grids.split(",")]
    rows = []
    for key in keys:
        y, _, _, _ = bv._matrix(grids[key])
        rows += grid_rows(key, y, args.draws, args.permutations)
    at80 = [r for r in rows if r[5]]
    within = [r for r in at80 if abs(r[4] - 0.8) <= TOLERANCE]
    middle = [r for r in rows if 0.2 <= r[3] <= 0.95]
    gap = float(np.mean([abs(r[3] - r[4]) for r in middle])) if middle else float("nan")
    summary = (f"At the {len(at80)} 80% designs (grid and row count), the realised power is "
               f"{', '.join(f'{r[4]:.0%}' for r in at80)}: {len(within)} of {len(at80)} within {TOLERANCE:.0%} of 80% "
               f"(mean {np.mean([r[4] for r in at80]):.0%}). Over the {len(middle)} designs whose promised power lies in "
               f"20-95%, the promised and realised powers differ by {gap:.1%} on average.")
    print(summary)
    if args.write_page:
        command = bv.page_command(Path(__file__).name, argv or sys.argv[1:])
        none = sorted({r[0] for r in rows} - {r[0] for r in at80})
        page = [
            "# The design projection: the power it promises against the power realised", "",
            "*Generated by `benchmarks/design_projection_validation.py --write-page`: edit the script or rerun it, not this "
            "page.*", "",
            f"Measured at commit `{bv.git_stamp()}` on {datetime.date.today().isoformat()}, in {time.time() - started:.0f} s, by",
            "", "```bash", command, "```", "",
            f"**Settings:** {args.draws} drawn designs per grid and design; {args.permutations} permutations per test; level "
            f"{ALPHA:.0%}; rows: half of each grid's (drawn), and all of them; grids: {', '.join(keys)}.", "",
            "**Promised**: the F approximation's power (`design_projection.power`) to detect the grid's own instruction-effect "
            "SD (`tau`, points, its moment estimate on the whole grid). **Realised**: the share of designs drawn from the grid "
            "(its instructions and rows without replacement) in which the verdict's permutation test rejects at 5%. The "
            "**80% design** is the smallest number of instructions promised 80% at that number of rows.", "",
            "## Answer", "", summary, "",
            *([f"Grids whose effect no design up to half their instructions detects with 80% power: {', '.join(none)}.", ""]
              if none else []),
            "## Per grid and design", "",
            "| grid | tau | instructions | rows | promised | realised | |", "|---|---:|---:|---:|---:|---:|---|",
            *[f"| {k} | {t:.1f} | {m} | {n} | {p:.0%} | {r:.0%} | {'80% design' if first else ''} |"
              for k, m, n, p, r, first, t in rows], "",
        ]
        args.write_page.write_text("\n".join(page), encoding="utf-8")
        print(f"wrote {args.write_page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
