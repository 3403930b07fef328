"""Benchmark: one small sweep run two ways, side by side in one run.

(a) ``instructeval run`` in one process with one model load;
(b) one ``lm_eval`` process per variant, each passing the variant's keys through ``--metadata``.

Prints wall time of each and their ratio, the model requests and forward passes each issued, and
checks that both give the same score for every variant. Needs a prepared model and the shared
sample data; skips cleanly (exit 0 with a message) when either is missing.

    python benchmarks/sweep_vs_cli.py --model-dir models/smollm2 --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

# The keys of a variant's metadata that `lm_eval --metadata` needs to reproduce it.
CLI_KEYS = (
    "method", "instruction_id", "demo_seed", "order_seed", "order_mode", "perturbation", "perturbation_seed",
    "perturbation_mode", "test_sample", "test_seed", "truncate_words", "data_dir",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=str(ROOT / "models" / "smollm2"))
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--tasks", default="agnews")
    parser.add_argument("--methods", default="null,generic")
    parser.add_argument("--instructions-per-method", type=int, default=1)
    parser.add_argument("--selections", type=int, default=2)
    parser.add_argument("--orderings", type=int, default=1)
    parser.add_argument("--test-sample", type=int, default=16)
    parser.add_argument("--batch-size", default="8")
    args = parser.parse_args()
    for path, what in ((args.model_dir, "model (instructeval prepare-model smollm2-135m-instruct --out ...)"), (args.data_dir, "shared data")):
        if not Path(path).exists():
            print(f"skip: {path} not found; needs the {what}")
            return 0
    os.environ.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")

    from _counting import COUNTS, install

    from instructeval_tasks.sweep import run_sweep

    overrides = dict(
        instructions_per_method=args.instructions_per_method,
        n_selections=args.selections,
        n_perturbed_selections=1,
        n_orderings=args.orderings,
        test_sample=args.test_sample,
    )
    model_args = f"pretrained={args.model_dir},dtype=float32"
    out = Path(tempfile.mkdtemp(prefix="bench-sweep-"))

    install()
    start = time.monotonic()
    report = run_sweep(
        model="hf", model_args=model_args, tasks=args.tasks, methods=args.methods, output=out / "runner",
        profile="quick", overrides=overrides, data_dir=args.data_dir, batch_size=int(args.batch_size),
        device="cpu", progress=False, echo=lambda line: None,
    )
    runner_seconds = time.monotonic() - start
    runner_counts = dict(COUNTS)

    runner_scores, variants = {}, []
    for path in report.result_files:
        data = json.loads(path.read_text())
        for name, cfg in data["configs"].items():
            meta = cfg["metadata"]
            runner_scores[name] = data["results"][name]
            variants.append((name, meta))

    cli_counts = {k: 0 for k in COUNTS}
    cli_scores = {}
    start = time.monotonic()
    for name, meta in variants:
        cli_meta = {k: meta[k] for k in CLI_KEYS if meta.get(k) is not None}
        task = f"instructeval_{meta['instructeval_task']}"
        cmd = [
            sys.executable, str(HERE / "_counting.py"), "--include_path", str(ROOT / "instructeval_tasks"),
            "--tasks", task, "--model", "hf", "--model_args", model_args, "--device", "cpu",
            "--batch_size", args.batch_size, "--num_fewshot", str(meta["num_fewshot"]),
            "--metadata", json.dumps(cli_meta), "--output_path", str(out / "cli" / name),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            print(done.stderr[-3000:])
            raise SystemExit(f"lm_eval failed for {name}")
        counts = json.loads(done.stdout.split("COUNTS ", 1)[1].splitlines()[0])
        for key, value in counts.items():
            cli_counts[key] += value
        result_file = next((out / "cli" / name).rglob("results_*.json"))
        cli_scores[name] = json.loads(result_file.read_text())["results"][task]
    cli_seconds = time.monotonic() - start

    keys = [k for k in ("acc_per_token,none", "acc,none", "quasi_exact_match,none") if k in next(iter(runner_scores.values()))]
    worst = max(abs(runner_scores[n][k] - cli_scores[n][k]) for n in runner_scores for k in keys)
    print(f"sweep: tasks={args.tasks} methods={args.methods} variants={len(variants)} items/variant={args.test_sample}")
    print(f"{'':28}{'runner':>12}{'lm_eval/variant':>18}{'ratio':>9}")
    print(f"{'wall time (s)':28}{runner_seconds:12.1f}{cli_seconds:18.1f}{cli_seconds / runner_seconds:9.2f}")
    for key in ("loglikelihood_requests", "generate_requests", "forward_calls", "generate_calls", "forward_tokens"):
        a, b = runner_counts[key], cli_counts[key]
        ratio = f"{b / a:9.2f}" if a else f"{'-':>9}"
        print(f"{key:28}{a:12d}{b:18d}{ratio}")
    print(f"max |score difference| over {len(variants)} variants and {keys}: {worst:.2e}")
    return 0 if worst < 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
