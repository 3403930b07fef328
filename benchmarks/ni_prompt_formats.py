"""The two Natural Instructions prompt formats side by side: ROUGE-L per task and model, paired over instances.

Each model is run twice on the 12 tasks with the standard encoding (``definition_pos2``), once per
``prompt_format`` (``schema``, the project's layout; ``tk-instruct``, Tk-Instruct's collator string):

    lm_eval --include_path instructeval_tasks --tasks instructeval_ni --model instructeval-hf \\
      --model_args pretrained=models/smollm2,dtype=float32 --device cpu --batch_size 8 --log_samples \\
      --output_path fmt/smollm2_schema --metadata '{"data_dir": "../shared/data", "prompt_format": "schema"}'

This reads the per-sample logs (``rougeL`` and ``exact_match`` per instance) and writes, per model and
task, each format's ROUGE-L (points), the paired difference ``tk-instruct - schema`` over the
instances with its percentile bootstrap interval (``--bootstrap`` replicates over the instances, seeded
by the string ``"ni-formats|<model>|<task>"``), and the same over all 1,200 instances (tasks as strata).

Usage:
    python benchmarks/ni_prompt_formats.py --run smollm2=fmt/smollm2_schema,fmt/smollm2_tk-instruct \\
      --run qwen=fmt/qwen_schema,fmt/qwen_tk-instruct --write-page docs/ni_study/prompt-formats.md

Besides the scores, the share of instances each format answers with an empty line (the generation stops
at the first newline) is given: where a format's answers are empty, its score says so.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from budget_validation import git_stamp, page_command  # noqa: E402

LEVEL = 0.95
METRICS = ("rougeL", "exact_match")


def read_folder(folder: Path) -> dict[str, dict[str, dict[str, float]]]:
    """task -> metric (and ``empty``: 1 where the answer is blank) -> instance id -> value, from the
    per-sample logs under ``folder``."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for path in sorted(folder.rglob("samples_instructeval_ni_*.jsonl")):
        task = path.name.removeprefix("samples_instructeval_ni_").rsplit("_", 1)[0]
        per = out.setdefault(task, {m: {} for m in (*METRICS, "empty")})
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                key = str(record["doc"]["id"])
                for metric in METRICS:
                    per[metric][key] = float(record[metric])
                answer = record["filtered_resps"][0] if record.get("filtered_resps") else record["resps"][0][0]
                per["empty"][key] = float(not str(answer).split("\n", 1)[0].strip())
    if not out:
        raise SystemExit(f"{folder}: no samples_instructeval_ni_*.jsonl (run lm_eval with --log_samples)")
    return out


def compare(model: str, schema: dict, tk: dict, n_boot: int) -> list[dict]:
    """One row per task (and one over every task) of the module doc."""
    from instructeval_aggregation.bootstrap import rng_for

    rows, pooled = [], []  # pooled: per task (schema scores, tk scores, empty answers of each, replicates)
    for task in sorted(set(schema) & set(tk)):
        ids = sorted(set(schema[task]["rougeL"]) & set(tk[task]["rougeL"]))
        a = np.array([schema[task]["rougeL"][i] for i in ids])
        b = np.array([tk[task]["rougeL"][i] for i in ids])
        empty = (np.array([schema[task]["empty"][i] for i in ids]), np.array([tk[task]["empty"][i] for i in ids]))
        rng = rng_for("ni-formats", model, task)
        reps = np.array([(b - a)[rng.integers(0, len(a), len(a))].mean() for _ in range(n_boot)])
        pooled.append((a, b, empty, reps))
        rows.append(_row(model, task, a, b, reps, empty))
    # tasks as strata: a replicate of the whole is the instance-weighted mean of the tasks' replicates
    weights = np.array([len(a) for a, _, _, _ in pooled], dtype=float)
    reps = (np.stack([r for _, _, _, r in pooled]) * weights[:, None]).sum(axis=0) / weights.sum()
    join = lambda k: np.concatenate([p[k] for p in pooled])  # noqa: E731
    empty = tuple(np.concatenate([p[2][side] for p in pooled]) for side in (0, 1))
    rows.append(_row(model, "all 12 tasks", join(0), join(1), reps, empty))
    return rows


def _row(model: str, task: str, a: np.ndarray, b: np.ndarray, reps: np.ndarray, empty: tuple[np.ndarray, np.ndarray]) -> dict:
    low, high = np.quantile(reps, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return {"model": model, "task": task, "n": len(a), "schema": 100 * a.mean(), "tk": 100 * b.mean(),
            "diff": 100 * (b - a).mean(), "low": 100 * low, "high": 100 * high, "empty_schema": float(empty[0].mean()),
            "empty_tk": float(empty[1].mean())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", required=True, metavar="MODEL=SCHEMA_DIR,TK_DIR")
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--write-page", type=Path, default=None)
    args = parser.parse_args(argv)
    started, rows = time.time(), []
    for spec in args.run:
        model, _, folders = spec.partition("=")
        schema_dir, tk_dir = folders.split(",")
        rows += compare(model, read_folder(Path(schema_dir)), read_folder(Path(tk_dir)), args.bootstrap)
    table = ["| model | task | instances | schema | tk-instruct | tk-instruct - schema [95%] | empty answers (schema, tk) |",
             "|---|---|---:|---:|---:|---:|---:|"]
    table += [f"| {r['model']} | {r['task']} | {r['n']} | {r['schema']:.1f} | {r['tk']:.1f} | {r['diff']:+.1f} "
              f"[{r['low']:+.1f}, {r['high']:+.1f}] | {r['empty_schema']:.0%}, {r['empty_tk']:.0%} |" for r in rows]
    print("\n".join(table))
    if args.write_page:
        page = ["# Natural Instructions: the schema layout against Tk-Instruct's prompt", "",
                "*Generated by `benchmarks/ni_prompt_formats.py --write-page`: edit the script or rerun it, not this page.*",
                "", f"Measured at commit `{git_stamp()}` on {datetime.date.today().isoformat()}, in "
                f"{time.time() - started:.0f} s, by", "", "```bash", page_command(Path(__file__).name, argv or sys.argv[1:]),
                "```", "", "Each folder is one `lm_eval` run with `--log_samples` (this script's docstring gives the "
                "command; the Qwen runs add `--limit 25`), one per model and format.", "",
                "ROUGE-L in points under the standard encoding (`definition_pos2`), each model on the 12 tasks in "
                "both prompt formats (`--metadata prompt_format=...`), on the instances the table counts (a run with "
                "`--limit N` scores each task's first N); the difference is paired over the "
                f"instances with its {LEVEL:.0%} percentile bootstrap interval ({args.bootstrap} replicates; the last row "
                "of each model pools the tasks as strata).", "", *table, ""]
        args.write_page.write_text("\n".join(page), encoding="utf-8")
        print(f"wrote {args.write_page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
