"""Write the ``gold`` bank: the human-written instructions of Instruction Induction (Honovich et al., 2022).

Source: ``data/annotations/<task>.json`` of ``orhonovich/instruction-induction`` at the commit
pinned in ``instructeval_tasks/ii/source.py`` (``{"annotations": [str, ...]}``). One bank file per
task, ``gold/<ii task id>.yaml``; entry ``gold-<ii task id>-<i>`` is annotation ``i`` (its position
in the file, recorded as ``annotation_index``), text verbatim (trailing whitespace included).

An annotation equal to an earlier one of the same task up to case and whitespace is left out (bank
files hold no such duplicates) and listed under ``provenance.omitted``; this affects
``first_word_letter`` and ``rhymes`` (one each).

Usage::

    python -m instructeval_banks.gold_import --annotations ../shared/data/instruction_induction/annotations \\
        --out instruction_banks/gold            # write
    python -m instructeval_banks.gold_import --annotations ... --out instruction_banks/gold --check   # byte-compare
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .schema import normalize_text
from .writer import dump_bank


def bank_text(task: str, annotations: list[str]) -> str:
    """The bank file of one task (original name ``task``) from its annotations, in order."""
    from instructeval_tasks.ii.names import REPOSITORY, SOURCE_COMMIT, ii_id

    name = ii_id(task)
    entries, omitted, seen = [], [], {}
    for i, text in enumerate(annotations):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{task}: annotation {i} is not a non-empty string: {text!r}")
        key = normalize_text(text)
        if key in seen:
            omitted.append({"annotation_index": i, "text": text, "same_as": seen[key]})
            continue
        seen[key] = i
        entries.append({"id": f"gold-{name}-{i}", "text": text, "annotation_index": i})
    provenance = {
        "source": f"Honovich et al. (2022), Instruction Induction: human-written instructions, "
                  f"{REPOSITORY}@{SOURCE_COMMIT} data/annotations/{task}.json",
        "license": "Apache-2.0 (the instruction-induction repository)",
        "generated_by": "python -m instructeval_banks.gold_import",
        "omitted": omitted,
    }
    return dump_bank(
        method="gold", tasks=[name], provenance=provenance, entries=entries,
        description=f"The annotated gold instructions of the Instruction Induction task {task}, in file order.",
        comment=f"Gold instructions for {name} (Instruction Induction {task}). Written by "
                f"instructeval_banks.gold_import; regenerate rather than edit.",
    )


def build(annotations_dir: Path) -> dict[str, str]:
    """``{file name: text}`` for every task."""
    from instructeval_tasks.ii.names import INDUCTION_TASKS, ii_id

    out = {}
    for task in INDUCTION_TASKS:
        path = annotations_dir / f"{task}.json"
        if not path.is_file():
            raise FileNotFoundError(f"no annotation file {path}")
        data = json.loads(path.read_text(encoding="utf-8"))
        out[f"{ii_id(task)}.yaml"] = bank_text(task, data["annotations"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotations", required=True, type=Path, help="the data/annotations folder")
    parser.add_argument("--out", required=True, type=Path, help="output folder (instruction_banks/gold)")
    parser.add_argument("--check", action="store_true", help="compare with the files in --out instead of writing")
    args = parser.parse_args(argv)
    files = build(args.annotations)
    if args.check:
        differ = [n for n, t in files.items() if not (args.out / n).is_file() or (args.out / n).read_text(encoding="utf-8") != t]
        for name in differ:
            print(f"differs: {args.out / name}", file=sys.stderr)
        return 1 if differ else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.out / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} files to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
