"""The ``instructeval`` command: one entry point, one sub-command per job.

Each sub-command lives in its own module exposing ``register(subparsers)``, which adds its parser
and sets ``func`` to the function that runs it; modules are imported only when listed here, and
heavy imports (torch, the harness) happen inside the command functions, so ``--help`` is fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .errors import OneLineErrorParser, one_line

# (module, attribute) of each sub-command's ``register`` function, in help order.
SUBCOMMANDS = (
    "instructeval_tasks.commands.tasks_dir",
    "instructeval_tasks.commands.prompt",
    "instructeval_tasks.commands.prepare_model",
    "instructeval_tasks.commands.run",
    "instructeval_tasks.commands.banks",
    "instructeval_tasks.commands.induce",
    "instructeval_tasks.commands.aggregate",
)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="instructeval",
        description="InstructEval for lm-evaluation-harness: instructions, demos, perturbations, sensitivity.",
    )
    parser.add_argument("--debug", action="store_true", help="show the traceback of a user error instead of one line")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in SUBCOMMANDS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name == module_name:  # a sub-command not present in this build
                continue
            raise
        module.register(subparsers)
    return parser


# Options whose value may start with "-" (argparse would take "--shard -1/2" for two options and
# say only "expected one argument"): joined as "--shard=-1/2", so the option's own check explains.
DASH_VALUE_OPTIONS = ("--shard",)


def _join_dash_values(argv: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in DASH_VALUE_OPTIONS and i + 1 < len(argv) and argv[i + 1].startswith("-") and not argv[i + 1].startswith("--"):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_join_dash_values(list(sys.argv[1:] if argv is None else argv)))
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from instructeval_tasks.errors import UserError

    try:
        return int(args.func(args) or 0)
    except UserError as err:
        if args.debug:
            raise
        print(f"instructeval: error: {one_line(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        from instructeval_tasks.sweep.interrupts import Terminated

        terminated = isinstance(err, Terminated)
        _release_frames(err)
        if terminated:
            print("terminated", file=sys.stderr)
            return 143  # 128 + SIGTERM, as a shell reports a process ended by it
        print("interrupted", file=sys.stderr)
        return 130


def _release_frames(err: BaseException) -> None:
    """Free the frames ``err``'s tracebacks hold, now: what lives in them (the harness's progress bar)
    is closed, and prints its last line, before the stop message rather than after it, at exit."""
    import gc

    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        err.__traceback__ = None
        err = err.__cause__ or err.__context__
    gc.collect()


if __name__ == "__main__":
    sys.exit(main())
