"""Benchmark: a sweep chunk evaluated in one pooled harness call vs one call per variant.

The runner evaluates each variant of a chunk (task x instruction: zero-shot, few-shot, perturbed,
orderings) in its own ``simple_evaluate`` call, so that the progress bar advances per variant and
each variant's time is measured. The alternative is one call for the whole chunk (requests of all
its variants pooled). Both run here side by side on the same loaded model, alternating, and the
script prints the wall time of each, their ratio, and whether every variant's score is identical.

    python benchmarks/sweep_variant_calls.py --model-dir ../main/models/smollm2 --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import backend_common as bc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=str(bc.DEFAULT_MODEL))
    parser.add_argument("--data-dir", default=str(bc.DEFAULT_DATA))
    parser.add_argument("--model", default="instructeval-hf", help="harness backend (default instructeval-hf)")
    parser.add_argument("--tasks", default="agnews,nq_open")
    parser.add_argument("--test-sample", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    bc.add_runtime_options(parser)
    args = parser.parse_args()
    if not bc.ready(args):
        return 0

    import datasets
    import lm_eval
    from instructeval_banks import load_bank

    from instructeval_tasks import object_task_manager
    from instructeval_tasks.sweep import build_plan, get_profile
    from instructeval_tasks.sweep.chunk import evaluate_chunk, load_model, variant_config
    from instructeval_tasks.task import base_task_config
    from instructeval_tasks.task import InstructEvalTask

    datasets.disable_progress_bars()
    data_dir = str(Path(args.data_dir).resolve())
    profile = get_profile("quick").override(test_sample=args.test_sample)
    plan = build_plan(args.tasks.split(","), ["null"], profile, load_bank())
    model_args = {"pretrained": str(Path(args.model_dir).resolve()), "dtype": args.dtype}
    plan = [replace(v, metadata={**v.protocol_metadata(profile, bank_dir=None, data_dir=data_dir), **model_args})
            for v in plan]
    lm = load_model(args.model, model_args, batch_size=args.batch_size, max_batch_size=None, device="cpu")
    chunks: dict[str, list] = {}
    for variant in plan:
        chunks.setdefault(variant.chunk, []).append(variant)

    def pooled() -> dict[str, dict]:
        scores = {}
        for variants in chunks.values():
            tasks = [InstructEvalTask(config=variant_config(base_task_config(v.task), v, profile, v.metadata))
                     for v in variants]
            results = lm_eval.simple_evaluate(model=lm, tasks=tasks, log_samples=True, verbosity="ERROR",
                                              task_manager=object_task_manager())
            scores.update(results["results"])
        return scores

    def per_variant() -> dict[str, dict]:
        scores = {}
        for variants in chunks.values():
            results, _ = evaluate_chunk(lm, variants, profile, {}, log_samples=True)
            scores.update(results["results"])
        return scores

    times = {"pooled (one call per chunk)": [], "per variant (runner)": []}
    scores = {}
    for _ in range(args.repeats):
        for name, fn in (("pooled (one call per chunk)", pooled), ("per variant (runner)", per_variant)):
            start = time.perf_counter()
            scores[name] = fn()
            times[name].append(time.perf_counter() - start)
    keys = ("acc,none", "acc_per_token,none", "quasi_exact_match,none")
    a, b = scores.values()
    same = all({k: a[n].get(k) for k in keys} == {k: b[n].get(k) for k in keys} for n in a)
    print(f"{len(plan)} variants in {len(chunks)} chunks, {args.model}, test_sample={args.test_sample}, "
          f"batch_size={args.batch_size}, {args.dtype}, {args.threads} thread(s), best of {args.repeats}")
    for name, values in times.items():
        print(f"  {name:30s} {min(values):7.1f} s   (runs: {', '.join(f'{v:.1f}' for v in values)})")
    pooled_s, split_s = (min(v) for v in times.values())
    print(f"  per-variant / pooled time: {split_s / pooled_s:.2f}x; identical scores: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
