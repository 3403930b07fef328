"""Benchmark: the targets of ``instructeval-hf`` -- peak memory, model time per distinct token, start-up.

Two workloads, each backend in its own subprocess (one CPU thread each, side by side in one run):

- ``issue``: AG News, the generic instruction (``method=generic``, ``instruction_index=0``, "Solve the
  following task:"), K=6, ``--items`` class-balanced test items (the runner's ``--test-sample``),
  demo seeds 0..``--seeds``-1, all variants in one ``simple_evaluate`` (one pooled request list);
- ``readme``: the README's first command (``instructeval_agnews``: no instruction, K=6, demo seed 0)
  over a ``--readme-items`` test sample.

Per run: wall time of ``simple_evaluate``, model time (inside the request methods), start-up
(interpreter, imports, model load, task building: before the first request), forward tokens
(``input_ids.numel()``, padding included) against the distinct-token bound (the token trie of the
stock backend's input rows), and peak resident memory (``VmHWM`` of the subprocess, which ran
nothing else). ``instructeval-hf`` runs with its default ``max_kv_memory`` and, on ``issue``, also
with ``max_kv_memory=none`` (the unbounded schedule: memory before the budget, and the speed the
budget costs). The stock ``hf`` backend takes minutes per demo seed on CPU, so it may run on fewer
seeds (``--hf-seeds``; printed); its scores are compared on the variants it ran.

Dense reference: the model's batched throughput on full-length causal rows (no tree mask, no KV
cache, logits of the last position only) of the lengths of the stock rows of ``issue`` (a sample of
``--dense-rows`` rows, sorted by length, in batches of ``--batch-size`` cut to the batch's shortest
row), in its own subprocess. Bound on model time = distinct tokens / dense throughput.

Targets (printed with MET / NOT MET): peak RSS of ``instructeval-hf`` <= 2.0 GB on ``issue``; the
budget costs <= 10% of model time (vs ``max_kv_memory=none``); model time <= 1.3x the dense bound;
forward tokens <= 1.3x the distinct-token bound; scores equal to ``hf`` (acc identical, max
|Δ log-likelihood| <= 1e-4 in float32).

    python benchmarks/backend_targets.py --model-dir models/smollm2 --data-dir ../shared/data

``--profile`` adds where the ``instructeval-hf`` model time goes (tokenisation, tree build, masks,
forward passes, log-softmax, the rest). Exits 0 with a "skip:" line when the model or the data is missing.
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
GB = 1e9


# ----------------------------------------------------------------------------------- workers


def _status(key: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    return 0


def _profile_hooks(prof: dict[str, float]) -> None:
    """Accumulate seconds per stage of the instructeval-hf hot loop into ``prof``."""
    from lm_eval.models.huggingface import HFLM

    from instructeval_tasks.backend import evaluator, loglikelihood, model

    def timed(owner, name, key):
        inner = getattr(owner, name)

        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                prof[key] = prof.get(key, 0.0) + time.perf_counter() - start
        setattr(owner, name, wrapper)

    timed(HFLM, "_encode_pair", "tokenisation")
    timed(loglikelihood.TreeLoglikelihood, "add_requests", "request planning")
    timed(loglikelihood, "PrefixTree", "tree build")
    timed(evaluator, "tree_mask", "mask building")
    timed(evaluator.TreeEvaluator, "_past", "past KV gather")
    timed(model.InstructEvalHFLM, "_ie_model_call", "forward passes")
    timed(evaluator.TreeEvaluator, "_forward", "_pass total")
    timed(evaluator.TreeEvaluator, "run", "_evaluator total")
    on_entries = loglikelihood.TreeLoglikelihood.score

    def score(self, make_evaluator, on_done=lambda n: None):
        def make(tree):
            ev = make_evaluator(tree)
            run = ev.run

            def run_timed(callback, *a, **k):
                def cb(*args):
                    start = time.perf_counter()
                    try:
                        return callback(*args)
                    finally:
                        prof["log-softmax + gather"] = prof.get("log-softmax + gather", 0.0) + time.perf_counter() - start
                return run(cb, *a, **k)
            ev.run = run_timed
            return ev
        return on_entries(self, make, on_done)
    loglikelihood.TreeLoglikelihood.score = score


def worker(args) -> dict:
    """One backend on one workload in this process; returns the measurements."""
    spawned = float(os.environ["BACKEND_TARGETS_SPAWNED"])
    import backend_common as bc

    bc.offline()
    bc.set_threads(1)
    import lm_eval

    counts = bc.install_counters()
    prof: dict[str, float] = {}
    if args.profile and args.backend == "instructeval-hf":
        _profile_hooks(prof)
    imported = time.time()
    lm = bc.load_lm(args.backend, args.model_dir, args.batch_size, args.dtype, extra=args.extra)
    loaded = time.time()
    requests = bc.capture_requests(lm)
    tasks = bc.task_objects("agnews", json.loads(args.variants), data_dir=args.data_dir, model_dir=args.model_dir,
                            items=args.items)
    built = time.time()
    dense_rows = None
    if args.dense:  # the rows are known only once the harness built the requests: a dry pass over the tasks
        dense_rows = _stock_rows(lm, args)
        dense_before = dense_throughput(lm.model, dense_rows, args)
    bc.reset()
    start = time.perf_counter()
    results = lm_eval.simple_evaluate(model=lm, tasks=tasks, log_samples=True, verbosity="ERROR",
                                      task_manager=bc.task_manager())
    wall = time.perf_counter() - start
    peak_rss = _status("VmHWM")  # before the dense reference runs in this process
    out = {
        "backend": args.backend, "extra": args.extra, "wall": wall, "model": counts["lm_seconds"],
        "startup": built - spawned, "imports": imported - spawned, "model_load": loaded - imported,
        "task_build": built - loaded, "forward_calls": counts["forward_calls"], "forward_tokens": counts["forward_tokens"],
        "requests": len(requests), "stats": dict(getattr(lm, "prefix_stats", {}) or {}), "profile": prof,
        "scores": bc.scores(results), "lls": _lls(results), "peak_rss": peak_rss,
    }
    if args.dense:
        after = dense_throughput(lm.model, dense_rows, args)
        tokens = dense_before["tokens"] + after["tokens"]
        seconds = dense_before["seconds"] + after["seconds"]
        out["dense"] = {"rows": after["rows"], "tokens": tokens, "seconds": seconds, "per_s": tokens / seconds,
                        "before_per_s": dense_before["per_s"], "after_per_s": after["per_s"]}
    return out


def _stock_rows(lm, args) -> list[tuple[int, ...]]:
    """The stock backend's input rows of this workload's requests (built by the harness, not run)."""
    import backend_common as bc

    rows: list[tuple[int, ...]] = []
    tasks = bc.task_objects("agnews", json.loads(args.variants), data_dir=args.data_dir, model_dir=args.model_dir,
                            items=args.items)
    for task in tasks:
        task.build_all_requests(rank=0, world_size=1)
        rows += bc.model_rows(lm, [inst for inst in task.instances])
    return sorted(set(rows))


def _lls(results: dict) -> dict[str, dict[str, float]]:
    """Log-likelihood of every (doc, choice) request per task, keyed by the doc and the choice index."""
    return {task: {json.dumps(s["doc"], sort_keys=True, default=str) + f"#{i}": float(r[0][0])
                   for s in samples for i, r in enumerate(s["resps"])}
            for task, samples in results["samples"].items()}


def dense_throughput(model, rows: list[tuple[int, ...]], args) -> dict:
    """The model's dense batched throughput on full-length causal rows of the stock rows' lengths."""
    import torch

    rows = sorted(rows, key=len)
    step = max(1, len(rows) // args.dense_rows)
    sample = rows[::step][: args.dense_rows]
    batches = [sample[i : i + args.batch_size] for i in range(0, len(sample), args.batch_size)]
    tokens, seconds = 0, 0.0
    with torch.no_grad():
        for n, batch in enumerate([batches[0], *batches]):  # the first batch twice: a warm-up
            width = min(len(r) for r in batch)
            ids = torch.tensor([r[:width] for r in batch], dtype=torch.long)
            start = time.perf_counter()
            model(input_ids=ids, use_cache=False, logits_to_keep=1)
            if n:
                seconds += time.perf_counter() - start
                tokens += ids.numel()
    return {"tokens": tokens, "seconds": seconds, "rows": len(sample), "per_s": tokens / seconds}


# ----------------------------------------------------------------------------------- the run


def run_all(args, jobs: list[dict]) -> list[dict]:
    """Run each job's ``worker`` in a fresh interpreter (all at once with ``--parallel``); their JSON."""
    results = []
    if args.parallel:
        started = [start(args, **job) for job in jobs]
        return [finish(*one) for one in started]
    for job in jobs:
        results.append(finish(*start(args, **job)))
    return results


