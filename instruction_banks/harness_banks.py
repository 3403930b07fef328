"""Instruction banks for lm-eval's own tasks (``instructeval run --harness-tasks``): ``harness/<method>/<name>.yaml``.

A harness bank file has the native bank layout (``schema.py``), with ``tasks`` naming the lm-eval
tasks it is written for (``hellaswag``; the BBH subtask under each of its harness names,
``bbh_fewshot_navigate``, ``bbh_zeroshot_navigate``, ...) instead of InstructEval's. The
instructions are written for the stock task's own prompt and answer strings (BoolQ's ``yes``/``no``,
ANLI's ``True``/``Neither``/``False``). Adding a bank for another harness task is one such file:

    method: adhoc
    tasks: [arc_easy]
    provenance: {source: "written for lm-eval's arc_easy prompt (Question: ... Answer:)"}
    entries:
      - id: arc_easy-adhoc-00
        text: "Answer the science question."

The ``promptsource`` files are generated from the PromptSource bank of the same dataset
(``python -m instructeval_banks.harness_banks --sync``; the tests check that they are current).
The null and generic methods apply to every task and need no file here.

Example:
    >>> banks = load_harness_banks()
    >>> len(banks.entries("adhoc", "gsm8k")) >= 20
    True
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import yaml

from .bank_errors import BankError
from .schema import BankEntry, check_bank_file, read_yaml

HARNESS_SUBDIR = "harness"
HARNESS_DIR = Path(__file__).with_name(HARNESS_SUBDIR)
TASK_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")

# PromptSource banks of the datasets lm-eval's own tasks read: harness file -> (InstructEval bank, harness tasks).
PROMPTSOURCE_SOURCES = {
    "hellaswag": ("hellaswag", ["hellaswag"]),
    "boolq": ("boolq", ["boolq"]),
    "anli": ("anli", ["anli_r1", "anli_r2", "anli_r3"]),
    "triviaqa": ("triviaqa", ["triviaqa"]),
    "nq_open": ("nq_open", ["nq_open"]),
}


@dataclass
class HarnessBanks:
    """Every harness bank entry, by (method, harness task)."""

    entries_by_key: dict[tuple[str, str], list[BankEntry]] = field(default_factory=dict)

    def entries(self, method: str, task: str) -> list[BankEntry]:
        """The entries of ``method`` for harness task ``task`` (empty: no bank)."""
        return list(self.entries_by_key.get((method, task), []))

    def tasks(self) -> list[str]:
        return sorted({t for _, t in self.entries_by_key})


def _names(data: object) -> list[str]:
    tasks = data.get("tasks") if isinstance(data, dict) else None
    return [t for t in tasks if isinstance(t, str)] if isinstance(tasks, list) else []


def check_harness_banks(roots: Sequence[Path | str | None] | None = None) -> tuple[HarnessBanks, list[str]]:
    """Read and validate every ``harness/**/*.yaml`` of ``roots`` (default: the shipped banks), later roots on top."""
    # None stands for the shipped banks (a --bank-dir layers over them)
    roots = [HARNESS_DIR if r is None else Path(r).expanduser().resolve() / HARNESS_SUBDIR for r in (roots or [None])]
    errors: list[str] = []
    banks = HarnessBanks()
    for root in roots:
        if not root.is_dir():
            continue
        origin: dict[tuple[str, str], str] = {}
        for path in sorted(root.rglob("*.yaml")):
            file_errors: list[str] = []
            data = read_yaml(path, file_errors)
            if file_errors:
                errors.extend(file_errors)
                continue
            names = _names(data)
            if isinstance(data, dict) and not isinstance(data.get("tasks"), list):
                errors.append(f"{path}: 'tasks' must list the lm-eval task names the bank is written for "
                              f"(e.g. [hellaswag]); 'all' is for the null and generic banks")
                continue
            bad = [n for n in names if not TASK_NAME_RE.match(n)]
            if bad:
                errors.append(f"{path}: {bad} are not lm-eval task names")
                continue
            entries, file_errors = check_bank_file(path, names, data=data)
            errors.extend(file_errors)
            for entry in entries:
                key = (entry.method, entry.task)
                if origin.get(key, entry.source_file) != entry.source_file:
                    message = f"{path}: method {entry.method!r}, task {entry.task!r} is also defined in {origin[key]}"
                    if message not in errors:
                        errors.append(message)
                    continue
                if key not in origin:  # a later root replaces an earlier root's bank of the key
                    banks.entries_by_key[key] = []
                origin[key] = entry.source_file
                banks.entries_by_key[key].append(entry)
    return banks, errors


def load_harness_banks(roots: Sequence[Path | str | None] | None = None) -> HarnessBanks:
    """The harness banks (see :func:`check_harness_banks`); raises :class:`BankError` listing every problem."""
    banks, errors = check_harness_banks(roots)
    if errors:
        raise BankError(errors)
    return banks


def promptsource_file_text(name: str, bank_root: Path | None = None) -> str:
    """The harness PromptSource bank ``name`` generated from ``instruction_banks/promptsource/<task>.yaml``."""
    source_task, harness_tasks = PROMPTSOURCE_SOURCES[name]
    root = bank_root or Path(__file__).parent
    source = root / "promptsource" / f"{source_task}.yaml"
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    entries = [{"id": e["id"], "text": e["text"]} for e in data["entries"]]
    lines = [
        f"# PromptSource instructions for lm-eval's {', '.join(harness_tasks)}: generated by",
        "#   python -m instructeval_banks.harness_banks --sync",
        f"# from instruction_banks/promptsource/{source_task}.yaml (the PromptSource importer's output for the same",
        "# dataset). Do not edit by hand.",
    ]
    body = {
        "method": "promptsource",
        "tasks": harness_tasks,
        "provenance": {
            "source": f"instruction_banks/promptsource/{source_task}.yaml ({data['provenance'].get('source', '')})",
            "license": data["provenance"].get("license", ""),
        },
        "entries": entries,
    }
    return "\n".join(lines) + "\n" + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=120)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the harness PromptSource banks from the PromptSource banks.")
    parser.add_argument("--sync", action="store_true", help="write instruction_banks/harness/promptsource/*.yaml")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if not args.sync:
        parser.print_help()
        return 2
    out = HARNESS_DIR / "promptsource"
    out.mkdir(parents=True, exist_ok=True)
    for name in PROMPTSOURCE_SOURCES:
        (out / f"{name}.yaml").write_text(promptsource_file_text(name), encoding="utf-8")
        print(f"wrote {out / (name + '.yaml')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
