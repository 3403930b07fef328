"""Benchmark: few-shot AG News with ``instructeval-hf`` vs the stock ``hf`` backend, side by side.

One process, one model per backend (same model_args), the same task objects: ``--items`` test items
x ``--seeds`` demo sets of K=``--shots`` demos, all variants in one ``simple_evaluate`` (one pooled
request list, as the sweep runner does). Prints the wall time of each (whole evaluation and the
time inside the model's request methods) and their ratio, the forward tokens each processed
(``input_ids.numel()`` per forward pass, padding included), the distinct-token lower bound (tokens
of the distinct prefixes plus the distinct suffix tokens, i.e. the size of the token trie of the
model input rows), max |Δ log-likelihood| over all (doc, choice) requests, and whether acc and
acc_per_token are identical. Targets: >= 5x faster, forward tokens <= 1.3x the bound.

    python benchmarks/backend_fewshot.py --model-dir models/smollm2 --data-dir ../shared/data

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
    bc.add_runtime_options(parser)
    parser.add_argument("--method", default="generic", help="instruction bank method of the prefix (default generic)")
    parser.add_argument("--noise-batch-size", type=int, default=None,
                        help="also run hf at this batch size on the same variants: the stock backend's own batch-size "
                             "noise, the floor for score identity in reduced precision (default: 4 unless --dtype is "
                             "float32, where scores are identical and this is skipped; 0 skips)")
    parser.add_argument("--fp32-reference", action="store_true",
                        help="also run hf in float32 on the same variants and report how far each backend's "
                             "log-likelihoods and predictions are from it (when --dtype is not float32)")
    args = parser.parse_args()
    if not bc.ready(args):
        return 0
    import lm_eval

    counts = bc.install_counters()
    variants = [
        {"name": f"agnews_fs_d{seed}", "num_fewshot": args.shots, "method": args.method, "instruction_index": 0,
         "demo_seed": seed}
        for seed in range(args.seeds)
    ]
    # warm-up: the first simple_evaluate of a process pays one-off imports and dataset caching
    lm_eval.simple_evaluate(model="dummy", tasks=bc.task_objects("agnews", variants[:1], data_dir=args.data_dir,
                                                                  model_dir=args.model_dir, items=2), verbosity="ERROR",
                                                                  task_manager=bc.task_manager())
    runs: dict[str, dict] = {}
    for backend in ("instructeval-hf", "hf"):
        lm = bc.load_lm(backend, args.model_dir, args.batch_size, args.dtype)
        requests = bc.capture_requests(lm)
        tasks = bc.task_objects("agnews", variants, data_dir=args.data_dir, model_dir=args.model_dir, items=args.items)
        bc.reset()
        start = time.perf_counter()
        results = lm_eval.simple_evaluate(model=lm, tasks=tasks, log_samples=True, verbosity="ERROR",
                                          task_manager=bc.task_manager())
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
    delta, mean_delta = bc.loglik_delta_stats(new["results"], old["results"])
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
    bc.say(f"max |Δ log-likelihood| over {n_requests} requests: {delta:.2e} (mean {mean_delta:.2e})")
    bc.say(f"acc / acc_per_token identical in all {len(so)} variants: {identical}")
    for task in sorted(so):
        bc.say(f"  {task}: hf {so[task]}  instructeval-hf {sn[task]}")
    if args.noise_batch_size is None:
        args.noise_batch_size = 0 if args.dtype == "float32" else 4
    if args.noise_batch_size:
        noise_floor(args, variants, runs)
    if args.fp32_reference and args.dtype != "float32":
        fp32_reference(args, variants, runs)
    speed = old["counts"]["lm_seconds"] / new["counts"]["lm_seconds"]
    bc.say(f"targets: speed-up >= 5x on model time: {speed:.1f}x {'MET' if speed >= 5 else 'NOT MET'}; "
           f"forward tokens <= 1.3x bound: {ratio_bound:.2f}x {'MET' if ratio_bound <= 1.3 else 'NOT MET'}; "
           f"identical scores: {'MET' if identical else 'NOT MET'}")
    return 0


def predictions(results: dict) -> dict[tuple[str, int], int]:
    """The predicted choice (argmax log-likelihood, as ``acc``) of every doc."""
    out = {}
    for task, samples in results["samples"].items():
        for sample in samples:
            lls = [float(r[0]) for r in sample["filtered_resps"]]
            out[(task, sample["doc_id"])] = max(range(len(lls)), key=lls.__getitem__)
    return out


def noise_floor(args, variants: list[dict], runs: dict) -> None:
    """hf at --noise-batch-size on the same variants: how much the stock backend moves by itself."""
    import lm_eval

    lm = bc.load_lm("hf", args.model_dir, args.noise_batch_size, args.dtype)
    tasks = bc.task_objects("agnews", variants, data_dir=args.data_dir, model_dir=args.model_dir, items=args.items)
    other = lm_eval.simple_evaluate(model=lm, tasks=tasks, log_samples=True, verbosity="ERROR",
                                    task_manager=bc.task_manager())
    ref = runs["hf"]["results"]
    base = predictions(ref)
    bc.say(f"noise floor ({args.dtype}), each vs hf at batch size {args.batch_size} on the same {len(base)} docs:")
    for label, res in ((f"hf at batch size {args.noise_batch_size}", other),
                       (f"instructeval-hf at batch size {args.batch_size}", runs["instructeval-hf"]["results"])):
        pred = predictions(res)
        flips = sum(pred[k] != v for k, v in base.items())
        worst, mean = bc.loglik_delta_stats(ref, res)
        bc.say(f"  {label:32} |Δ log-likelihood| max {worst:.2e} mean {mean:.2e}, predicted label differs on "
               f"{flips} docs, scores {'identical' if bc.scores(res) == bc.scores(ref) else 'different'}")


def fp32_reference(args, variants: list[dict], runs: dict) -> None:
    """Distance of each backend's results from hf in float32 (the numerically better reference)."""
    import lm_eval

    lm = bc.load_lm("hf", args.model_dir, args.batch_size, "float32")
    tasks = bc.task_objects("agnews", variants, data_dir=args.data_dir, model_dir=args.model_dir, items=args.items)
    ref = lm_eval.simple_evaluate(model=lm, tasks=tasks, log_samples=True, verbosity="ERROR",
                                  task_manager=bc.task_manager())
    base = predictions(ref)
    bc.say(f"distance from hf in float32 on the same {len(base)} docs (float32 scores {bc.scores(ref)}):")
    for backend in ("hf", "instructeval-hf"):
        res = runs[backend]["results"]
        worst, mean = bc.loglik_delta_stats(ref, res)
        flips = sum(predictions(res)[k] != v for k, v in base.items())
        bc.say(f"  {backend} in {args.dtype:12} |Δ log-likelihood| max {worst:.2e} mean {mean:.2e}, "
               f"predicted label differs on {flips} docs")


if __name__ == "__main__":
    sys.exit(main())