def start(args, backend: str, workload: str, seeds: int, items: int, extra: str = "", dense: bool = False):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = handle.name
    kw = dict(backend=backend, variants=json.dumps(variants_of(workload, seeds)), items=items, extra=extra, dense=dense,
              profile=args.profile and backend == "instructeval-hf" and not extra)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--out", out, "--model-dir", args.model_dir,
           "--data-dir", args.data_dir, "--batch-size", str(args.batch_size), "--dtype", args.dtype,
           "--dense-rows", str(args.dense_rows)]
    for key, value in kw.items():
        if value is True:
            cmd.append(f"--{key.replace('_', '-')}")
        elif value not in (None, False):
            cmd += [f"--{key.replace('_', '-')}", str(value)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "BACKEND_TARGETS_SPAWNED": repr(time.time())}
    err = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(cmd, env=env, cwd=str(HERE), stdout=subprocess.DEVNULL, stderr=err, text=True)
    return proc, err, out, cmd


def finish(proc, err, out: str, cmd: list[str]) -> dict:
    if proc.wait():
        err.seek(0)
        raise SystemExit(f"worker failed ({' '.join(cmd)}):\n{err.read()[-4000:]}")
    try:
        return json.loads(Path(out).read_text())
    finally:
        os.unlink(out)


def variants_of(workload: str, seeds: int) -> list[dict]:
    if workload == "issue":
        return [{"name": f"agnews_generic0_d{s}", "num_fewshot": 6, "method": "generic", "instruction_index": 0,
                 "demo_seed": s} for s in range(seeds)]
    return [{"name": "instructeval_agnews", "num_fewshot": 6, "demo_seed": 0}]


