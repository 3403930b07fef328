"""``instructeval run``: a whole sweep for one model, in one process, resumable."""

from __future__ import annotations

import argparse

from instructeval_tasks.encodings import NI_PROMPT_FORMATS
from instructeval_tasks.sweep.executor_registry import EXECUTORS


def _int_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma list of integers, e.g. 0,1,2") from None


def _wait_seconds(text: str) -> float:
    """``--wait-lock SECONDS``: a number >= 0 (the option alone waits without limit)."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not seconds >= 0:  # negative or not a number
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds >= 0; give e.g. --wait-lock 600, "
                                         "or --wait-lock alone to wait without limit")
    return seconds


def _str_list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="evaluate tasks x methods x instructions x settings for one model (resumable)",
        description=(
            "Evaluate a sweep for one model with one model load. Results go to "
            "<output>/<model label>/results_*.json (standard lm-eval files); re-running the same "
            "command after an interruption skips finished variants."
        ),
    )
    parser.add_argument("--model", required=True, help="harness backend: hf, vllm, local-completions, ...")
    parser.add_argument("--model_args", "--model-args", dest="model_args", default="", help="backend arguments, as for lm_eval")
    parser.add_argument("--tasks", default=None, help="comma list of task ids (agnews,imdb,..., ii_sum,..., "
                        "ni_task190_snli_classification,...), 'all' (the nine), 'instructeval_ii' (zero-shot only) or 'ni' "
                        "(the 12 Natural Instructions tasks: zero-shot, every encoding of their header); required unless "
                        "--harness-tasks is given")
    parser.add_argument("--harness-tasks", dest="harness_tasks", default=None, metavar="NAME[:NSHOT],...",
                        help="lm-eval's own tasks, groups or tags (hellaswag:10,boolq,gsm8k:5,bbh_fewshot_navigate) to "
                        "sweep the null and generic instructions over, each on its own protocol; the null variant is "
                        "the stock task (--data-dir reads local copies, see instructeval_tasks/harness/local_data.yaml)")
    parser.add_argument("--placements", default="description", metavar="P,...",
                        help="where the instruction goes (InstructEval's and the harness tasks), each its own setting: "
                        "description (no chat template; default), chat-system (the system message), chat-user (head of "
                        "the first user turn)")
    parser.add_argument("--fewshot-as-multiturn", dest="fewshot_as_multiturn", action="store_true", default=None,
                        help="with a chat placement, demos as user/assistant turns (lm-eval's default)")
    parser.add_argument("--no-fewshot-as-multiturn", dest="fewshot_as_multiturn", action="store_false",
                        help="with a chat placement, demos folded into one user turn")
    parser.add_argument("--ni-prompt-format", dest="ni_prompt_format", default="schema", choices=NI_PROMPT_FORMATS,
                        help="Natural Instructions tasks: the project's schema layout (default) or Tk-Instruct's "
                             "collator string, byte for byte (metadata prompt_format; docs/natural-instructions.md)")
    parser.add_argument("--harness-rows", dest="harness_rows", default="balanced", choices=("balanced", "uniform"),
                        help="how a harness task's --test-sample rows are drawn: balanced over the gold answers "
                        "(default, as the nine tasks') or uniform (the stock score then estimates the whole split's, "
                        "the leaderboard's, number)")
    parser.add_argument("--methods", default="null,generic", help="comma list of bank methods or 'all' (default null,generic)")
    parser.add_argument("--profile", default="quick", help="protocol profile: paper, original or quick (default quick)")
    parser.add_argument("--output", "--output_path", dest="output", required=True, help="output folder")
    parser.add_argument("--data-dir", "--data_dir", dest="data_dir", default=None,
                        help="local data <dir>/<task>/{train,eval}.jsonl (default: $INSTRUCTEVAL_DATA_DIR, else the HF hub)")
    parser.add_argument("--bank-dir", dest="bank_dir", default=None, help="extra instruction bank folder(s), layered over the shipped banks (os.pathsep-separated)")
    parser.add_argument("--model-label", dest="model_label", default=None, help="folder name of this model's results")
    parser.add_argument("--batch_size", "--batch-size", dest="batch_size", default="8", help="harness batch size (default 8)")
    parser.add_argument("--max_batch_size", "--max-batch-size", dest="max_batch_size", type=int, default=None)
    parser.add_argument("--device", default=None, help="device for local backends, e.g. cpu or cuda:0")
    parser.add_argument("--no-log-samples", dest="log_samples", action="store_false", help="skip per-sample logs (CIs need them)")
    parser.add_argument("--dry-run", action="store_true", help="validate every option, print the plan size and exit; writes nothing")
    parser.add_argument("--allow-truncation", dest="allow_truncation", action="store_true",
                        help="run variants whose prompts exceed the model's window (refused by default: the harness cuts "
                             "them from the left, instruction first) and record per item what was cut")
    parser.add_argument("--wait-lock", dest="wait_lock", nargs="?", type=_wait_seconds, const=-1.0, default=None, metavar="SECONDS",
                        help="when another run holds <output>/<label>/.instructeval.lock, wait for it (up to SECONDS, "
                             "default without limit) instead of stopping at once")
    scale = parser.add_argument_group("scaling out (see docs/scaling-out.md)")
    scale.add_argument("--executor", choices=tuple(EXECUTORS), default="local",
                       help="local: this process evaluates every chunk (default); ray: a pool of Ray workers, "
                            "each with its own model (pip install 'instructeval-harness[ray]')")
    scale.add_argument("--workers", type=int, default=None, help="number of Ray workers (with --executor ray; default 1)")
    scale.add_argument("--ray-address", dest="ray_address", default=None,
                       help="join this Ray cluster ('auto', 'ray://head:10001'); default: start a local one")
    scale.add_argument("--worker-resources", dest="worker_resources", default=None,
                       help='Ray resources of each worker as JSON, e.g. \'{"num_gpus": 1}\' (default {"num_cpus": 1})')
    scale.add_argument("--shard", default=None, metavar="I/N",
                       help="run only the I-th of N parts of the plan (I from 0, e.g. $SLURM_ARRAY_TASK_ID/4); "
                            "shards of one command may write one --output at once")
    parser.add_argument("--leaderboard-tasks", dest="leaderboard_tasks", nargs="?", const="", default=None, metavar="TASK[:NSHOT],...",
                        help="also run each task's stock lm-eval counterpart on the same test items (all mapped tasks, "
                             "or those listed; :N sets the n-shot, e.g. hellaswag:25)")
    parser.add_argument("--leaderboard-map", dest="leaderboard_map", default=None, metavar="FILE",
                        help="YAML map of InstructEval task -> stock task, metric, n-shot (default: the shipped one)")
    budget = parser.add_argument_group("budgeted sweeps (see docs/budget.md)")
    budget.add_argument("--budget", type=float, default=None, metavar="F",
                        help="evaluate a seeded share F in (0, 1] of each (task, setting)'s (instruction, test item) "
                             "cells; 'instructeval aggregate' estimates the rest with an item-response model")
    budget.add_argument("--budget-seed", dest="budget_seed", type=int, default=0, metavar="N", help="seed of the cell draw (default 0)")
    budget.add_argument("--budget-min-items", dest="budget_min_items", type=int, default=None, metavar="N",
                        help="items every instruction gets at least (default 10; 5 with --budget-design balanced)")
    budget.add_argument("--budget-full-methods", dest="budget_full_methods", default=None, metavar="METHODS",
                        help="comma list of methods whose instructions get every item (default null, the baseline "
                             "of relative gain; '' for none)")
    budget.add_argument("--budget-design", dest="budget_design", default=None, choices=("uniform", "balanced", "adaptive"),
                        help="uniform (default): every instruction gets the same share of items, dealt in advance "
                             "(the design the budget validation supports best; the no-effect test is valid on it); "
                             "balanced: dealt in advance, shared among the methods by the square root of their "
                             "instruction counts; adaptive: half the budget uniformly, the rest in two rounds to the "
                             "cells the estimate is least sure of (the closest method means; its grids get no "
                             "no-effect test). A folder begun with another design continues with it when this "
                             "option is left out")
    budget.add_argument("--budget-extend", dest="budget_extend", type=float, default=None, metavar="F2",
                        help="bring a folder's budgeted grids (run with the same command and --budget F) to a share "
                             "F2 > F of their cells, keeping every saved cell: the new ones in rounds to the cells "
                             "the estimate is least sure of")
    group = parser.add_argument_group("protocol overrides (default: the profile's value)")
    group.add_argument("--num-fewshot", dest="num_fewshot", type=int)
    group.add_argument("--selections", dest="n_selections", type=int, help="demo selections (few-shot and selectional std)")
    group.add_argument("--perturbed-selections", dest="n_perturbed_selections", type=int)
    group.add_argument("--orderings", dest="n_orderings", type=int, help="orderings per ordered demo set")
    group.add_argument("--ordering-demo-seeds", dest="ordering_demo_seeds", type=_int_list, help="demo sets that get orderings, e.g. 0,1,2,3,4")
    group.add_argument("--order-mode", dest="order_mode", choices=("seeded", "original"))
    group.add_argument("--instructions-per-method", dest="instructions_per_method", type=int)
    group.add_argument("--instruction-seed", dest="instruction_seed", type=int)
    group.add_argument("--test-sample", dest="test_sample", type=int, help="seeded sample of N eval items (balanced over the gold answers; harness tasks: --harness-rows)")
    group.add_argument("--test-seed", dest="test_seed", type=int)
    group.add_argument("--truncate-words", dest="truncate_words", type=int)
    group.add_argument("--perturbation-seed", dest="perturbation_seed", type=int)
    group.add_argument("--perturbation-mode", dest="perturbation_mode", choices=("document", "stream"))
    group.add_argument("--settings", type=_str_list, help="subset of zero_shot,few_shot,perturbed,ordering")
    parser.set_defaults(func=run)


OVERRIDE_KEYS = (
    "num_fewshot", "n_selections", "n_perturbed_selections", "n_orderings", "ordering_demo_seeds", "order_mode",
    "instructions_per_method", "instruction_seed", "test_sample", "test_seed", "truncate_words",
    "perturbation_seed", "perturbation_mode", "settings",
)


def run(args: argparse.Namespace) -> int:
    from instructeval_tasks.errors import UserError
    from instructeval_tasks.sweep import SweepOptions, run_sweep
    from instructeval_tasks.sweep.budget import DEFAULT_FULL_METHODS, Budget

    batch_size = int(args.batch_size) if str(args.batch_size).isdigit() else args.batch_size
    overrides = {key: getattr(args, key) for key in OVERRIDE_KEYS}
    budget = None
    if args.budget is not None:
        if not args.log_samples:
            raise UserError("--budget needs the per-sample logs (the estimates are fitted to them): drop --no-log-samples")
        full = DEFAULT_FULL_METHODS if args.budget_full_methods is None else tuple(_str_list(args.budget_full_methods))
        budget = Budget(args.budget, seed=args.budget_seed, min_items=args.budget_min_items, full_methods=full,
                        design=args.budget_design, extend_to=args.budget_extend)
    elif (args.budget_seed or args.budget_min_items is not None or args.budget_full_methods is not None
          or args.budget_design is not None or args.budget_extend is not None):
        raise UserError("--budget-seed, --budget-min-items, --budget-full-methods, --budget-design and --budget-extend "
                        "only apply with --budget F")
    report = run_sweep(SweepOptions(
        model=args.model,
        model_args=args.model_args,
        tasks=args.tasks,
        methods=args.methods,
        output=args.output,
        profile=args.profile,
        overrides=overrides,
        data_dir=args.data_dir,
        bank_dir=args.bank_dir,
        model_label=args.model_label,
        batch_size=batch_size,
        max_batch_size=args.max_batch_size,
        device=args.device,
        log_samples=args.log_samples,
        dry_run=args.dry_run,
        lock_wait=args.wait_lock,
        executor=args.executor,
        workers=args.workers,
        ray_address=args.ray_address,
        worker_resources=args.worker_resources,
        shard=args.shard,
        leaderboard_tasks=args.leaderboard_tasks,
        leaderboard_map=args.leaderboard_map,
        budget=budget,
        allow_truncation=args.allow_truncation,
        harness_tasks=args.harness_tasks,
        placements=tuple(p.strip() for p in args.placements.split(",") if p.strip()),
        fewshot_as_multiturn=args.fewshot_as_multiturn,
        harness_rows=args.harness_rows,
        ni_prompt_format=args.ni_prompt_format,
    ))
    print(f"{report.planned} planned, {report.skipped} skipped (done), {report.evaluated} evaluated: {report.output_dir}")
    return 0
