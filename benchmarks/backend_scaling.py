"""Benchmark: ``instructeval-hf`` time as the number of instructions doubles (1, 2, 4, 8).

Few-shot AG News (``--items`` test items, K=``--shots`` demos of demo set 0) with 1, 2, 4 and 8
literal instructions (the five generic ones of the paper, then three task-specific ones), each
count evaluated in one ``simple_evaluate`` (one pooled request list). With prefix sharing the cost
of a variant is its distinct tokens (its own instruction + demos once, then the test items), so the
time should grow linearly in the number of instructions, each one costing about as much as the
first. Prints time, forward tokens and the distinct-token bound per count, and the stock ``hf``
backend's forward tokens for the same requests (counted, not run).

    python benchmarks/backend_scaling.py --model-dir models/smollm2 --data-dir ../shared/data

Exits 0 with a "skip:" line when the model or the data is missing.
"""

from __future__ import annotations

import argparse
import sys
import time

import backend_common as bc

INSTRUCTIONS = [
    "Solve the following task:",
    "Find the answer below:",
    "Complete the problem.",
    "Find the best solution to the question below:",
    "Complete the question below:",
    "Classify the news article into one of four topics: World, Sports, Business or Sci/Tech.",
    "Read the news story and name its category.",
    "Which section of a newspaper does this article belong to?",
]


def stock_rows_tokens(lm, requests) -> int:
    """Tokens the stock backend would feed the model: its distinct rows (with its single-token dedup)."""
    return sum(len(r) for r in bc.model_rows(lm, requests))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=str(bc.DEFAULT_MODEL))
    parser.add_argument("--data-dir", default=str(bc.DEFAULT_DATA))
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--shots", type=int, default=6)
    parser.add_argument("--counts", default="1,2,4,8")
    parser.add_argument("--batch-size", "--batch_size", dest="batch_size", type=int, default=8)
    bc.add_runtime_options(parser)
    args = parser.parse_args()
    if not bc.ready(args):
        return 0
    import lm_eval

    counts_list = [int(c) for c in args.counts.split(",")]
    if max(counts_list) > len(INSTRUCTIONS):
        raise SystemExit(f"at most {len(INSTRUCTIONS)} instructions")
    counts = bc.install_counters()
    lm = bc.load_lm("instructeval-hf", args.model_dir, args.batch_size, args.dtype)
    lm._ie_unsupported(1)  # the one-time self-check, outside the timings
    requests = bc.capture_requests(lm)
    rows = []
    for n in counts_list:
        variants = [{"name": f"agnews_i{i}", "num_fewshot": args.shots, "instruction": INSTRUCTIONS[i], "demo_seed": 0}
                    for i in range(n)]
        tasks = bc.task_objects("agnews", variants, data_dir=args.data_dir, model_dir=args.model_dir, items=args.items)
        requests.clear()
        bc.reset()
        start = time.perf_counter()
        results = lm_eval.simple_evaluate(model=lm, tasks=tasks, verbosity="ERROR",
                                          task_manager=bc.task_manager())
        seconds = time.perf_counter() - start
        bound = bc.distinct_token_bound(bc.model_rows(lm, requests))
        rows.append((n, seconds, counts["lm_seconds"], int(counts["forward_tokens"]), bound,
                     stock_rows_tokens(lm, requests), len(requests),
                     sum(r["acc,none"] for r in results["results"].values()) / n))
    bc.say(f"instruction scaling, instructeval-hf: few-shot AG News, {args.items} items, K={args.shots}, demo set 0, "
           f"batch_size={args.batch_size}, {args.dtype}, CPU threads={__import__('torch').get_num_threads()}")
    bc.say(f"{'instructions':>12}{'requests':>10}{'eval (s)':>10}{'model (s)':>11}{'model s/instr':>15}"
           f"{'model x':>8}{'fwd tokens':>12}{'bound':>9}{'fwd/bound':>10}{'hf row tokens':>15}{'mean acc':>10}")
    base = rows[0][2] / rows[0][0]
    for n, s, m, fwd, bound, stock, nreq, acc in rows:
        bc.say(f"{n:>12d}{nreq:>10d}{s:>10.1f}{m:>11.1f}{m / n:>15.2f}{m / base:>8.2f}{fwd:>12d}{bound:>9d}"
               f"{fwd / bound:>10.2f}{stock:>15d}{acc:>10.3f}")
    first, last = rows[0], rows[-1]
    bc.say(f"model time per instruction: {first[2] / first[0]:.2f} s at {first[0]} -> {last[2] / last[0]:.2f} s at "
           f"{last[0]} instructions (linear scaling keeps this constant)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
