"""Benchmark: the CPU time of a budgeted sweep against the full grid's, on the same grid.

Runs the same ``instructeval run`` command three times, one after the other, each in its own process
with one thread (``--threads``, ``OMP_NUM_THREADS``; CPU time = user + system of the process, from
``resource.getrusage``):

(a) the full grid (every instruction of the methods on every test item, in ``--setting``: zero-shot by default);
(b) ``--budget F``: budgeted chunks pooled into one harness call (the runner's way);
(c) ``--budget F`` with every chunk in its own harness call (``chunk.POOL_ITEMS = 0``): what the
    pooling saves;
(d) with ``--extend F2``: (b)'s folder rerun with ``--budget-extend F2`` (its cells kept, the new
    ones in the extension's rounds): the extension's own CPU time, and (b) + (d) against F2's share
    of the full grid's; and whether each extended cell scored what the full grid scored.

Prints each run's CPU time, the budget's share of cells (from the plan), the ratio
``CPU(budget) / (share x CPU(full))`` (the target is 1.3 or less), where (b) and (c) differ, and
whether (b) and (c) scored every cell alike. The per-process fixed cost (imports, the model load and
its self-check, planning) is in all three runs, so the ratio falls as the grid grows.

    python benchmarks/budget_cost.py --model-dir models/smollm2 --data-dir ../shared/data --task emotion
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import backend_common as bc
from instructeval_tasks.data import read_jsonl
from instructeval_tasks.sweep.budget import DEFAULT_DESIGN

_SHARE = re.compile(r"cells \((\d+(?:\.\d+)?)%\)")
_EXTENDED_SHARE = re.compile(r"budget extension to [^:]*: .*? of [\d,]+ \((\d+(?:\.\d+)?)%\)")
_RUN = ("import sys, instructeval_tasks.sweep.chunk as chunk; chunk.POOL_ITEMS = int(sys.argv[1]); "
        "from instructeval_tasks.cli import main; sys.exit(main(sys.argv[2:]))")


def run(pool_items: int, args: list[str], threads: int) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, stderr) of one ``instructeval run`` in a child process."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _RUN, str(pool_items), "run", *args], env=env,
                          capture_output=True, text=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"instructeval run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall, done.stderr


def cells(folder: Path) -> dict[tuple[str, int], float]:
    """Every (variant, doc_id) cell's primary score from the per-sample logs."""
    out = {}
    for path in folder.rglob("samples_*.jsonl"):
        name = re.sub(r"_\d{4}-\d\d-\d\dT.*$", "", path.name[len("samples_"):])
        for row in read_jsonl(path):
            key = next(k for k in ("acc_per_token", "acc", "quasi_exact_match") if k in row)
            out[(name, row["doc_id"])] = row[key]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=str(bc.DEFAULT_MODEL))
    parser.add_argument("--data-dir", default=str(bc.DEFAULT_DATA))
    parser.add_argument("--task", default="emotion")
    parser.add_argument("--setting", default="zero_shot", choices=("zero_shot", "few_shot"),
                        help="the grid's setting (few_shot: demo set 0, the profile's shots)")
    parser.add_argument("--skip-alone", action="store_true",
                        help="skip run (c), one harness call per chunk (its comparison is then not printed)")
    parser.add_argument("--methods", default="null,generic,promptsource,adhoc")
    parser.add_argument("--budget", type=float, default=0.1)
    parser.add_argument("--design", default=None, choices=("balanced", "uniform", "adaptive"),
                        help="--budget-design of the budgeted runs (default: the runner's, adaptive); adaptive: "
                             "the first slice and its two rounds in one command, the share counted from the cells")
    parser.add_argument("--extend", type=float, default=None, metavar="F2",
                        help="also extend the pooled run's folder with --budget-extend F2 (run (d))")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--work", type=Path, default=None, help="output folder (default: a temporary one)")
    bc.add_runtime_options(parser)
    args = parser.parse_args()
    if not bc.ready(args):
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="budget_cost_"))
    common = ["--model", "instructeval-hf", "--model_args",
              f"pretrained={Path(args.model_dir).resolve()},dtype={args.dtype}", "--device", "cpu",
              "--batch_size", str(args.batch_size), "--tasks", args.task, "--methods", args.methods,
              "--profile", "paper", "--instructions-per-method", "1000", "--settings", args.setting,
              "--selections", "1", "--data-dir", str(Path(args.data_dir).resolve())]
    budget = ["--budget", str(args.budget)] + (["--budget-design", args.design] if args.design else [])
    full_cpu, full_wall, _ = run(0, common + ["--output", str(work / "full")], args.threads)
    pooled_cpu, pooled_wall, log = run(200, common + budget + ["--output", str(work / "pooled")], args.threads)
    if not args.skip_alone:
        alone_cpu, alone_wall, _ = run(0, common + budget + ["--output", str(work / "alone")], args.threads)
    pooled = cells(work / "pooled")
    alone = pooled if args.skip_alone else cells(work / "alone")
    full_cells = cells(work / "full")
    # the plan line gives an adaptive design's first slice only: its share is counted from the cells
    adaptive = (args.design or DEFAULT_DESIGN) == "adaptive"
    share = len(pooled) / len(full_cells) if adaptive else float(_SHARE.search(log).group(1)) / 100
    same = pooled == alone
    print(f"{args.task} {args.setting.replace('_', '-')}, methods {args.methods}, --budget {args.budget}"
          f"{f' --budget-design {args.design}' if args.design else ''} ({share:.1%} of cells); "
          f"CPU seconds (wall), one thread each, {work}")
    print(f"  full grid                     {full_cpu:8.1f} ({full_wall:.0f})")
    timed = [("budget, pooled calls", pooled_cpu, pooled_wall)]
    if not args.skip_alone:
        timed.append(("budget, one call per chunk", alone_cpu, alone_wall))
    for label, cpu, wall in timed:
        print(f"  {label:<29} {cpu:8.1f} ({wall:.0f})  {cpu / full_cpu:6.1%} of the full grid's, "
              f"{cpu / (share * full_cpu):.2f}x its share")
    if not args.skip_alone:
        print(f"  pooled / one call per chunk   {pooled_cpu / alone_cpu:.2f}; every cell scored alike: {same} "
              f"({len(pooled)} cells)")
    print(f"  every budgeted cell scored as in the full grid: "
          f"{all(full_cells[(name.split('__r')[0], doc)] == score for (name, doc), score in pooled.items())}")
    target = pooled_cpu <= 1.3 * share * full_cpu
    print(f"target: budgeted CPU <= 1.3 x share x full: {'MET' if target else 'NOT MET'}")
    if args.extend is not None:
        extend_cpu, extend_wall, log = run(200, common + budget + ["--budget-extend", str(args.extend), "--output",
                                                                  str(work / "pooled")], args.threads)
        extended_share = float(_EXTENDED_SHARE.search(log).group(1)) / 100
        added = {key: score for key, score in cells(work / "pooled").items() if key not in pooled}
        alike = all(full_cells[(name.split("__r")[0], doc)] == score for (name, doc), score in added.items())
        total = pooled_cpu + extend_cpu
        print(f"  --budget-extend {args.extend} of the pooled folder ({extended_share:.1%} of cells): {extend_cpu:.1f} "
              f"({extend_wall:.0f}) for {len(added)} more cells; with its --budget run {total:.1f} = "
              f"{total / full_cpu:.1%} of the full grid's, {total / (extended_share * full_cpu):.2f}x its share; "
              f"every added cell scored as in the full grid: {alike}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
