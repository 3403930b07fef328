"""The leaderboard suite's screening: where the four small models can be measured at all.

Each model runs each task of the suite with the stock prompt only (``--methods null``), at 0-shot and at
the Open LLM Leaderboard's n-shot, on rows drawn uniformly (``--harness-rows uniform --test-seed 0``, the
same rows for every model), one ``instructeval run`` per (model, task, n-shot) under ``/usr/bin/time``
with one thread. ``run`` is resumable: a finished run is skipped, an interrupted one resumes from its
saved chunks, and each attempt's CPU time is appended to ``<out>/cost.jsonl``.

``page`` writes ``docs/leaderboard_study/screening.md`` and ``data/screening.csv``: per (model, task,
n-shot) the score on the leaderboard's metric with its SE over rows, the chance rate and the one-sided
binomial p of the project's chance test (``instructeval_aggregation.chance``: the majority gold answer
of the same rows; MMLU's subjects pooled), the state (above chance at p < 0.01; a generation task at a
floor below 10%), the requests and the CPU; then the tasks where at least three of the four models are
above chance. A cell not yet run is listed as pending, and a task is chosen only on four finished cells.

Usage:
    python benchmarks/leaderboard_screening.py run --models-dir runs/models --data-dir ../shared/data --out runs/screening
    python benchmarks/leaderboard_screening.py page --out runs/screening
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from budget_validation import git_stamp, page_command  # noqa: E402

from instructeval_aggregation.chance import ABOVE_P, ABOVE, FLOOR, chance_of  # noqa: E402

STUDY = ROOT / "docs" / "leaderboard_study"
#: the folders under ``--models-dir`` (``instructeval prepare-model NAME --out DIR/LABEL``: SmolLM2-135M-Instruct,
#: Gemma 3 270M, Qwen2.5-Coder-0.5B-Instruct, Qwen2.5-Coder-1.5B-Instruct), smallest first (the order the runs go in)
MODELS = ("smollm2", "gemma3", "qwen", "qwen15")


@dataclass(frozen=True)
class Cell:
    """One task at one n-shot: the rows drawn (per subject for a group) and the metric read."""

    task: str
    shots: int
    rows: int
    metric: str

    @property
    def name(self) -> str:
        return f"{self.task}-{self.shots}shot"

    @property
    def ref(self) -> str:
        return f"{self.task}:{self.shots}" if self.shots else self.task


#: the suite, cheapest first: 0-shot, then the leaderboard's n-shot (Open LLM Leaderboard v1:
#: ARC-Challenge 25, HellaSwag 10, MMLU 5, Winogrande 5, GSM8K 5; TruthfulQA MC2 is 0-shot there);
#: rows: 200 on two-answer tasks, 100 on four-answer ones, fewer where a long prompt makes a row
#: costly (ARC-Challenge 25-shot: 30; HellaSwag 10-shot: 60; GSM8K generates: 30); MMLU per subject
SUITE = (
    Cell("arc_easy", 0, 100, "acc_norm"), Cell("arc_challenge", 0, 100, "acc_norm"), Cell("piqa", 0, 200, "acc_norm"),
    Cell("winogrande", 0, 200, "acc"), Cell("openbookqa", 0, 100, "acc_norm"), Cell("hellaswag", 0, 100, "acc_norm"),
    Cell("truthfulqa_mc2", 0, 100, "acc"), Cell("mmlu", 0, 4, "acc"),
    Cell("winogrande", 5, 100, "acc"), Cell("mmlu", 5, 2, "acc"), Cell("hellaswag", 10, 60, "acc_norm"),
    Cell("arc_challenge", 25, 30, "acc_norm"), Cell("gsm8k", 5, 30, "exact_match"),
)


def run_all(models_dir: Path, data_dir: Path, out: Path, only: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for label in MODELS:
        if only and label not in only:
            continue
        for cell in SUITE:
            if not _finished(_costs(out), label, cell):  # read again: each run appends to it
                _run_one(models_dir / label, label, cell, data_dir, out / cell.name, out)


def _run_one(model: Path, label: str, cell: Cell, data_dir: Path, folder: Path, out: Path) -> None:
    command = ["instructeval", "run", "--model", "instructeval-hf", "--model_args", f"pretrained={model},dtype=float32",
               "--device", "cpu", "--batch_size", "8", "--harness-tasks", cell.ref, "--methods", "null",
               "--test-sample", str(cell.rows), "--test-seed", "0", "--harness-rows", "uniform",
               "--data-dir", str(data_dir), "--output", str(folder), "--model-label", label]
    with tempfile.NamedTemporaryFile("r", suffix=".time") as timing:
        print(f"{label} {cell.name}: {' '.join(command)}", flush=True)
        start = time.time()
        done = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", timing.name, *command],
                              env={**os.environ, "OMP_NUM_THREADS": "1"}, check=False)
        fields = timing.read().split()[-3:]
    user, system, rss = (float(fields[0]), float(fields[1]), int(fields[2])) if len(fields) == 3 else (math.nan,) * 3
    record = {"model": label, "cell": cell.name, "rc": done.returncode, "user_s": user, "sys_s": system,
              "peak_rss_kb": rss, "wall_s": round(time.time() - start, 1)}
    with (out / "cost.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def _costs(out: Path) -> dict[tuple[str, str], list[dict]]:
    found: dict[tuple[str, str], list[dict]] = {}
    path = out / "cost.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        r = json.loads(line)
        found.setdefault((r["model"], r["cell"]), []).append(r)
    return found


def _finished(costs: dict[tuple[str, str], list[dict]], label: str, cell: Cell) -> bool:
    """Whether an attempt at the cell ran to its end (a group's run writes its subjects one by one)."""
    return any(a["rc"] == 0 for a in costs.get((label, cell.name), []))


def screen(cell: Cell, label: str, out: Path, costs: dict[tuple[str, str], list[dict]]) -> dict | None:
    """The cell's stock score, SE, chance test and requests; None where it has not finished."""
    from instructeval_aggregation.harness_effects import load_harness_results, stock_answers
    from instructeval_aggregation.issues import IssueLog
    from instructeval_aggregation.samples import read_sample_targets

    folder = out / cell.name / label
    if not _finished(costs, label, cell):
        return None
    results = [r for r in load_harness_results([str(folder)], IssueLog(), metric=cell.metric) if r.method == "null"]
    ys, gold, said, requests = [], [], [], 0
    for r in sorted(results, key=lambda r: r.task):
        name, _, filt = r.metric.partition(",")
        _, y, targets = read_sample_targets(r.samples_path, name, filter_name=filt or "none")
        ys.append(np.asarray(y, dtype=float))
        if r.output_type == "multiple_choice":
            g, s = stock_answers(r, ys[-1], dict(enumerate(targets)))
            gold += g
            said = said + s if said is not None and s is not None else None
        else:
            gold = None
        requests += _requests(Path(r.file), r.task)
    y = np.concatenate(ys)
    found = chance_of(y, gold, predicted=said)
    return {"model": label, "task": cell.task, "shots": cell.shots, "metric": results[0].metric, "subjects": len(results),
            "rows": len(y), "score": 100 * float(y.mean()), "se": 100 * float(y.std(ddof=1) / math.sqrt(len(y))),
            "chance": 100 * found.rate if not math.isnan(found.rate) else math.nan, "p": found.p_value,
            "state": found.state, "behaviour": found.behaviour(), "requests": requests}


def _requests(results_file: Path, task: str) -> int:
    record = json.loads(results_file.read_text(encoding="utf-8"))
    hf = (record.get("config") or {}).get("instructeval_hf") or {}
    return int(hf.get("prefix_requests", 0)) + int(hf.get("stock_requests", 0))


def write_page(out: Path, argv: list[str]) -> Path:
    costs = _costs(out)
    rows, pending = [], []
    for cell in SUITE:
        for label in MODELS:
            found = screen(cell, label, out, costs)
            if found is None:
                pending.append(f"{label} {cell.name}")
                continue
            attempts = costs.get((label, cell.name), [])
            found["cpu_s"] = sum(a["user_s"] + a["sys_s"] for a in attempts) if attempts else math.nan
            found["peak_rss_gb"] = max((a["peak_rss_kb"] for a in attempts), default=math.nan) / 1e6
            found["attempts"] = len(attempts)
            rows.append(found)
    STUDY.joinpath("data").mkdir(parents=True, exist_ok=True)
    columns = ["model", "task", "shots", "metric", "subjects", "rows", "score", "se", "chance", "p", "state", "behaviour",
               "requests", "cpu_s", "peak_rss_gb", "attempts"]
    with (STUDY / "data" / "screening.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()} for r in rows)
    path = STUDY / "screening.md"
    path.write_text("\n".join(_page_lines(rows, pending, argv)) + "\n", encoding="utf-8")
    return path


def _page_lines(rows: list[dict], pending: list[str], argv: list[str]) -> list[str]:
    lines = ["# Screening: where the four models can be measured on the leaderboard's tasks", "",
             "*Generated by `benchmarks/leaderboard_screening.py page`: edit the script or rerun it, not this page.*", "",
             f"Generated at commit `{git_stamp()}` on {datetime.date.today().isoformat()} by", "",
             "```bash", page_command(Path(__file__).name, argv), "```", "",
             *_chosen_lines(rows, pending), "",
             "Each model ran the stock task (`--methods null`) on rows drawn uniformly with seed 0, the same rows for "
             "every model; MMLU draws its rows per subject (all 57 pooled). **score**: the leaderboard's metric "
             "(acc_norm on ARC, HellaSwag, PIQA and OpenBookQA; acc elsewhere; GSM8K's strict exact match), ± its SE "
             "over rows. **chance**: always giving the most frequent gold answer of the same rows; **p**: the one-sided "
             f"exact binomial test of \"no better than chance\" (the report's own test); above chance at p < {ABOVE_P}; "
             f"a generation task has no chance rate and is at a floor below {100 * FLOOR:.0f}%. **CPU**: user + system "
             "seconds of the whole `instructeval run` (model load included), one thread; **requests**: the "
             "log-likelihood or generation requests the backend served.", "",
             "| model | task | shots | rows | score | SE | chance | p | state | requests | CPU s | CPU ms / request | peak RSS GB |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        chance = "" if math.isnan(r["chance"]) else f"{r['chance']:.1f}"
        p = "" if math.isnan(r["p"]) else (f"{r['p']:.1e}" if r["p"] < 1e-3 else f"{r['p']:.3f}")
        per = f"{1000 * r['cpu_s'] / r['requests']:.0f}" if r["requests"] and not math.isnan(r["cpu_s"]) else ""
        state = r["state"] + (f" ({r['behaviour']})" if r["behaviour"] and r["state"] != ABOVE else "")
        lines.append(f"| {r['model']} | {r['task']} | {r['shots']} | {r['rows']} | {r['score']:.1f} | {r['se']:.1f} | "
                     f"{chance} | {p} | {state} | {r['requests']} | {r['cpu_s']:.0f} | {per} | {r['peak_rss_gb']:.1f} |")
    total = sum(r["cpu_s"] for r in rows if not math.isnan(r["cpu_s"]))
    lines += ["", f"CPU in all: {total / 3600:.2f} CPU-hours over {len(rows)} finished cells."]
    if pending:
        lines += ["", f"Pending ({len(pending)}; `run` resumes them): " + ", ".join(pending) + "."]
    return lines


def _chosen_lines(rows: list[dict], pending: list[str]) -> list[str]:
    """The answer first: per (task, n-shot), how many of the four models are above chance."""
    lines = ["## Where at least three of the four models are above chance", "",
             "| task | shots | above chance | models above chance |", "|---|---:|---:|---|"]
    chosen = []
    for cell in SUITE:
        found = [r for r in rows if r["task"] == cell.task and r["shots"] == cell.shots]
        above = [r["model"] for r in found if r["state"] == ABOVE]
        count = f"{len(above)} of {len(found)}" + ("" if len(found) == len(MODELS) else f" ({len(MODELS) - len(found)} pending)")
        lines.append(f"| {cell.task} | {cell.shots} | {count} | {', '.join(above)} |")
        if len(found) == len(MODELS) and len(above) >= 3:
            chosen.append(f"{cell.task} ({cell.shots}-shot)")
    lines += ["", "Chosen for the robustness leaderboard: " + (", ".join(chosen) if chosen else "none yet") + "."]
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the pending (model, task, n-shot) cells")
    run.add_argument("--models-dir", type=Path, required=True, help="folder holding one prepared model per label")
    run.add_argument("--data-dir", type=Path, required=True)
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--only", default="", help="comma-separated model labels (default: all four)")
    page = sub.add_parser("page", help="write docs/leaderboard_study/screening.md")
    page.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "run":
        run_all(args.models_dir.resolve(), args.data_dir.resolve(), args.out.resolve(),
                [m for m in args.only.split(",") if m])
    else:
        print(f"wrote {write_page(args.out, argv)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
