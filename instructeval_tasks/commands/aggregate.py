"""``instructeval aggregate``: the paper's tables, plots and an HTML report from results files.

The options live in ``instructeval_aggregation.cli`` (argparse only); pandas, numpy and matplotlib
are imported when the command runs, so ``instructeval --help`` stays fast.
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    from instructeval_aggregation.cli import EPILOG, add_arguments

    parser = subparsers.add_parser(
        "aggregate",
        help="aggregate results into the paper's tables, plots and an HTML report",
        description="Aggregate InstructEval results (lm-eval results_*.json and samples_*.jsonl) into "
        "mean-relative-gain and sensitivity tables (Markdown, CSV, LaTeX), plots and one HTML report.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from instructeval_aggregation.cli import run as run_aggregate

    return run_aggregate(args)
