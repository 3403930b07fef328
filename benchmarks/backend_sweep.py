"""Benchmark: a whole ``quick`` sweep, runner + ``instructeval-hf`` vs one ``lm_eval`` process per variant.

(a) ``instructeval run`` in one process (``run_sweep``) with ``--model instructeval-hf``: one model
    load, every chunk's requests pooled, shared prompt prefixes computed once;
(b) the stock way: one ``lm_eval --model hf`` process per variant, each passing the variant's keys
    through ``--metadata`` (the pattern of ``sweep_vs_cli.py``);
(c) optionally (``--runner-hf``) the runner with the stock ``hf`` backend, to separate the gain of
    one process from the gain of prefix sharing.

Prints wall time of each and the ratios, the model requests and forward passes/tokens each issued,
and compares every variant's scores (acc, acc_per_token, quasi_exact_match). Forward passes/tokens
of the stock ``hf`` runs count its log-likelihood passes (``_model_call``) only: its generation runs
inside ``model.generate``; those of ``instructeval-hf`` count every pass, prefill and greedy decoding
steps included. In bfloat16 a near-tie may flip a variant's score by one item; compare in float32
(``--dtype float32``) for identity. Needs the prepared
model and the shared data; exits 0 with a "skip:" line when either is missing.

    python benchmarks/backend_sweep.py --model-dir models/smollm2 --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import backend_common as bc

# The keys of a variant's metadata that `lm_eval --metadata` needs to reproduce it (as sweep_vs_cli.py).
CLI_KEYS = (
    "method", "instruction_id", "demo_seed", "order_seed", "order_mode", "perturbation", "perturbation_seed",
    "perturbation_mode", "test_sample", "test_seed", "truncate_words", "data_dir",
)
METRICS = ("acc,none", "acc_per_token,none", "quasi_exact_match,none")


def run_runner(model: str, args, out: Path) -> tuple[float, dict, dict[str, dict], list]:
    from instructeval_tasks.sweep import run_sweep

    counts = bc.install_counters()
    bc.reset()
    start = time.perf_counter()
    report = run_sweep(
        model=model, model_args=f"pretrained={args.model_dir},dtype={args.dtype}", tasks=args.tasks,
        methods=args.methods, output=out, profile="quick", data_dir=args.data_dir, batch_size=args.batch_size,
        device="cpu", progress=False, echo=lambda line: None,
    )
    seconds = time.perf_counter() - start
    scores, variants = {}, []
    for path in report.result_files:
        data = json.loads(path.read_text())
        for name, cfg in data["configs"].items():
            scores[name] = {k: v for k, v in data["results"][name].items() if k in METRICS}
            variants.append((name, cfg["metadata"], cfg["num_fewshot"]))
    return seconds, dict(counts), scores, variants


def run_cli(args, variants, out: Path) -> tuple[float, dict, dict[str, dict]]:
    counts = {"loglikelihood_requests": 0, "generate_requests": 0, "forward_calls": 0, "forward_tokens": 0}
    scores = {}
    env = {**__import__("os").environ}
    start = time.perf_counter()
    for name, meta, shots in variants:
        cli_meta = {k: meta[k] for k in CLI_KEYS if meta.get(k) is not None}
        task = f"instructeval_{meta['instructeval_task']}"
        cmd = [
            sys.executable, str(bc.HERE / "_counting.py"), "--include_path", str(bc.ROOT / "instructeval_tasks"),
            "--tasks", task, "--model", "hf", "--model_args", f"pretrained={args.model_dir},dtype={args.dtype}",
            "--device", "cpu", "--batch_size", str(args.batch_size), "--num_fewshot", str(shots),
            "--metadata", json.dumps(cli_meta), "--output_path", str(out / name),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=bc.ROOT, env=env)
        if done.returncode != 0:
            print(done.stderr[-3000:])
            raise SystemExit(f"lm_eval failed for {name}")
        got = json.loads(done.stdout.split("COUNTS ", 1)[1].splitlines()[0])
        for key in counts:
            counts[key] += got.get(key, 0)
        result = json.loads(next((out / name).rglob("results_*.json")).read_text())["results"][task]
        scores[name] = {k: v for k, v in result.items() if k in METRICS}
    return time.perf_counter() - start, counts, scores


def compare(a: dict[str, dict], b: dict[str, dict]) -> tuple[int, float]:
    differing, worst = 0, 0.0
    for name, sa in a.items():
        sb = b[name]
        diff = max((abs(sa[k] - sb[k]) for k in sa if k in sb), default=0.0)
        differing += diff > 0
        worst = max(worst, diff)
    return differing, worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=str(bc.DEFAULT_MODEL))
    parser.add_argument("--data-dir", default=str(bc.DEFAULT_DATA))
    parser.add_argument("--tasks", default="agnews,nq_open")
    parser.add_argument("--methods", default="null,generic")
    parser.add_argument("--batch-size", "--batch_size", dest="batch_size", type=int, default=8)
    bc.add_runtime_options(parser)
    parser.add_argument("--runner-hf", action="store_true", help="also run the runner with the stock hf backend")
    args = parser.parse_args()
    skip = bc.missing_inputs(args.model_dir, args.data_dir)
    if skip:
        print(skip)
        return 0
    args.model_dir = str(Path(args.model_dir).resolve())
    args.data_dir = str(Path(args.data_dir).resolve())
    bc.offline()
    bc.set_threads(args.threads)
    out = Path(tempfile.mkdtemp(prefix="bench-backend-sweep-"))

    new_s, new_c, new_scores, variants = run_runner("instructeval-hf", args, out / "runner-new")
    rows = [("runner + instructeval-hf", new_s, new_c)]
    if args.runner_hf:
        hf_s, hf_c, hf_scores, _ = run_runner("hf", args, out / "runner-hf")
        rows.append(("runner + hf", hf_s, hf_c))
    cli_s, cli_c, cli_scores = run_cli(args, variants, out / "cli")
    rows.append(("lm_eval hf, 1 process/variant", cli_s, cli_c))

    bc.say(f"quick sweep: tasks={args.tasks} methods={args.methods} variants={len(variants)} "
           f"batch_size={args.batch_size} {args.dtype} CPU threads={__import__('torch').get_num_threads()}")
    bc.say(f"{'':30}" + "".join(f"{label:>32}" for label, _, _ in rows))
    bc.say(f"{'wall time (s)':30}" + "".join(f"{s:>32.1f}" for _, s, _ in rows))
    bc.say(f"{'  ratio to runner+instructeval-hf':30}" + "".join(f"{s / new_s:>32.2f}" for _, s, _ in rows))
    for key in ("loglikelihood_requests", "generate_requests", "forward_calls", "forward_tokens"):
        bc.say(f"{key:30}" + "".join(f"{int(c.get(key, 0)):>32d}" for _, _, c in rows))
    differing, worst = compare(new_scores, cli_scores)
    bc.say(f"scores, instructeval-hf runner vs lm_eval hf per variant: {len(variants) - differing}/{len(variants)} "
           f"variants identical, max |difference| {worst:.3g} over {', '.join(METRICS)}")
    if args.runner_hf:
        d2, w2 = compare(hf_scores, cli_scores)
        bc.say(f"scores, hf runner vs lm_eval hf per variant: {len(variants) - d2}/{len(variants)} identical, max |difference| {w2:.3g}")
    for name in sorted(new_scores):
        if new_scores[name] != cli_scores[name]:
            bc.say(f"  differs: {name}: instructeval-hf {new_scores[name]} lm_eval hf {cli_scores[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
