"""The Natural Instructions study's generated page: ``docs/ni_study/results.md`` from an aggregate folder.

Reads an ``instructeval aggregate`` folder of ``instructeval run --tasks ni`` results (its
``data/verdicts.csv``, ``ni_categories.csv``, ``ni_effects.csv`` and ``ni_sensitivity_cards.csv``), writes
the page -- the verdicts, ROUGE-L per category under the benchmark's standard encoding, the schema
parts' per-category effects with their intervals, and, per model, which categories sit at a floor --
stamped with the commit, and copies the folder's Natural Instructions CSVs and tables beside it. The
main parts' effects come first with the models side by side; every part's, with its power, follow.

A category is **at a floor** when its ROUGE-L under the standard encoding is below ``FLOOR`` points,
and **at chance** when it is answered from a label set (at most ``LABEL_SET`` distinct answers among
its 100 instances) and its exact match under the standard encoding is not above the rate of always
giving the most frequent of them (normalised as the benchmark normalises
answers; a one-sided exact binomial test, above chance at p < ``ABOVE_P``). The effects of a category
at a floor or at chance are not read as evidence about the instruction's parts (they move which
constant answer the model gives, or nothing).

Usage:
    python benchmarks/ni_study.py --report ni_report --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import datetime
import functools
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from budget_validation import git_stamp, page_command  # noqa: E402
from harness_study import _interval, _num, _read, binomial_tail  # noqa: E402

from instructeval_aggregation.chance import ABOVE_P, LABEL_SET  # noqa: E402  (the report's own test)

STUDY = ROOT / "docs" / "ni_study"
FLOOR = 10.0  # ROUGE-L points under the standard encoding below which a category is at a floor
STANDARD = "definition_pos2"




@functools.lru_cache(maxsize=None)  # one read of each task file, whichever models scored it
def majority_rate(task: str, data_dir: Path) -> float | None:
    """The exact match of always answering the most frequent (normalised) reference of ``task``'s evaluated
    instances; None where the instances have more than ``LABEL_SET`` distinct answers (open generation,
    where always giving one answer is no baseline)."""
    from instructeval_aggregation.chance import majority
    from instructeval_tasks.ni.normalize import normalize_answer
    from instructeval_tasks.ni.source import read_task_file

    instances = read_task_file(task.removeprefix("ni_"), str(data_dir)).instances[:100]
    found = majority([{normalize_answer(o) for o in inst["outputs"]} for inst in instances])  # the report's rule
    return None if found is None else found[1] / len(instances)


def at_chance(scores: list[dict], data_dir: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """(model, category) -> (exact match, majority rate) of the tasks whose standard encoding is not above chance."""
    out = {}
    for row in scores:
        if row["instruction"] != STANDARD:
            continue
        n, em = int(row["n"]), float(row["exact_match"])
        rate = majority_rate(row["task"], data_dir)
        if rate is not None and binomial_tail(round(em * n), n, rate) >= ABOVE_P:
            out[(row["model"], row["category"])] = (em, rate)
    return out


SIDE_BY_SIDE = ("2 positive examples", "definition", "2 negative examples", "standard header (vs no instruction)")


def side_by_side(effects: list[dict], models: list[str], mark: dict) -> list[str]:
    """Per part of ``SIDE_BY_SIDE``, one table: category x model, the effect with its interval (a category
    at a floor or at chance for that model marked)."""
    lines: list[str] = []
    for part in SIDE_BY_SIDE:
        rows = {(e["category"], e["model"]): e for e in effects if e["part"] == part}
        if not rows:
            continue
        contrast = next(iter(rows.values()))["contrast"]
        lines += [f"## {part[0].upper() + part[1:]}: `{contrast}`, per category and model (ROUGE-L points)", "",
                  "| category | " + " | ".join(models) + " |", "|---|" + "---:|" * len(models)]
        for category in sorted({c for c, _ in rows}):
            cells = []
            for m in models:
                e = rows.get((category, m))
                cells.append("" if e is None else _interval(e, "diff") + mark.get((m, category), ""))
            lines.append(f"| {category} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def write_results(report: Path, argv: list[str], data_dir: Path) -> Path:
    stamp = git_stamp()  # before this script writes into the tree, or the page reads its own output as a change
    data = report / "data"
    (STUDY / "data").mkdir(parents=True, exist_ok=True)
    for name in ("verdicts", "ni_scores", "ni_categories", "ni_effects", "ni_sensitivity_cards"):
        if (data / f"{name}.csv").exists():
            shutil.copyfile(data / f"{name}.csv", STUDY / "data" / f"{name}.csv")
    shutil.copyfile(report / "tables" / "natural_instructions.md", STUDY / "natural_instructions.md")
    verdicts = [v for v in _read(data / "verdicts.csv") if "[ROUGE-L" in v["line"]]
    categories = [c for c in _read(data / "ni_categories.csv") if c["instruction"] == STANDARD]
    effects = [e for e in _read(data / "ni_effects.csv") if e["scope"] == "category" and e["metric"] == "rougeL"]
    models = sorted({c["model"] for c in categories})
    chance = at_chance(_read(data / "ni_scores.csv"), data_dir)
    floor = {(c["model"], c["category"]) for c in categories if 100 * float(c["rougeL"]) < FLOOR}
    mark = {key: " (floor)" for key in floor} | {key: " (chance)" for key in chance}
    command = page_command(Path(__file__).name, argv)
    lines = ["# Natural Instructions study: results", "",
             "*Generated by `benchmarks/ni_study.py`: edit the script or rerun it, not this page.*", "",
             f"Generated at commit `{stamp}` on {datetime.date.today().isoformat()} by", "",
             "```bash", command, "```", "", "## Verdicts (ROUGE-L, per task)", ""]
    lines += [f"- {v['line']}" for v in verdicts] + ["", "## ROUGE-L per category, standard encoding (points)", "",
                                                      "| category | " + " | ".join(models) + " |",
                                                      "|---|" + "---:|" * len(models)]
    by = {(c["model"], c["category"]): c for c in categories}
    for category in sorted({c["category"] for c in categories}):
        cells = [(_num(by[(m, category)]["rougeL"], 100) + mark.get((m, category), ""))
                 if (m, category) in by else "" for m in models]
        lines.append(f"| {category} | " + " | ".join(cells) + " |")
    lines += ["", f"(floor): below {FLOOR:.0f} ROUGE-L points; (chance): a task answered from a label set (at most "
              f"{LABEL_SET} distinct answers) whose exact match is not above always giving the most frequent one "
              f"(one-sided binomial, p >= {ABOVE_P}):"]
    lines += [f"- {m} {c}: exact match {100 * em:.1f} against {100 * rate:.1f}" for (m, c), (em, rate) in sorted(chance.items())]
    lines += ["", "The effects of those categories are not read.", ""]
    lines += side_by_side(effects, models, mark)
    lines += ["## What each part of the instruction does (ROUGE-L points, A - B, per category)", "",
              "detectable: the effect the paired comparison finds with 80% power at the 5% level; an interval "
              "covering 0 rules out only effects above it.", "",
              "| model | category | part | contrast | effect [95%] | detectable | instances |",
              "|---|---|---|---|---:|---:|---:|"]
    for e in effects:
        lines.append(f"| {e['model']} | {e['category']}{mark.get((e['model'], e['category']), '')} | {e['part']} | `{e['contrast']}` | "
                     f"{_interval(e, 'diff')} | {_num(e.get('detectable', ''), 100)} | {e['n']} |")
    path = STUDY / "results.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, required=True, help="an instructeval aggregate folder of the study")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args(argv)
    print(f"wrote {write_results(args.report, argv, args.data_dir)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