def compare(new: dict, old: dict) -> tuple[bool | None, float, int]:
    """(acc/acc_per_token identical on the tasks both ran in full -- None when ``old`` ran a subset of
    the items --, max |Δ log-likelihood| over the requests both ran, how many those are)."""
    same: bool | None = True
    worst, n = 0.0, 0
    for task, lls in old["lls"].items():
        mine = new["lls"][task]
        if set(lls) == set(mine):
            same = same and new["scores"][task] == old["scores"][task]
        else:
            same = None if same else same
        for key in set(lls) & set(mine):
            worst, n = max(worst, abs(mine[key] - lls[key])), n + 1
    if n == 0:
        raise SystemExit("no request in common between the runs compared")
    return same, worst, n


def say(line: str = "") -> None:
    print(line, flush=True)


def mark(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=str(HERE.parent / "models" / "smollm2"))
    parser.add_argument("--data-dir", default=str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--hf-seeds", type=int, default=1, help="demo seeds the stock hf backend runs on (default 1)")
    parser.add_argument("--hf-items", type=int, default=None, help="test items the stock hf backend runs on for the "
                        "issue work (default --items; a smaller sample is compared on the docs both ran)")
    parser.add_argument("--readme-items", type=int, default=100)
    parser.add_argument("--readme-hf-items", type=int, default=100, help="test items the stock hf backend runs on for "
                        "the README command (default 100; its first N docs are compared)")
    parser.add_argument("--parallel", action="store_true", help="start all runs at once (each still one thread)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--dense-rows", type=int, default=64)
    parser.add_argument("--skip-unbounded", action="store_true", help="skip the max_kv_memory=none run")
    parser.add_argument("--skip-readme", action="store_true")
    parser.add_argument("--profile", action="store_true")
    # worker mode
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--dense", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    parser.add_argument("--extra", default="", help=argparse.SUPPRESS)
    parser.add_argument("--variants", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    if args.worker:
        result = worker(args)
        Path(args.out).write_text(json.dumps(result))
        return 0
    import backend_common as bc

    args.model_dir, args.data_dir = str(Path(args.model_dir).resolve()), str(Path(args.data_dir).resolve())
    skip = bc.missing_inputs(args.model_dir, args.data_dir)
    if skip:
        print(skip)
        return 0

    say(f"instructeval-hf targets: SmolLM2-135M-Instruct ({args.model_dir}), {args.dtype}, batch_size={args.batch_size}, "
        f"one CPU thread per run, each run in its own subprocess")
    runs = {"issue": {}, "readme": {}}
    jobs = [("issue", "new", dict(backend="instructeval-hf", workload="issue", seeds=args.seeds, items=args.items, dense=True))]
    if not args.skip_unbounded:
        jobs.append(("issue", "free", dict(backend="instructeval-hf", workload="issue", seeds=args.seeds, items=args.items,
                                           extra="max_kv_memory=none")))
    jobs.append(("issue", "hf", dict(backend="hf", workload="issue", seeds=args.hf_seeds, items=args.hf_items or args.items)))
    if not args.skip_readme:
        jobs.append(("readme", "new", dict(backend="instructeval-hf", workload="readme", seeds=1, items=args.readme_items)))
        jobs.append(("readme", "hf", dict(backend="hf", workload="readme", seeds=1, items=args.readme_hf_items)))
    say(f"{len(jobs)} runs, " + ("all at once (side by side under the same machine load)" if args.parallel
                                 else "one after another"))
    for (workload, key, _), result in zip(jobs, run_all(args, [job for *_, job in jobs])):
        runs[workload][key] = result
    dense = runs["issue"]["new"]["dense"]

    say(f"dense reference: {dense['rows']} stock rows of the issue work in batches of {args.batch_size}, "
        f"{dense['tokens']} tokens in {dense['seconds']:.1f} s = {dense['per_s']:.0f} tokens/s")
    hf_items = args.hf_items or args.items
    seeds_note = f"{args.hf_seeds}/{args.seeds} seeds" + (f", {hf_items} items" if hf_items != args.items else "")
    verdicts = []
    for workload, title in (("issue", f"issue work: AG News, generic instruction 0, K=6, {args.items} items x "
                                      f"{args.seeds} demo seeds"),
                            ("readme", f"README first command: instructeval_agnews (no instruction), K=6, demo seed 0, "
                                       f"{args.readme_items} items")):
        got = runs[workload]
        if not got:
            continue
        say()
        say(title)
        cols = [("instructeval-hf", got["new"])]
        if "free" in got:
            cols.append(("ie-hf kv=none", got["free"]))
        hf_label = "hf"
        if workload == "issue" and (args.hf_seeds < args.seeds or hf_items != args.items):
            hf_label = f"hf ({seeds_note})"
        elif workload == "readme" and args.readme_hf_items != args.readme_items:
            hf_label = f"hf ({args.readme_hf_items} items)"
        cols.append((hf_label, got["hf"]))
        say(f"{'':34}" + "".join(f"{c:>26}" for c, _ in cols))
        lines = [("requests", "requests", "{:>26d}"), ("wall time, simple_evaluate (s)", "wall", "{:>26.1f}"),
                 ("model time, request methods (s)", "model", "{:>26.1f}"), ("start-up (s)", "startup", "{:>26.1f}"),
                 ("  imports", "imports", "{:>26.1f}"), ("  model load", "model_load", "{:>26.1f}"),
                 ("  task building", "task_build", "{:>26.1f}"), ("forward passes", "forward_calls", "{:>26d}"),
                 ("forward tokens (padded)", "forward_tokens", "{:>26d}")]
        for label, key, fmt in lines:
            say(f"{label:34}" + "".join(fmt.format(r[key]) for _, r in cols))
        say(f"{'peak resident memory (GB)':34}" + "".join(f"{r['peak_rss'] / GB:>26.2f}" for _, r in cols))
        say(f"{'peak KV in use (GB, accounted)':34}" + "".join(
            f"{r['stats'].get('peak_kv_bytes', 0) / GB:>26.2f}" if r["stats"] else f"{'-':>26}" for _, r in cols))
        stats = got["new"]["stats"]
        distinct = stats["distinct_tokens"]
        say(f"distinct-token bound: {distinct} tokens; forward tokens / bound: instructeval-hf "
            f"{got['new']['forward_tokens'] / distinct:.2f}")
        bound_s = distinct / dense["per_s"]
        model_ratio = got["new"]["model"] / bound_s
        say(f"dense bound on model time: {distinct} / {dense['per_s']:.0f} tokens/s = {bound_s:.1f} s; "
            f"instructeval-hf model time / bound = {model_ratio:.2f}")
        if got["hf"]["requests"]:
            hf_per_req = got["hf"]["model"] / got["hf"]["requests"]
            new_per_req = got["new"]["model"] / got["new"]["requests"]
            say(f"model time per request: instructeval-hf {new_per_req * 1000:.1f} ms, hf {hf_per_req * 1000:.1f} ms "
                f"({hf_per_req / new_per_req:.1f}x)")
        same, worst, n = compare(got["new"], got["hf"])
        say(f"scores vs hf on the {len(got['hf']['lls'])} variant(s) hf ran: acc/acc_per_token identical: "
            f"{'n/a (hf ran a subset of the items)' if same is None else same}; "
            f"max |Δ log-likelihood| over the {n} requests both ran: {worst:.2e}")
        if "free" in got:
            same_free, worst_free, _ = compare(got["new"], got["free"])
            say(f"instructeval-hf default vs max_kv_memory=none: identical scores {same_free}, max |Δ| {worst_free:.2e}")
        rss = got["new"]["peak_rss"] / GB
        verdicts.append((f"{workload}: peak RSS of instructeval-hf <= 2.0 GB", f"{rss:.2f} GB", rss <= 2.0))
        verdicts.append((f"{workload}: scores equal to hf (max |Δ| <= 1e-4{', acc identical' if same is not None else ''})",
                         f"{worst:.1e}", same is not False and worst <= 1e-4))
        verdicts.append((f"{workload}: model time <= 1.3x dense bound", f"{model_ratio:.2f}x", model_ratio <= 1.3))
        fwd = got["new"]["forward_tokens"] / distinct
        verdicts.append((f"{workload}: forward tokens <= 1.3x distinct tokens", f"{fwd:.2f}x", fwd <= 1.3))
        if "free" in got:
            lost = got["new"]["model"] / got["free"]["model"] - 1
            verdicts.append((f"{workload}: max_kv_memory costs <= 10% model time", f"{lost * 100:+.1f}%", lost <= 0.10))
        prof = got["new"].get("profile") or {}
        if prof:
            say("where instructeval-hf's model time goes (s):")
            evaluator_s, pass_s = prof.get("_evaluator total", 0.0), prof.get("_pass total", 0.0)
            parts = [(k, prof.get(k, 0.0)) for k in ("tokenisation", "request planning", "tree build")]
            inner = [(k, prof.get(k, 0.0)) for k in ("mask building", "past KV gather", "forward passes", "log-softmax + gather")]
            parts += inner
            parts.append(("pass bookkeeping", pass_s - sum(v for _, v in inner)))
            parts.append(("scheduling", evaluator_s - pass_s))
            parts.append(("rest (harness loop, sums)", got["new"]["model"] - sum(v for _, v in parts)))
            for key, value in parts:
                say(f"  {key:28}{value:>8.1f}")
    say()
    say("targets:")
    for label, value, ok in verdicts:
        say(f"  {label:58}{value:>10}  {mark(ok)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
