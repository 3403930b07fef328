"""Check: ``instructeval aggregate`` on existing results folders, by the code of another checkout or
commit, must write the same report as this checkout's, byte for byte, times and paths aside.

Each ``NAME=FOLDER`` is aggregated (``--bootstrap 200 --seed identity``) into ``--out/NAME`` with its
stdout and stderr in ``--out/NAME.stdout|.stderr``. ``--code DIR`` runs the aggregation of the checkout
in ``DIR`` (``python -m aggregation`` from its root, so that its ``aggregation`` and
``instructeval_tasks`` are read, not the installed ones); without it, this checkout's.
``--compare A B`` compares two such trees as ``sweep_identity.py`` does (``normalise``).

    git worktree add /tmp/before <commit>
    python benchmarks/report_identity.py --code /tmp/before --out /tmp/report_a nine=runs/nine harness=runs/hs ...
    python benchmarks/report_identity.py --out /tmp/report_b nine=runs/nine harness=runs/hs ...
    python benchmarks/report_identity.py --compare /tmp/report_a /tmp/report_b
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from sweep_identity import compare  # noqa: E402


def run(code: Path, out: Path, inputs: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for spec in inputs:
        name, _, folder = spec.partition("=")
        target = out / name
        shutil.rmtree(target, ignore_errors=True)
        command = [sys.executable, "-m", "aggregation", str(Path(folder).resolve()), "--out", str(target.resolve()),
                   "--bootstrap", "200", "--seed", "identity"]
        env = {**os.environ, "PYTHONPATH": str(code), "OMP_NUM_THREADS": "1"}
        done = subprocess.run(command, cwd=code, env=env, capture_output=True, text=True, check=False)
        (out / f"{name}.stdout").write_text(done.stdout.replace(str(target.resolve()), f"<out>/{name}"), encoding="utf-8")
        (out / f"{name}.stderr").write_text(done.stderr, encoding="utf-8")
        print(f"{name}: exit {done.returncode}")
        failed += done.returncode not in (0, 3)
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="*", metavar="NAME=FOLDER", help="results folders to aggregate")
    parser.add_argument("--out", type=Path, help="where the reports go")
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout whose aggregation runs (default: this one)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"), help="compare two output trees")
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if not args.out or not args.inputs:
        parser.error("give --out and NAME=FOLDER inputs, or --compare A B")
    return run(args.code.resolve(), args.out, args.inputs)


if __name__ == "__main__":
    raise SystemExit(main())
