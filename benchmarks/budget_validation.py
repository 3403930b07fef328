"""Budgeted sweeps against the full grid: how close the item-response estimates come, per budget.

The full grid: SmolLM2-135M-Instruct (float32) on AG News and HellaSwag, every bank entry of null,
generic, PromptSource and ad hoc, zero-shot and few-shot (demo set 0, K=6), the paper profile's
seeded 100-item test sample. Its per-item correctness (``acc_per_token``) is kept in a cache
(``benchmarks/data/budget_grid_smollm2.json``, 21,000 cells) that ``--rebuild`` recomputes with
``instructeval run`` (about 2 CPU-hours here) or ``--from-runs DIR`` reads from a finished sweep.

For each budget (5, 10, 25% by default) and seed, cells are drawn with the sampler of
``instructeval run --budget`` (``instructeval_tasks.sweep.budget.assign_cells``), the
aggregation's estimator is applied to them (``instructeval_aggregation.budgeted``'s fit and item
bootstrap), and the estimates are compared with the full grid's exact accuracies:

- MAE of per-instruction accuracy, of method means and of the 5/25/50/75/95% quantiles across
  instructions (accuracy points, i.e. x100);
- Spearman correlation between the estimated and the exact instruction ranking;
- CI coverage: share of instructions whose exact accuracy lies in its 95% interval;
- compute saved: 1 - evaluated cells / grid cells (forward tokens scale with cells: each cell is
  one test item's requests under one instruction).

The observed-subset mean (each instruction's accuracy on its own cells, no model) is printed beside
as the baseline. Target at 10%: quantile and method-mean errors within 2 points.

Usage:
    python benchmarks/budget_validation.py                       # from the cache
    python benchmarks/budget_validation.py --seeds 10 --budgets 0.05,0.1,0.25
    python benchmarks/budget_validation.py --rebuild --model-dir models/smollm2 --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / "data" / "budget_grid_smollm2.json"
TASKS = ("agnews", "hellaswag")
METHODS = ("null", "generic", "promptsource", "adhoc")
METRIC = "acc_per_token"
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
SWEEP_ARGS = dict(tasks=list(TASKS), methods=list(METHODS), profile="paper",
                  overrides={"instructions_per_method": 1000, "settings": ["zero_shot", "few_shot"], "n_selections": 1})


# ------------------------------------------------------------------------------------ the cache


def cache_from_runs(folder: Path) -> dict:
    """The full grid's per-item correctness from a sweep folder (results + samples files)."""
    from instructeval_aggregation import load_runs
    from instructeval_aggregation.samples import read_sample_values

    runs = load_runs([folder])
    errors = [str(i) for i in runs.issues.items if i.level == "error"]
    if errors:
        raise SystemExit("the sweep folder has errors:\n" + "\n".join(errors))
    grids: dict[str, dict] = {}
    for v in sorted(runs.variants, key=lambda v: (v.task, v.setting, v.method, v.instruction)):
        if v.metadata.get("budget"):
            raise SystemExit(f"{v.file}: a budgeted sweep; the cache needs the full grid")
        key = f"{v.task}:{'zs' if v.setting == 'zero_shot' else f'fs-d{v.demo_seed}'}"
        doc_ids, values = read_sample_values(v.samples_path, METRIC)
        grid = grids.setdefault(key, {"task": v.task, "setting": v.setting, "labels": None, "rows": []})
        if doc_ids.tolist() != list(range(len(doc_ids))):
            raise SystemExit(f"{v.samples_path}: not a full grid (doc_ids {doc_ids[:5].tolist()}...)")
        if grid["labels"] is None:
            grid["labels"] = _labels(v.samples_path)
        grid["rows"].append({"method": v.method, "instruction": v.instruction,
                             "correct": "".join("1" if x >= 0.5 else "0" for x in values)})
    plan = folder / "sweep.json"
    fingerprint = json.loads(plan.read_text(encoding="utf-8")).get("run_fingerprint") if plan.is_file() else None
    return {
        "description": "per-item acc_per_token of every (instruction, item) cell; see benchmarks/budget_validation.py",
        "model": sorted(runs.models),
        "run_fingerprint": fingerprint,  # model files, dtype, data files of the sweep (sweep/identity.py)
        "metric": METRIC,
        "sweep": {**SWEEP_ARGS, "test_sample": 100},
        "grids": grids,
    }


