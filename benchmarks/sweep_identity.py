"""Check: one quick sweep of every kind, then ``instructeval aggregate``, written to a folder that a later
run of the same script (on other code) must reproduce byte for byte, times and paths aside.

The sweep runs on the tiny offline model and the tiny data of ``tests/conftest.py`` (no network):

* ``mixed``: two of the nine tasks (agnews, boolq; zero- and few-shot), a harness task
  (``--harness-tasks hellaswag:1``) and a stock run (``--leaderboard-tasks boolq``), then the same
  command again (the resume lines) and a dry run;
* ``budget``: ``--budget 0.5 --budget-design adaptive`` over agnews and hellaswag (native and harness
  rounds), then ``--budget-extend 0.75`` into the same folder;
* ``shards``: ``--shard 0/2`` then ``--shard 1/2`` into one folder, adaptive too (the other shards'
  cells and the rounds);
* ``aggregate/<run>``: ``instructeval aggregate`` over each run's folder.

Every command's output (stdout and stderr, progress bars left out) is saved beside the results as
``logs/<step>.txt``. The commands run in one fixed folder (``WORK``), copied to ``--out`` at the end, so
that the paths inside fingerprints are the same in every run.

    python benchmarks/sweep_identity.py --out /tmp/sweep_a
    python benchmarks/sweep_identity.py --compare /tmp/sweep_a /tmp/sweep_b

``--compare`` compares two such trees file by file after normalising what legitimately differs between
two runs of the same code (``normalise``): the times in file names (``samples_<v>_<time>.jsonl``), the
dates, times and durations inside files (lm-eval's ``date``, ``start_time``, ``end_time``,
``total_evaluation_time_seconds``; a progress line's seconds; the report's generation time), the
absolute path of the tree, of the repository and of the Python environment, process ids and memory
addresses, and the checkout's own folder (in the banks' and task specs' paths). Exit status 0: identical; 1: the differing files are listed.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

ENV = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
       "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0", "COLUMNS": "120"}


def _instructeval() -> list[str]:
    exe = Path(sys.executable).with_name("instructeval")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "instructeval_tasks.cli"]


def _steps(out: Path) -> list[tuple[str, list[str]]]:
    model, data, runs = out / "tiny", out / "data", out / "runs"
    common = ["--model", "hf", "--model_args", f"pretrained={model},dtype=float32", "--device", "cpu",
              "--data-dir", str(data), "--methods", "null,generic", "--batch_size", "8"]
    mixed = [*common, "--tasks", "agnews,boolq", "--harness-tasks", "hellaswag:1", "--leaderboard-tasks", "boolq",
             "--settings", "zero_shot,few_shot", "--num-fewshot", "1", "--selections", "1",
             "--instructions-per-method", "2", "--test-sample", "4", "--output", str(runs / "mixed")]
    budget = [*common, "--tasks", "agnews", "--harness-tasks", "hellaswag:1", "--settings", "zero_shot",
              "--instructions-per-method", "3", "--test-sample", "6", "--budget", "0.5", "--budget-design", "adaptive",
              "--budget-min-items", "1", "--budget-seed", "3", "--output", str(runs / "budget")]
    shards = [*common, "--tasks", "agnews,boolq", "--harness-tasks", "hellaswag:1", "--settings", "zero_shot",
              "--instructions-per-method", "3", "--test-sample", "6", "--budget", "0.5", "--budget-design", "adaptive",
              "--budget-min-items", "1", "--output", str(runs / "shards")]
    steps = [
        ("mixed", ["run", *mixed]),
        ("mixed_again", ["run", *mixed]),
        ("mixed_dry_run", ["run", *mixed, "--dry-run"]),
        ("budget", ["run", *budget]),
        ("budget_extend", ["run", *budget, "--budget-extend", "0.75"]),
        ("shard_0", ["run", *shards, "--shard", "0/2"]),
        ("shard_1", ["run", *shards, "--shard", "1/2"]),
    ]
    for name in ("mixed", "budget", "shards"):
        steps.append((f"aggregate_{name}", ["aggregate", str(runs / name), "--out", str(out / "aggregate" / name),
                                            "--bootstrap", "50", "--estimate-draws", "20", "--no-plots"]))
    return steps


# a frame of a progress bar (tqdm's: the sweep's, lm-eval's, datasets' and transformers'):
# "desc:  40%|####      | 2/5 [00:01<00:02, 1.2 it/s]"
_BAR = re.compile(r"\|\s*\d+/\d+ \[|^\s*sweep:.*\||^\s*\d+%\|")


def _log_text(raw: str) -> str:
    """The command's lines without the progress bar's frames (each frame ends in a carriage return)."""
    kept = []
    for line in raw.replace("\r\n", "\n").split("\n"):
        frames = [f for f in line.split("\r") if f.strip() and not _BAR.search(f)]
        if frames:
            kept.append(frames[-1])
    return "\n".join(kept) + "\n"


# Every run works in this one folder, then copies it to --out: the data's and the model's paths are
# then the same in every run, and so are the fingerprints that cover them (a harness task's data
# identity names its files), which no normalisation could equate.
WORK = Path(tempfile.gettempdir()) / "instructeval-sweep-identity"


def run(out: Path) -> int:
    sys.path.insert(0, str(ROOT / "tests"))
    os.environ.update(ENV)
    from conftest import build_tiny_model, write_tiny_data  # tests/conftest.py: the tiny model and data

    for folder in (WORK, out):
        if folder.exists():
            shutil.rmtree(folder)
    WORK.mkdir(parents=True)
    build_tiny_model(WORK / "tiny")
    write_tiny_data(WORK / "data")
    (WORK / "logs").mkdir()
    env = {**os.environ, **ENV}
    status = 0
    for name, args in _steps(WORK):
        done = subprocess.run(_instructeval() + args, cwd=WORK, env=env, capture_output=True, text=True, timeout=1800)
        (WORK / "logs" / f"{name}.txt").write_text(f"exit {done.returncode}\n" + _log_text(done.stdout + done.stderr))
        print(f"{name}: exit {done.returncode}", file=sys.stderr)
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            status = 1
            break
    shutil.copytree(WORK, out, symlinks=True)
    return status


# ------------------------------------------------------------------------------------------ compare

_STAMP = r"\d{4}-\d\d-\d\dT\d\d[-:]\d\d[-:]\d\d(?:\.\d+)?"
_RULES = [
    # a checkout's files (the banks, the task specs), wherever the checkout lies
    (re.compile(r"(?:/[^/\s\"'<>]+)+/(instruction_banks|instructeval_tasks|instructeval_aggregation|aggregation)/"), r"<REPO>/\1/"),
    (re.compile(_STAMP), "<time>"),  # file names' and records' times
    (re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:[+-]\d\d:?\d\d|Z| UTC)?"), "<time>"),
    (re.compile(r'("(?:date|start_time|end_time|total_evaluation_time_seconds|seconds|elapsed|wall_s)": )"?[0-9.e+-]+"?'),
     r"\1<n>"),
    (re.compile(r"\(\d+(?:\.\d+)? s\)"), "(<n> s)"),  # a variant's progress line
    (re.compile(r"\bin \d+(?:\.\d+)? s\b"), "in <n> s"),  # "N variants evaluated in S s"
    (re.compile(r"\b\d+(?:\.\d+)? ?s(?:econds)? elapsed"), "<n> s elapsed"),
    (re.compile(r"\bpid \d+|\"pid\": \d+"), "pid <n>"),
    (re.compile(r"0x[0-9a-f]{6,}"), "0x<addr>"),
]


def normalise(text: str, roots: dict[str, str]) -> str:
    """``text`` with the tree's, the repository's and the environment's paths and the times replaced."""
    for path, name in sorted(roots.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(path, name)
    for pattern, repl in _RULES:
        text = pattern.sub(repl, text)
    return text


def _files(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root)
        if rel.parts[0] in ("tiny", "data") or any(part.startswith(".") for part in rel.parts):
            continue  # the inputs (rebuilt each run), the folders' locks and claims
        name = re.sub(_STAMP, "<time>", rel.as_posix())
        if name in found:
            raise SystemExit(f"{root}: two files normalise to {name}")
        found[name] = path
    return found


def _roots(tree: Path) -> dict[str, str]:
    return {str(WORK): "<TREE>", str(tree.resolve()): "<TREE>", str(tree): "<TREE>", str(ROOT): "<REPO>",
            sys.prefix: "<ENV>"}


def compare(a: Path, b: Path) -> int:
    fa, fb = _files(a), _files(b)
    bad = [f"only in {a}: {n}" for n in sorted(set(fa) - set(fb))] + [f"only in {b}: {n}" for n in sorted(set(fb) - set(fa))]
    for name in sorted(set(fa) & set(fb)):
        x, y = fa[name].read_bytes(), fb[name].read_bytes()
        if name.startswith("logs/"):  # progress bars are drawn at the terminal's pace
            x, y = _log_text(x.decode()).encode(), _log_text(y.decode()).encode()
        try:
            x, y = (normalise(x.decode("utf-8"), _roots(a)).encode(), normalise(y.decode("utf-8"), _roots(b)).encode())
        except UnicodeDecodeError:
            pass  # binary: compared as is
        if x != y:
            bad.append(f"differs: {name}")
            if sum(line.startswith("differs") for line in bad) <= 5 and not name.endswith((".png", ".pdf")):
                diff = difflib.unified_diff(x.decode(errors="replace").splitlines(), y.decode(errors="replace").splitlines(),
                                            lineterm="", n=0)
                bad.extend("    " + line[:300] for line in list(diff)[2:12])
    print(f"{len(set(fa) & set(fb))} files compared ({len(fa)} in {a}, {len(fb)} in {b})")
    for line in bad:
        print(line)
    print("identical after normalisation" if not bad else "DIFFERENT")
    return 0 if not bad else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="run the sweeps and the aggregation into this folder (replaced)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"), help="compare two output trees")
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("give --out DIR or --compare A B")
    return run(args.out)


if __name__ == "__main__":
    sys.exit(main())
