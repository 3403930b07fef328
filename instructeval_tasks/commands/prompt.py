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


def run(args: argparse.Namespace) -> int:
    from instructeval_tasks.preview import build_task, render_prompt

    try:
        metadata = json.loads(args.metadata)
    except json.JSONDecodeError as err:
        raise SystemExit(f"--metadata is not valid JSON: {err}") from None
    if args.data_dir:
        metadata["data_dir"] = args.data_dir
    task = build_task(args.task, metadata, args.num_fewshot)
    context, continuations = render_prompt(task, args.doc)
    print(context, end="")
    print("\n" + "-" * 40)
    for continuation in continuations:
        print(repr(continuation))
    return 0
