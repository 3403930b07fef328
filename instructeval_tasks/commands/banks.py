"""``instructeval banks``: list, show and validate instruction banks (native or original layout).

* ``instructeval banks list [--bank-dir DIR] [--tasks GROUP]``: methods x tasks with entry counts (a
  per-model bank shows ``5x13``: 5 entries for each of 13 models); the nine InstructEval tasks by
  default, ``--tasks instructeval_ii`` for the Instruction Induction tasks;
* ``instructeval banks show METHOD TASK [--model M] [--encoding E] [--bank-dir DIR]``: the entries
  with their ids, one per line (a text with unusual whitespace is shown JSON-quoted; a structured
  entry as a block, rendered with ``--encoding``, default ``full``); a per-model bank without
  ``--model`` shows every model's entries;
* ``instructeval banks validate [DIR ...]``: check bank directories (default: the shipped banks),
  list every problem found and exit 1 if there is any.

A bad argument (a ``--bank-dir`` or ``DIR`` that does not exist, an unknown method, task or model)
is a user error: one line ``instructeval: error: ...``, exit 2.
"""

from __future__ import annotations

import argparse
import json
import os


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "banks",
        help="list, show and validate instruction banks",
        description="Inspect and validate instruction banks (the shipped ones, a bank_dir, or the original "
        "InstructEval instructions/ folder).",
    )
    sub = parser.add_subparsers(dest="banks_command", metavar="ACTION")

    p_list = sub.add_parser("list", help="methods x tasks with entry counts")
    p_list.add_argument("--bank-dir", default=None, help="bank directory (default: the shipped banks)")
    p_list.add_argument("--tasks", default="instructeval",
                        help="task ids or groups to show: instructeval (the nine, default), instructeval_ii "
                             "(the 24 Instruction Induction tasks), or a comma list")
    p_list.set_defaults(func=run_list)

    p_show = sub.add_parser("show", help="the entries of one method for one task, with ids")
    p_show.add_argument("method", help="method, e.g. promptsource")
    p_show.add_argument("task", help="task id, e.g. agnews")
    p_show.add_argument("--model", default=None, help="model of a model-specific bank (low_perplexity)")
    p_show.add_argument("--encoding", default=None, help="render structured entries with this encoding")
    p_show.add_argument("--bank-dir", default=None, help="bank directory (default: the shipped banks)")
    p_show.set_defaults(func=run_show)

    p_validate = sub.add_parser("validate", help="check bank directories; exit 1 listing every problem")
    p_validate.add_argument("dirs", nargs="*", help="bank directories (default: the shipped banks)")
    p_validate.set_defaults(func=run_validate)

    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def _bank(bank_dir: str | None):
    """The bank; a bad ``--bank-dir`` raises ``BankError`` (a user error: one line, exit 2)."""
    from instructeval_banks import load_bank

    return load_bank(bank_dir)


def run_list(args: argparse.Namespace) -> int:
    from instructeval_tasks.specs import TASK_GROUPS, resolve_task_names

    bank = _bank(args.bank_dir)
    wanted = resolve_task_names(getattr(args, "tasks", None) or "instructeval")  # UnknownTaskError: exit 2
    present = bank.tasks()
    tasks = [t for t in present if t in wanted]
    hidden = len(present) - len(tasks)
    methods = [m for m in bank.methods() if any(bank.models(m, t) or (m, t, None) in bank.entries_by_key for t in tasks)]
    if not tasks or not methods:
        print(f"bank: {bank.root}\n(no banks for the tasks {', '.join(wanted)}; {len(present)} tasks in the bank)")
        return 0
    cells: dict[tuple[str, str], str] = {}
    for method in methods:
        for task in tasks:
            if (method, task, None) in bank.entries_by_key:
                cells[(method, task)] = str(len(bank.entries_by_key[(method, task, None)]))
            else:
                models = bank.models(method, task)
                sizes = sorted({len(bank.entries_by_key[(method, task, m)]) for m in models})
                if models:
                    size = str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]}"
                    cells[(method, task)] = f"{size}x{len(models)}"
                else:
                    cells[(method, task)] = "-"
    width = max(len("method"), *(len(m) for m in methods))
    widths = [max(len(t), *(len(cells[(m, t)]) for m in methods)) for t in tasks]
    print(f"bank: {bank.root}")
    print("  ".join(["method".ljust(width)] + [t.rjust(w) for t, w in zip(tasks, widths)]))
    for method in methods:
        print("  ".join([method.ljust(width)] + [cells[(method, t)].rjust(w) for t, w in zip(tasks, widths)]))
    if any("x" in c for c in cells.values()):
        print("(NxM: N entries for each of M models)")
    if hidden:
        groups = [g for g in ("instructeval_ii", "instructeval_ni") if set(TASK_GROUPS[g]) & (set(present) - set(tasks))]
        print(f"({hidden} more tasks in the bank: --tasks {' or --tasks '.join(groups)} or --tasks all,{','.join(groups)})")
    return 0


