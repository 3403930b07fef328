"""Command-line glue of ``instructeval aggregate`` (and ``python -m instructeval_aggregation``).

Only argparse is imported at module level; pandas, numpy and matplotlib load inside :func:`run`.

Exit status (:data:`EXIT_STATUS`):

- 0: the report was written from every input;
- 1: failed while writing (e.g. a full disk); the previous report in ``--out`` is unchanged;
- 2: a user error, nothing written: a bad option or ``--out``, no usable input at all, or
  ``--strict`` found a problem (printed as ``instructeval: error: ...``);
- 3: the report was written, but some input was dropped (each listed on stderr and in the report).
"""

from __future__ import annotations

import argparse
import os
import sys

EXIT_OK, EXIT_FAILED, EXIT_USER_ERROR, EXIT_INPUT_DROPPED = 0, 1, 2, 3

EPILOG = """examples:
  instructeval aggregate runs/ --out report/
  instructeval aggregate runs/*/results_*.json --out report/ --metric acc --null-weight 1
  instructeval aggregate runs/ --out report/ --model-registry my_models.yaml --bootstrap 2000 --seed exp1

--out is replaced whole when the report is complete (written beside it first), never left half old.

exit status:
  0  report written from every input
  1  failed while writing (e.g. disk full); the previous --out is unchanged
  2  user error, nothing written: bad option or --out, no usable input, or --strict found a problem
  3  report written, but some input was dropped (listed on stderr and in the report)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", help="results_*.json files or directories (searched recursively)")
    parser.add_argument("--out", "-o", required=True, help="output directory (tables/, data/, plots/, report.html)")
    parser.add_argument(
        "--metric",
        choices=("acc_per_token", "acc", "acc_norm"),
        default=None,
        help="primary metric of classification/multiple-choice tasks (default: acc_per_token when every "
        "variant has it -- the paper's rule -- else acc)",
    )
    parser.add_argument("--gqa-metric", default="quasi_exact_match", help="primary metric of generation tasks")
    parser.add_argument("--harness-metric", dest="harness_metric", default=None, metavar="NAME",
                        help="the metric of --harness-tasks results (e.g. acc_norm, the Open LLM Leaderboard's for "
                        "HellaSwag; default: each task's first metric); a task without it keeps its first, with a warning")
    parser.add_argument("--null-weight", type=float, default=5.0, help="weight of the null instruction in the baseline mu (default 5, as the original)")
    parser.add_argument("--ddof", type=int, default=1, choices=(0, 1), help="ddof of the sensitivity SDs (default 1)")
    parser.add_argument("--scale-threshold", type=float, default=6.0, metavar="B", help="billions of parameters splitting small from big models (default 6)")
    parser.add_argument("--model-registry", action="append", default=[], metavar="YAML", help="extra model registry file (repeatable; tried before the built-in one)")
    parser.add_argument("--bootstrap", type=int, default=1000, metavar="B", help="bootstrap replicates for CIs and tests (0: off; default 1000)")
    parser.add_argument("--ci-level", type=float, default=0.95, help="confidence level (default 0.95)")
    parser.add_argument("--seed", default="instructeval", help="string seed of every resampling (recorded in the outputs)")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level of the 'A beats B' tables (default 0.05)")
    parser.add_argument("--tie-tolerance", type=float, default=1e-9, help="values this close to the best tie (default 1e-9)")
    parser.add_argument("--decimals", type=int, default=3, help="decimals in Markdown/LaTeX tables (default 3)")
    parser.add_argument("--no-samples", action="store_true", help="do not read per-sample logs (no CIs, tests, worst-case)")
    parser.add_argument("--no-plots", action="store_true", help="do not draw figures")
    parser.add_argument("--strict", action="store_true", help="treat warnings as errors: stop before writing anything")
    parser.add_argument("--estimate-draws", dest="estimate_draws", type=int, default=200, metavar="B",
                        help="predictive draws of the budgeted sweeps' estimates, for their intervals (0: off; default 200)")
    parser.add_argument("--no-estimate-method-effect", dest="estimate_method_effect", action="store_false",
                        help="fit the budgeted sweeps' estimators without a method effect")
    parser.add_argument("--model-alias", dest="model_alias", action="append", default=[], metavar="NAME=LABEL",
                        help="compare stock results of model NAME with the InstructEval runs of LABEL (repeatable)")
    parser.add_argument("--write-back", dest="write_back", action="store_true",
                        help="also write each model's sensitivity card (instructeval_sensitivity_<model>.json, "
                        "results-shaped) into the folder of its results files")
    parser.add_argument("--leaderboard-map", dest="leaderboard_map", default=None, metavar="FILE",
                        help="YAML map of InstructEval task -> stock task and metric (default: the shipped one)")


def build_parser() -> argparse.ArgumentParser:
    from instructeval_tasks.errors import OneLineErrorParser  # usage errors on one line, exit 2

    parser = OneLineErrorParser(
        prog="instructeval aggregate",
        description="Aggregate InstructEval results into the paper's tables, plots and an HTML report.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    """Run the command; returns the exit status. User errors raise :class:`AggregationError`."""
    from .issues import AggregationError
    from .output_dir import check_out_dir
    from .pipeline import AggregateOptions
    from .report import write_report
    from .sections import Inputs, collect

    options = AggregateOptions(
        metric=args.metric,
        gqa_metric=args.gqa_metric,
        null_weight=args.null_weight,
        ddof=args.ddof,
        scale_threshold_b=args.scale_threshold,
        model_registries=tuple(args.model_registry),
        n_boot=args.bootstrap,
        ci_level=args.ci_level,
        seed=args.seed,
        alpha=args.alpha,
        tie_tolerance=args.tie_tolerance,
        decimals=args.decimals,
        strict=args.strict,
        use_samples=not args.no_samples,
        estimate_draws=args.estimate_draws,
        estimate_method_effect=args.estimate_method_effect,
    )
    from .budget_validity import check_table
    from .leaderboard_loading import parse_aliases

    check_table()  # $INSTRUCTEVAL_BUDGET_VALIDITY: a bad file is one line (exit 2) before any work
    try:
        aliases = parse_aliases(getattr(args, "model_alias", []))
    except ValueError as err:
        raise AggregationError(str(err)) from None
    options.validate()  # every option, input path and --out is checked before any file is read
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise AggregationError(f"input path {missing[0]} does not exist{more}; give results_*.json files or folders")
    check_out_dir(args.out)
    inputs = Inputs(tuple(args.paths), harness_metric=getattr(args, "harness_metric", None),
                    leaderboard_map=getattr(args, "leaderboard_map", None), aliases=aliases)
    try:
        result = collect(inputs, options)
    except AggregationError as err:
        if not err.issues:
            raise
        for issue in err.issues:  # the details, one per line, then the one-line error
            print(str(issue), file=sys.stderr)
        raise AggregationError(str(err).splitlines()[0].rstrip(":") + " (listed above); nothing written") from None
    try:
        written = write_report(result, args.out, plots=not args.no_plots)
    except OSError as err:
        print(f"instructeval: error: writing the report failed ({err}); {args.out} is unchanged", file=sys.stderr)
        return EXIT_FAILED
    return _tell(result, written, args)


def _tell(result, written: dict, args: argparse.Namespace) -> int:
    """The terminal's account of a written report: the answer first (the verdicts, then each section's
    answer lines), the issues on stderr, the sections' summaries, then where it all went."""
    from .sections import SECTIONS
    from .verdict import verdicts_of

    for line in verdicts_of(result).lines():  # one verdict per (model, task, setting), then pairs
        print(line)
    _print_lines(result, "answer")
    sys.stdout.flush()  # before the issues on stderr, on a terminal that shows both
    errors = [i for i in result.issues if i.level == "error"]
    warnings = [i for i in result.issues if i.level == "warning"]
    for issue in errors + warnings:
        print(str(issue), file=sys.stderr)
    _print_plan_notes(result)
    _print_lines(result, "summary")
    if getattr(args, "write_back", False):
        from .sensitivity_report import write_back

        back, problems = write_back(result)
        for problem in problems:
            print(f"instructeval: warning: {problem}", file=sys.stderr)
        if back:
            print(f"wrote the sensitivity cards beside the results: {', '.join(back)}")
    phrases = ([f"{len(result.tables)} tables"] if result.tables else []) + \
        [p for p in (s.tables_phrase(result) for s in SECTIONS) if p]
    print(
        f"wrote {' and '.join(phrases) or '0 tables'}, {len(written['plots'])} figures and "
        f"{os.path.join(args.out, 'report.html')} "  # as --out was given
        f"({len(errors)} error(s), {len(warnings)} warning(s))"
    )
    return EXIT_INPUT_DROPPED if errors else EXIT_OK


def _print_lines(result, phase: str) -> None:
    from .sections import SECTIONS

    for section in SECTIONS:
        if section.phase == phase:
            for line in section.lines(result):
                print(line)


def _print_plan_notes(result) -> None:
    """``sweep.json`` files among the inputs: one note for one, one line naming a few for several."""
    plans = [i for i in result.issues if i.code == "sweep-plan"]
    if len(plans) == 1:
        print(str(plans[0]), file=sys.stderr)
    elif plans:
        files = [i.file for i in plans]
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        print(f"note [sweep-plan] {len(files)} sweep.json files skipped ({shown}): the plan instructeval run writes "
              "beside its results, not a results file", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """``python -m instructeval_aggregation``: same options, output and exit status as ``instructeval aggregate``."""
    from instructeval_tasks.errors import UserError, one_line

    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except UserError as err:
        print(f"instructeval: error: {one_line(err)}", file=sys.stderr)
        return EXIT_USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
