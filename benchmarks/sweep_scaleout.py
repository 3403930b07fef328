"""Benchmark: one sweep scaled out -- Ray workers and shards -- against one process, from one run.

Runs the same ``instructeval run`` command (the ``quick`` profile on two tasks by default) as
separate processes, each with one thread (``OMP_NUM_THREADS=1``; Ray gives each worker
``num_cpus=1``, hence one thread):

(a) one process, the local executor (the reference, one worker);
(b) ``--executor ray --workers 2``, starting its own local Ray instance (its start-up is part of the
    wall time; the time to start and stop Ray alone is printed too), and with ``--ray-one-worker``
    also ``--executor ray --workers 1`` (what Ray itself costs);
(c) ``--shard 0/2`` and ``--shard 1/2`` started at the same time on one ``--output``.

Prints each run's wall time and its ratio to (a), and whether every run wrote the same variants with
the same scores and the same files byte for byte but for times (the ``date`` of results files and
the time in samples file names). On a shared machine the timings are noisy: compare ratios from one
run. Needs the prepared model and the shared data; exits 0 with a "skip:" line when either is
missing, or when Ray is not installed (``pip install 'instructeval-harness[ray]'``).

    python benchmarks/sweep_scaleout.py --model-dir models/smollm2 --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import backend_common as bc

METRICS = ("acc,none", "acc_per_token,none", "quasi_exact_match,none")
_STAMP = re.compile(r"_\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d+\.jsonl$")
_DATE = re.compile(r'^  "date": [0-9.e+-]+,$', re.MULTILINE)


def sweep_args(args, out: Path) -> list[str]:
    cmd = [sys.executable, "-m", "instructeval_tasks.cli", "run", "--model", args.model,
           "--model_args", f"pretrained={args.model_dir},dtype={args.dtype}", "--tasks", args.tasks,
           "--methods", args.methods, "--profile", "quick", "--data-dir", str(args.data_dir),
           "--output", str(out), "--device", "cpu", "--batch_size", str(args.batch_size)]
    if args.test_sample:
        cmd += ["--test-sample", str(args.test_sample)]
    if args.instructions_per_method:
        cmd += ["--instructions-per-method", str(args.instructions_per_method)]
    if args.settings:
        cmd += ["--settings", args.settings]
    return cmd


def timed(commands: list[list[str]], logs: list[Path], env: dict[str, str]) -> float:
    """Start the commands at once; wall seconds until the last ends. Exits on a failed command."""
    start = time.perf_counter()
    sinks = [log.open("w") for log in logs]
    procs = [subprocess.Popen(cmd, cwd=bc.ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT)
             for cmd, sink in zip(commands, sinks)]
    codes = [proc.wait() for proc in procs]
    seconds = time.perf_counter() - start
    for sink in sinks:
        sink.close()
    for code, log in zip(codes, logs):
        if code != 0:
            sys.exit(f"failed ({code}): see {log}\n" + log.read_text()[-3000:])
    return seconds


def files(root: Path) -> dict[str, str]:
    """Every result file of a sweep folder, times taken out: {name: text}."""
    found = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue  # locks and claims
        name = _STAMP.sub(".jsonl", rel.as_posix())
        if name in found:
            found[name + " (duplicate)"] = ""
        found[name] = _DATE.sub("<date>", path.read_text(encoding="utf-8"))
    return found


def scores(root: Path) -> dict[str, dict]:
    out = {}
    for path in root.rglob("results_*.json"):
        data = json.loads(path.read_text())
        for name, result in data["results"].items():
            out[name] = {k: v for k, v in result.items() if k in METRICS}
    return out


def ray_start_seconds(env: dict[str, str]) -> float:
    code = "import ray; ray.init(num_cpus=2, include_dashboard=False); ray.shutdown()"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=str(bc.DEFAULT_MODEL))
    parser.add_argument("--data-dir", default=str(bc.DEFAULT_DATA))
    parser.add_argument("--model", default="instructeval-hf", help="harness backend (default instructeval-hf)")
    parser.add_argument("--dtype", default="float32", help=bc.DTYPE_HELP)
    parser.add_argument("--tasks", default="agnews,nq_open")
    parser.add_argument("--methods", default="null,generic")
    parser.add_argument("--test-sample", type=int, default=None, help="shrink the quick profile's 16 test items")
    parser.add_argument("--instructions-per-method", type=int, default=None,
                        help="shrink the quick profile's 2 instructions per method")
    parser.add_argument("--settings", default=None, help="shrink the quick profile's settings, e.g. zero_shot,few_shot")
    parser.add_argument("--ray-one-worker", action="store_true", help="also time --executor ray --workers 1")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--keep", default=None, help="keep the sweep folders under this directory")
    args = parser.parse_args()
    skip = bc.missing_inputs(args.model_dir, args.data_dir)
    if skip:
        print(skip)
        return 0
    try:
        import ray  # noqa: F401
    except ImportError:
        print("skip: Ray is not installed (pip install 'instructeval-harness[ray]')")
        return 0
    bc.offline()
    # Ray's memory monitor kills workers when the whole machine is nearly full: on a machine shared
    # with other jobs it would kill ours for theirs, and retried chunks would blur the timings.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "RAY_memory_monitor_refresh_ms": "0"}
    work = Path(args.keep or tempfile.mkdtemp(prefix="sweep_scaleout_"))
    work.mkdir(parents=True, exist_ok=True)

    runs: list[tuple[str, float, Path]] = []
    one = work / "one_process"
    runs.append(("1 process (local executor)", timed([sweep_args(args, one)], [work / "one.log"], env), one))
    for n in (1, 2) if args.ray_one_worker else (2,):
        out = work / f"ray_{n}"
        cmd = sweep_args(args, out) + ["--executor", "ray", "--workers", str(n)]
        runs.append((f"Ray, {n} worker{'s' if n > 1 else ''}", timed([cmd], [work / f"ray_{n}.log"], env), out))
    shards = work / "two_shards"
    cmds = [sweep_args(args, shards) + ["--shard", f"{i}/2"] for i in range(2)]
    runs.append(("2 shards at once (local)", timed(cmds, [work / f"shard_{i}.log" for i in range(2)], env), shards))
    ray_alone = ray_start_seconds(env)

    reference_files, reference_scores = files(one), scores(one)
    shrunk = [f"--test-sample {args.test_sample}"] * bool(args.test_sample) + \
             [f"--instructions-per-method {args.instructions_per_method}"] * bool(args.instructions_per_method) + \
             [f"--settings {args.settings}"] * bool(args.settings)
    print(f"sweep_scaleout: {Path(args.model_dir).name}, --model {args.model}, dtype={args.dtype}, tasks {args.tasks}, "
          f"methods {args.methods}, quick profile{' with ' + ' '.join(shrunk) if shrunk else ''}: "
          f"{len(reference_scores)} variants; one thread per process / Ray worker; {os.cpu_count()} CPUs "
          f"shared with other jobs, so timings are noisy")
    print(f"{'run':<28} {'wall s':>8} {'speed-up':>9} {'variants':>9}  {'scores = 1 process':>18}  {'files = 1 process':>18}")
    for name, seconds, out in runs:
        got = scores(out)
        same_scores = sum(got.get(k) == v for k, v in reference_scores.items())
        same_files = files(out) == reference_files
        print(f"{name:<28} {seconds:8.1f} {runs[0][1] / seconds:8.2f}x {len(got):9d}  "
              f"{f'{same_scores}/{len(reference_scores)}':>18}  {'identical' if same_files else 'DIFFER':>18}")
    print(f"(Ray wall times include starting a local Ray instance: {ray_alone:.1f} s to start and stop one alone; "
          f"files compared but for the results' 'date' and the samples files' time stamps)")
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