def run_show(args: argparse.Namespace) -> int:
    from instructeval_banks import BankError, render_structured
    from instructeval_banks.structured import ENCODINGS

    if args.encoding is not None and args.encoding not in ENCODINGS:
        raise BankError(f"--encoding {args.encoding!r}: expected one of {', '.join(ENCODINGS)}")
    bank = _bank(args.bank_dir)
    # an unknown method, task or model raises BankError: one line, exit 2
    if args.model is None and (args.method, args.task, None) not in bank.entries_by_key and bank.models(args.method, args.task):
        groups = [bank.entries(args.method, args.task, m) for m in bank.models(args.method, args.task)]
    else:
        groups = [bank.entries(args.method, args.task, args.model)]
    for entries in groups:
        for entry in entries:
            text = entry.text
            if entry.structured is not None and args.encoding:
                text = render_structured(entry.structured, args.encoding)
            label = entry.id + (f" (model {entry.model})" if entry.model else "")
            if entry.structured is not None:  # a multi-line rendering: print it as a block
                print(f"{label}:\n{text}\n")
            elif text != " ".join(text.split()):  # odd whitespace (APE strings): show it quoted
                print(f"{label}: {json.dumps(text, ensure_ascii=False)}")
            else:
                print(f"{label}: {text}")
    return 0


def _report(where: str, errors: list[str], summary: str) -> int:
    """Print ``FAIL`` and every problem, or ``ok`` and the summary; 1 for a failure, else 0."""
    if errors:
        print(f"FAIL {where}: {len(errors)} problem(s)")
        for error in errors:
            print(f"  - {error}")
        return 1
    print(f"ok   {where}: {summary}")
    return 0


def run_validate(args: argparse.Namespace) -> int:
    from instructeval_banks import BANKS_DIR, check_bank_dir

    from instructeval_banks import BankError

    dirs = args.dirs or [str(BANKS_DIR)]
    for directory in dirs:  # a path that is not there is a typo, not a bank with problems
        if not os.path.isdir(directory):
            what = "is not a folder" if os.path.exists(directory) else "does not exist"
            raise BankError(f"bank directory {directory} {what}")
    failed = 0
    for directory in dirs:
        bank, errors = check_bank_dir(directory)
        summary = ""
        if not errors:
            assert bank is not None
            n_entries = sum(len(v) for v in bank.entries_by_key.values())
            summary = (f"{len(bank.methods())} methods, {len(bank.tasks())} tasks, "
                       f"{len(bank.entries_by_key)} (method, task, model) banks, {n_entries} entries")
        failed += _report(directory, errors, summary)
    from instructeval_banks.harness_banks import HARNESS_SUBDIR, check_harness_banks

    for directory in dirs:  # banks for lm-eval's own tasks: <dir>/harness/<method>/<name>.yaml
        if not os.path.isdir(os.path.join(directory, HARNESS_SUBDIR)):
            continue
        harness, errors = check_harness_banks([directory])
        n_entries = sum(len(v) for v in harness.entries_by_key.values())
        summary = f"{len(harness.tasks())} lm-eval tasks, {len(harness.entries_by_key)} (method, task) banks, {n_entries} entries"
        failed += _report(os.path.join(directory, HARNESS_SUBDIR), errors, summary)
    return 1 if failed else 0