def _labels(samples_path: str) -> list:
    """Each item's gold class (the samples' ``target``), in doc_id order: the sampler balances them."""
    rows = [json.loads(line) for line in Path(samples_path).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [str(r["target"]) for r in sorted(rows, key=lambda r: r["doc_id"])]


def rebuild(model_dir: str, data_dir: str, work: Path, threads: int) -> Path:
    import os

    import torch

    from instructeval_tasks.sweep import run_sweep

    os.environ.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if threads:
        torch.set_num_threads(threads)
    report = run_sweep(model="instructeval-hf", model_args=f"pretrained={model_dir},dtype=float32", output=work,
                       data_dir=data_dir, **SWEEP_ARGS)
    return report.output_dir


# ------------------------------------------------------------------------------------ the check


@dataclasses.dataclass
class Scores:
    instr_mae: float
    method_mae: float
    quantile_mae: float
    spearman: float
    coverage: float
    saved: float


def evaluate_grid(grid: dict, fraction: float, seed: int, n_boot: int, key: str, *, min_items: int,
                  full_methods: tuple[str, ...]) -> tuple[Scores, Scores]:
    """(item-response estimates, observed-subset means) against the full grid, for one draw."""
    from scipy.stats import spearmanr

    from instructeval_aggregation.bootstrap import rng_for
    from instructeval_aggregation.budgeted import estimate_grid
    from instructeval_aggregation.irt import Cells
    from instructeval_tasks.sweep.budget import Budget, assign_cells

    y = np.array([[int(c) for c in row["correct"]] for row in grid["rows"]], dtype=float)
    m, n = y.shape
    names = [f"{row['method']}/{row['instruction']}" for row in grid["rows"]]
    methods = sorted({row["method"] for row in grid["rows"]})
    method_of = np.array([methods.index(row["method"]) for row in grid["rows"]])
    full = [name for name, row in zip(names, grid["rows"]) if row["method"] in full_methods]
    chosen = assign_cells(names, grid["labels"], Budget(fraction, seed=seed, min_items=min_items), key, full=full)
    rows = np.concatenate([np.full(len(chosen[name]), i) for i, name in enumerate(names)])
    cols = np.concatenate([np.array(chosen[name], dtype=int) for name in names])
    cells = Cells(rows, cols, y[rows, cols], m, n, method_of)
    est = estimate_grid(cells, n_boot=n_boot, level=0.95, rng=rng_for("budget-validation", key, fraction, seed))
    estimate, lo, hi = est.point, est.ci_low, est.ci_high
    subset = np.array([y[i, chosen[name]].mean() for i, name in enumerate(names)])
    truth = y.mean(axis=1)
    saved = 1 - cells.y.size / (m * n)

    def score(values: np.ndarray, low=None, high=None) -> Scores:
        method_err = [abs(values[method_of == k].mean() - truth[method_of == k].mean()) for k in range(len(methods))]
        q_err = np.abs(np.quantile(values, QUANTILES) - np.quantile(truth, QUANTILES))
        cover = float(np.mean((truth >= low - 1e-12) & (truth <= high + 1e-12))) if low is not None else float("nan")
        rho = spearmanr(values, truth).statistic
        return Scores(100 * float(np.mean(np.abs(values - truth))), 100 * float(np.mean(method_err)),
                      100 * float(np.mean(q_err)), float(rho), cover, saved)

    return score(estimate, lo, hi), score(subset)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--budgets", default="0.05,0.1,0.25")
    parser.add_argument("--seeds", type=int, default=5, help="budget seeds per budget (default 5)")
    parser.add_argument("--boot", type=int, default=100, help="item-bootstrap replicates per fit (default 100)")
    parser.add_argument("--min-items", type=int, default=1,
                        help="--budget-min-items of the draws (default 1: the budget alone sets each quota)")
    parser.add_argument("--full-methods", default="null", help="--budget-full-methods of the draws (default null)")
    parser.add_argument("--rebuild", action="store_true", help="recompute the full grid with instructeval run")
    parser.add_argument("--from-runs", type=Path, default=None, help="build the cache from this finished sweep folder")
    parser.add_argument("--model-dir", default=str(ROOT / "models" / "smollm2"))
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--build-only", action="store_true", help="write the cache and stop")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "budget_grid")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    if args.rebuild or args.from_runs:
        folder = args.from_runs or rebuild(args.model_dir, args.data_dir, args.work, args.threads)
        data = cache_from_runs(Path(folder))
        args.cache.parent.mkdir(parents=True, exist_ok=True)
        args.cache.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"cache written: {args.cache} ({sum(len(g['rows']) for g in data['grids'].values())} variants)")
        if args.build_only:
            return 0
    if not args.cache.exists():
        print(f"skip: no cache at {args.cache}; build it with --rebuild (or --from-runs DIR)")
        return 0
    data = json.loads(args.cache.read_text(encoding="utf-8"))
    budgets = [float(b) for b in args.budgets.split(",")]
    grids = data["grids"]
    print(f"full grid: {data['model']} {data['metric']}; "
          + "; ".join(f"{k}: {len(g['rows'])} instructions x {len(g['labels'])} items" for k, g in sorted(grids.items())))
    header = (f"{'budget':>6} {'grid':<16} {'estimator':<10} {'instr MAE':>9} {'method MAE':>10} {'quant MAE':>9} "
              f"{'spearman':>8} {'CI cover':>8} {'saved':>6}")
    print(header)
    print("-" * len(header))
    started = time.monotonic()
    overall: dict[tuple[float, str], list[Scores]] = {}
    for fraction in budgets:
        for key in sorted(grids):
            per = {"irt": [], "subset": []}
            for seed in range(args.seeds):
                irt, subset = evaluate_grid(grids[key], fraction, seed, args.boot, key, min_items=args.min_items,
                                            full_methods=tuple(m for m in args.full_methods.split(",") if m))
                per["irt"].append(irt)
                per["subset"].append(subset)
            for name, scores in per.items():
                overall.setdefault((fraction, name), []).extend(scores)
                _row(fraction, key, name, scores)
        for name in ("irt", "subset"):
            _row(fraction, "all grids", name, overall[(fraction, name)])
        print()
    ten = overall.get((0.1, "irt"))
    if ten:
        q = np.mean([s.quantile_mae for s in ten])
        mm = np.mean([s.method_mae for s in ten])
        verdict = "MET" if q <= 2 and mm <= 2 else "NOT MET"
        print(f"target at 10%: quantile MAE {q:.2f} and method-mean MAE {mm:.2f} points (<= 2): {verdict}")
    print(f"({args.seeds} seeds per budget, {args.boot} bootstrap replicates per fit; {time.monotonic() - started:.0f} s)")
    return 0


def _row(fraction: float, key: str, name: str, scores: list[Scores]) -> None:
    mean = lambda field: float(np.mean([getattr(s, field) for s in scores]))  # noqa: E731
    cover = mean("coverage")
    print(f"{fraction:>6.0%} {key:<16} {name:<10} {mean('instr_mae'):>9.2f} {mean('method_mae'):>10.2f} "
          f"{mean('quantile_mae'):>9.2f} {mean('spearman'):>8.3f} {'' if np.isnan(cover) else f'{cover:.0%}':>8} "
          f"{mean('saved'):>6.0%}")


if __name__ == "__main__":
    sys.exit(main())
