"""Command-line glue of ``instructeval aggregate`` (and ``python -m instructeval_aggregation``).

Only argparse is imported at module level; pandas, numpy and matplotlib load inside :func:`run`.
Exit status: 0 when the report was written without errors, 1 when it was written but some input
was dropped (errors are listed in the report), 2 when nothing could be aggregated or ``--strict``
found a warning (nothing is written then).
"""

from __future__ import annotations

import argparse
import sys

EPILOG = """examples:
  instructeval aggregate runs/ --out report/
  instructeval aggregate runs/*/results_*.json --out report/ --metric acc --null-weight 1
  instructeval aggregate runs/ --out report/ --model-registry my_models.yaml --bootstrap 2000 --seed exp1
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
    parser.add_argument("--model-alias", dest="model_alias", action="append", default=[], metavar="NAME=LABEL",
                        help="compare stock results of model NAME with the InstructEval runs of LABEL (repeatable)")
    parser.add_argument("--leaderboard-map", dest="leaderboard_map", default=None, metavar="FILE",
                        help="YAML map of InstructEval task -> stock task and metric (default: the shipped one)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="instructeval aggregate",
        description="Aggregate InstructEval results into the paper's tables, plots and an HTML report.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    from .issues import AggregationError
    from .loading import load_runs
    from .pipeline import AggregateOptions, aggregate
    from .report import write_report

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
    )
    from .leaderboard_loading import parse_aliases
    from .leaderboard_report import add_leaderboard

    try:
        aliases = parse_aliases(getattr(args, "model_alias", []))
    except ValueError as err:
        print(f"instructeval aggregate: {err}", file=sys.stderr)
        return 2
    try:
        runset = load_runs(args.paths, strict=args.strict, samples=not args.no_samples)
        result = aggregate(runset, options)
        add_leaderboard(result, runset, args.paths, leaderboard_map=getattr(args, "leaderboard_map", None), aliases=aliases)
    except AggregationError as err:
        print(f"instructeval aggregate: {err}", file=sys.stderr)
        return 2
    written = write_report(result, args.out, plots=not args.no_plots)
    errors = [i for i in result.issues if i.level == "error"]
    warnings = [i for i in result.issues if i.level == "warning"]
    for issue in errors + warnings:
        print(str(issue), file=sys.stderr)
    print(
        f"wrote {len(result.tables)} tables, {len(written['plots'])} figures and {written['report']} "
        f"({len(errors)} error(s), {len(warnings)} warning(s))"
    )
    return 1 if errors else 0


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
