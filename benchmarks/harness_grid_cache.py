"""Save fully scored harness-task grids (``instructeval run --harness-tasks``) as a benchmark grid cache.

The validations (``design_projection_validation.py``) read per-item grids from ``benchmarks/data``; the
nine tasks' caches come from ``budget_validation.py``. This writes the same layout for lm-eval's own
tasks from a run folder: per (model, task, placement, n-shot) grid, one row per instruction with its
per-item ``correct`` string under ``--metric`` (read from the per-sample logs), the items' gold answers
(``labels``) and the run's fingerprint, keyed ``<task>-harness:<placement>-<shots>-<metric>`` (and ``@<model>``), one file per model
(``<out stem>_<model>.json``).

Usage:
    python benchmarks/harness_grid_cache.py --runs study --metric acc_norm --out benchmarks/data/harness_grid_hellaswag_acc_norm.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def grids_of(runs: list[str], metric: str | None) -> dict[str, dict]:
    """model -> {key: grid} of every fully scored harness grid under ``runs``."""
    from instructeval_aggregation.harness_effects import load_harness_results
    from instructeval_aggregation.issues import IssueLog
    from instructeval_aggregation.samples import read_sample_targets

    issues = IssueLog()
    results = load_harness_results(runs, issues, metric=metric)
    groups: dict[tuple, list] = {}
    for r in results:
        groups.setdefault((r.model, r.task, r.placement, r.num_fewshot), []).append(r)
    out: dict[str, dict] = {}
    for (model, task, placement, shots), members in sorted(groups.items()):
        members.sort(key=lambda r: (r.method != "null", r.method, r.instruction_id))
        rows, labels, ref = [], None, None
        for r in members:
            name, _, filt = r.metric.partition(",")
            doc_ids, values, targets = read_sample_targets(r.samples_path, name, filter_name=filt or "none")
            if ref is not None and doc_ids.tolist() != ref:
                raise SystemExit(f"{r.file}: {r.instruction_id} was scored on other rows than the stock instruction")
            ref, labels = doc_ids.tolist(), labels or [str(t) for t in targets]
            rows.append({"method": r.method, "instruction": r.instruction_id,
                         "correct": "".join("1" if v >= 0.5 else "0" for v in values)})
        key = f"{task}-harness:{placement}-{shots}-{members[0].metric.split(',')[0]}"
        out.setdefault(model, {})[key] = {"task": task, "setting": f"{placement}, {shots}-shot", "metric": members[0].metric,
                                          "labels": labels, "rows": rows}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", required=True, help="run folders (instructeval run --output)")
    parser.add_argument("--metric", default=None, help="the harness metric to read (default: each task's first)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    by_model = grids_of(args.runs, args.metric)
    for model, grids in by_model.items():
        path = args.out.with_name(f"{args.out.stem}_{model}{args.out.suffix}")
        document = {"description": "per-item scores of every (instruction, item) cell of fully scored harness-task grids; "
                                   "see benchmarks/harness_grid_cache.py", "model": [model], "metric": args.metric,
                    "grids": grids}
        path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        shapes = ", ".join(f"{k} ({len(g['rows'])} x {len(g['labels'])})" for k, g in grids.items())
        print(f"wrote {path}: {shapes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
