"""Benchmark: few-shot AG News with ``instructeval-hf`` vs the stock ``hf`` backend, side by side.

One process, one model per backend (same model_args), the same task objects: ``--items`` test items
x ``--seeds`` demo sets of K=``--shots`` demos, all variants in one ``simple_evaluate`` (one pooled
request list, as the sweep runner does). Prints the wall time of each (whole evaluation and the
time inside the model's request methods) and their ratio, the forward tokens each processed
(``input_ids.numel()`` per forward pass, padding included), the distinct-token lower bound (tokens
of the distinct prefixes plus the distinct suffix tokens, i.e. the size of the token trie of the
model input rows), max |Δ log-likelihood| over all (doc, choice) requests, and whether acc and
acc_per_token are identical. Targets: >= 5x faster, forward tokens <= 1.3x the bound.

    python benchmarks/backend_fewshot.py --model-dir models/smollm2-135m-instruct --data-dir ../shared/data

Exits 0 with a "skip:" line when the model or the data is missing.
"""

from __future__ import annotations

import argparse
import sys
import time

import backend_common as bc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=str(bc.DEFAULT_MODEL))
    parser.add_argument("--data-dir", default=str(bc.DEFAULT_DATA))
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--shots", type=int, default=6)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--batch-size", "--batch_size", dest="batch_size", type=int, default=8)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--threads", type=int, default=1, help=bc.THREADS_HELP)
    parser.add_argument("--method", default="generic", help="instruction bank method of the prefix (default generic)")
    parser.add_argument("--noise-items", type=int, default=25,
                        help="also measure the stock backend's own batch-size noise on this many items of demo set 0 "
                             "(hf at batch size 1 vs --batch-size), the floor for bf16 score identity; 0 skips")
    args = parser.parse_args()
    skip = bc.missing_inputs(args.model_dir, args.data_dir)
    if skip:
        print(skip)
        return 0
    bc.offline()
    bc.set_threads(args.threads)
    import lm_eval

    counts = bc.install_counters()
    variants = [
        {"name": f"agnews_fs_d{seed}", "num_fewshot": args.shots, "method": args.method, "instruction_index": 0,
         "demo_seed": seed}
        for seed in range(args.seeds)
    ]
    runs: dict[str, dict] = {}
    for backend in ("instructeval-hf", "hf"):
        lm = bc.load_lm(backend, args.model_dir, args.batch_size, args.dtype)
        requests = bc.capture_requests(lm)
        tasks = bc.task_objects("agnews", variants, data_dir=args.data_dir, model_dir=args.model_dir, items=args.items)
        bc.reset()
        start = time.perf_counter()
        results = lm_eval.simple_evaluate(model=lm, tasks=tasks, log_samples=True, verbosity="ERROR")
        runs[backend] = {"seconds": time.perf_counter() - start, "counts": dict(counts), "results": results,
                         "stats": dict(getattr(lm, "prefix_stats", {}) or {})}
        if backend == "hf":
            bound = bc.distinct_token_bound(bc.model_rows(lm, requests))
            stock_rows = len(bc.model_rows(lm, requests))
            n_requests = len(requests)
        del lm

    new, old = runs["instructeval-hf"], runs["hf"]
    sn, so = bc.scores(new["results"]), bc.scores(old["results"])
    identical = sn == so
    delta = bc.max_loglik_delta(new["results"], old["results"])
    bc.say(f"few-shot AG News: {args.items} items x {args.seeds} demo seeds, K={args.shots}, method={args.method}, "
           f"{n_requests} loglikelihood requests ({stock_rows} distinct model rows), batch_size={args.batch_size}, "
           f"{args.dtype}, CPU threads={__import__('torch').get_num_threads()}")
    bc.say(f"{'':34}{'instructeval-hf':>16}{'hf':>14}{'hf/new':>9}")
    rows = [
        ("wall time, simple_evaluate (s)", new["seconds"], old["seconds"]),
        ("wall time, model requests (s)", new["counts"]["lm_seconds"], old["counts"]["lm_seconds"]),
        ("forward passes", new["counts"]["forward_calls"], old["counts"]["forward_calls"]),
        ("forward tokens (padded)", new["counts"]["forward_tokens"], old["counts"]["forward_tokens"]),
    ]
    for label, a, b in rows:
        fmt = "{:>16.1f}{:>14.1f}" if isinstance(a, float) else "{:>16d}{:>14d}"
        bc.say(f"{label:34}" + fmt.format(a, b) + f"{(b / a if a else float('nan')):>9.2f}")
    ratio_bound = new["counts"]["forward_tokens"] / bound
    bc.say(f"{'distinct-token lower bound':34}{bound:>16d}   (forward tokens / bound: instructeval-hf "
           f"{ratio_bound:.2f}, hf {old['counts']['forward_tokens'] / bound:.2f})")
    bc.say(f"max |Δ log-likelihood| over {n_requests} requests: {delta:.2e}")
    bc.say(f"acc / acc_per_token identical in all {len(so)} variants: {identical}")
    for task in sorted(so):
        bc.say(f"  {task}: hf {so[task]}  instructeval-hf {sn[task]}")
    if args.noise_items:
        noise_floor(args, variants[0])
    speed = old["counts"]["lm_seconds"] / new["counts"]["lm_seconds"]
    bc.say(f"targets: speed-up >= 5x on model time: {speed:.1f}x {'MET' if speed >= 5 else 'NOT MET'}; "
           f"forward tokens <= 1.3x bound: {ratio_bound:.2f}x {'MET' if ratio_bound <= 1.3 else 'NOT MET'}; "
           f"identical scores: {'MET' if identical else 'NOT MET'}")
    return 0


def noise_floor(args, variant: dict) -> None:
    """hf at batch size 1 vs hf and instructeval-hf at --batch-size, on a small subset."""
    import lm_eval

    runs = {}
    for backend, bs in (("hf", args.batch_size), ("hf", 1), ("instructeval-hf", args.batch_size)):
        lm = bc.load_lm(backend, args.model_dir, bs, args.dtype)
        tasks = bc.task_objects("agnews", [variant], data_dir=args.data_dir, model_dir=args.model_dir, items=args.noise_items)
        runs[(backend, bs)] = lm_eval.simple_evaluate(model=lm, tasks=tasks, log_samples=True, verbosity="ERROR")
        del lm
    ref = runs[("hf", args.batch_size)]
    bc.say(f"noise floor on {args.noise_items} items of {variant['name']} ({args.dtype}), vs hf at batch size {args.batch_size}:")
    for key in (("hf", 1), ("instructeval-hf", args.batch_size)):
        r = runs[key]
        bc.say(f"  {key[0]} batch size {key[1]}: max |Δ log-likelihood| {bc.max_loglik_delta(ref, r):.2e}, "
               f"scores {'identical' if bc.scores(r) == bc.scores(ref) else 'different'} ({bc.scores(r)} vs {bc.scores(ref)})")


if __name__ == "__main__":
    sys.exit(main())
