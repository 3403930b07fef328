"""``instructeval prompt``: show the exact prompt a task sends to the model, without a model."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "prompt",
        help="print the rendered prompt of one eval document",
        description="Render the prompt (and answer continuations) of one evaluation document.",
    )
    parser.add_argument("task", help="task id, e.g. agnews or instructeval_agnews")
    parser.add_argument("--num-fewshot", "-k", type=int, default=None, help="K demonstrations (default: the YAML's 6)")
    parser.add_argument("--doc", type=int, default=0, help="index of the eval document (default 0)")
    parser.add_argument(
        "--metadata",
        default="{}",
        help='task metadata as JSON, e.g. \'{"method": "generic", "instruction_index": 2, "demo_seed": 1}\'',
    )
    parser.add_argument("--data-dir", default=None, help="local data directory (<dir>/<task>/{train,eval}.jsonl)")
    parser.set_defaults(func=run)


def parse_metadata(text: str) -> dict:
    """``--metadata`` as a dict; :class:`~instructeval_tasks.options.OptionError` naming the fix otherwise."""
    from instructeval_tasks.errors import json_problem
    from instructeval_tasks.options import OptionError

    example = """e.g. --metadata '{"method": "generic", "instruction_index": 2}'"""
    try:
        metadata = json.loads(text)
    except json.JSONDecodeError as err:
        raise OptionError(f"--metadata is not valid JSON ({json_problem(err)}); {example}") from None
    if not isinstance(metadata, dict):
        raise OptionError(f"--metadata must be a JSON object, not {type(metadata).__name__}; {example}")
    return metadata


def run(args: argparse.Namespace) -> int:
    from instructeval_tasks.options import OptionError
    from instructeval_tasks.preview import build_task, render_prompt

    if args.num_fewshot is not None and args.num_fewshot < 0:
        raise OptionError(f"--num-fewshot {args.num_fewshot}: must be >= 0 (0 is zero-shot)")
    if args.doc < 0:
        raise OptionError(f"--doc {args.doc}: must be >= 0")
    metadata = parse_metadata(args.metadata)
    if args.data_dir:
        metadata["data_dir"] = args.data_dir
    task = build_task(args.task, metadata, args.num_fewshot)
    n_docs = len(task.eval_docs)
    if args.doc >= n_docs:
        raise OptionError(f"--doc {args.doc}: the eval split of {args.task} has {n_docs} documents (0..{n_docs - 1})")
    context, continuations = render_prompt(task, args.doc)
    print(context, end="")
    print("\n" + "-" * 40)
    for continuation in continuations:
        print(repr(continuation))
    return 0
