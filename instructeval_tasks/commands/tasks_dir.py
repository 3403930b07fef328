"""``instructeval tasks-dir``: print the include_path of the installed task YAMLs."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tasks-dir",
        help="print the folder to pass to lm_eval --include_path",
        description="Print the folder holding the InstructEval task YAMLs, for lm_eval --include_path.",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from instructeval_tasks import TASKS_DIR

    print(TASKS_DIR)
    return 0
