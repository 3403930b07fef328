"""Shared pieces of the ``backend_*`` benchmarks: input checks, counters, task objects, token bounds.

Counters wrap the two places where a forward pass happens: ``HFLM._model_call`` (the stock ``hf``
backend, and ``instructeval-hf`` when it falls back) and ``InstructEvalHFLM._ie_model_call`` (the
prefix-sharing path). Forward tokens are ``input_ids.numel()``, padding included, for both.
"""

from __future__ import annotations

import copy
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_MODEL = ROOT / "models" / "smollm2"
DEFAULT_DATA = ROOT.parent / "shared" / "data"

COUNTS: dict[str, float] = {}


def reset() -> dict[str, float]:
    COUNTS.clear()
    COUNTS.update(forward_calls=0, forward_tokens=0, loglikelihood_requests=0, generate_requests=0, lm_seconds=0.0)
    return COUNTS


def missing_inputs(model_dir: str | Path, data_dir: str | Path) -> str | None:
    """A ``skip:`` line when the prepared model or the shared data is absent, else None."""
    if not (Path(model_dir) / "config.json").exists():
        return (f"skip: model not found at {model_dir}; prepare it with "
                f"`instructeval prepare-model smollm2-135m-instruct --out {model_dir}`")
    if not (Path(data_dir) / "ag_news").is_dir():
        return f"skip: shared data not found at {data_dir}"
    return None


def offline() -> None:
    os.environ.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")


DTYPE_HELP = ("model dtype (default float32: scores of both backends are then identical, and bfloat16 is only faster on CPUs with native bf16 (AVX512-BF16/AMX); without it PyTorch emulates it several times slower)")

THREADS_HELP = ("torch CPU threads, also passed to subprocesses as OMP_NUM_THREADS (default 1: on a shared 2-core "
                "machine two OpenMP threads stall behind other jobs and timings become noise); 0 keeps torch's default")


def add_runtime_options(parser) -> None:
    """``--dtype`` and ``--threads``, the two options every benchmark shares."""
    parser.add_argument("--dtype", default="float32", help=DTYPE_HELP)
    parser.add_argument("--threads", type=int, default=1, help=THREADS_HELP)


def ready(args) -> bool:
    """Print the ``skip:`` line and return False when an input is missing; else go offline and set
    the thread count (``--threads``) and return True."""
    skip = missing_inputs(args.model_dir, args.data_dir)
    if skip:
        print(skip)
        return False
    offline()
    set_threads(args.threads)
    return True


def set_threads(n: int) -> None:
    if n > 0:
        os.environ["OMP_NUM_THREADS"] = str(n)
        import torch

        torch.set_num_threads(n)


def install_counters() -> dict[str, float]:
    """Wrap the forward calls and the request entry points of both backends (idempotent)."""
    from lm_eval.models.huggingface import HFLM

    from instructeval_tasks.backend import InstructEvalHFLM

    reset()
    if getattr(HFLM, "_backend_bench_counting", False):
        return COUNTS
    model_call, ie_call = HFLM._model_call, InstructEvalHFLM._ie_model_call
    loglikelihood, generate = HFLM.loglikelihood, HFLM.generate_until
    ie_loglikelihood, ie_generate = InstructEvalHFLM.loglikelihood, InstructEvalHFLM.generate_until

    def counted_call(self, inps, *args, **kwargs):
        COUNTS["forward_calls"] += 1
        COUNTS["forward_tokens"] += int(inps.numel())
        return model_call(self, inps, *args, **kwargs)

    def counted_ie_call(self, input_ids, *args, **kwargs):
        COUNTS["forward_calls"] += 1
        COUNTS["forward_tokens"] += int(input_ids.numel())
        return ie_call(self, input_ids, *args, **kwargs)

    def timed(fn, key):
        def wrapper(self, requests, *args, **kwargs):
            # the subclass's entry point calls the parent's: count the outermost call only
            if getattr(self, "_backend_bench_inside", False):
                return fn(self, requests, *args, **kwargs)
            self._backend_bench_inside = True
            COUNTS[key] += len(requests)
            start = time.perf_counter()
            try:
                return fn(self, requests, *args, **kwargs)
            finally:
                COUNTS["lm_seconds"] += time.perf_counter() - start
                self._backend_bench_inside = False
        return wrapper

    HFLM._model_call = counted_call
    InstructEvalHFLM._ie_model_call = counted_ie_call
    HFLM.loglikelihood = timed(loglikelihood, "loglikelihood_requests")
    HFLM.generate_until = timed(generate, "generate_requests")
    InstructEvalHFLM.loglikelihood = timed(ie_loglikelihood, "loglikelihood_requests")
    InstructEvalHFLM.generate_until = timed(ie_generate, "generate_requests")
    HFLM._backend_bench_counting = True
    return COUNTS


def load_lm(name: str, model_dir: str | Path, batch_size: int, dtype: str, extra: str = ""):
    """The harness model ``name`` with ``pretrained=model_dir,dtype=dtype`` (plus ``extra`` model_args)."""
    import lm_eval.api.registry

    import instructeval_tasks.backend.model  # noqa: F401  (registers instructeval-hf)

    cls = lm_eval.api.registry.get_model(name)
    model_args = f"pretrained={model_dir},dtype={dtype}" + (f",{extra}" if extra else "")
    return cls.create_from_arg_string(model_args, {"batch_size": batch_size, "device": "cpu"})


def task_objects(task: str, variants: list[dict[str, Any]], *, data_dir: str | Path, model_dir: str | Path,
                 items: int) -> list:
    """``InstructEvalTask`` objects of one task, one per variant dict (name, num_fewshot, metadata keys)."""
    from instructeval_tasks.task import base_task_config
    from instructeval_tasks.task import InstructEvalTask

    base = base_task_config(task)
    out = []
    for variant in variants:
        variant = dict(variant)
        cfg = copy.copy(base)
        cfg.pop("tag", None)
        cfg["task"] = variant.pop("name")
        cfg["num_fewshot"] = variant.pop("num_fewshot")
        cfg["metadata"] = {"version": 1.0, "instructeval_task": task, "test_sample": items, "data_dir": str(data_dir),
                           "pretrained": str(model_dir), **variant}
        out.append(InstructEvalTask(config=cfg))
    return out


def task_manager():
    """The one index-free TaskManager for task objects (see ``instructeval_tasks.object_task_manager``)."""
    from instructeval_tasks import object_task_manager

    return object_task_manager()


def distinct_token_bound(rows: list[tuple[int, ...]]) -> int:
    """Distinct token positions over the model input rows: the tokens of the distinct prefixes plus
    the distinct suffix tokens, i.e. the size of the token trie: sum(len) - sum(LCP of sorted neighbours)."""
    rows = sorted(set(rows))
    total = sum(len(r) for r in rows)
    for a, b in zip(rows, rows[1:]):
        n = min(len(a), len(b))
        k = 0
        while k < n and a[k] == b[k]:
            k += 1
        total -= k
    return total


def model_rows(lm, requests) -> list[tuple[int, ...]]:
    """The input rows the stock backend feeds the model for these loglikelihood Instances (context +
    continuation minus its last token, left-truncated to max_length), without duplicates."""
    rows = set()
    for context, continuation in (r.args for r in requests):
        if context == "":
            cont = lm.tok_encode(continuation, add_special_tokens=False)
            ctx = [lm.prefix_token_id]
        else:
            ctx, cont = lm._encode_pair(context, continuation)
        rows.add(tuple((ctx + cont)[-(lm.max_length + 1):][:-1]))
    return list(rows)


def capture_requests(lm) -> list:
    """Record the Instances the next loglikelihood call receives (wraps this LM instance only)."""
    seen: list = []
    inner = lm.loglikelihood

    def recording(requests, *args, **kwargs):
        seen.extend(requests)
        return inner(requests, *args, **kwargs)

    lm.loglikelihood = recording
    return seen


def scores(results: dict, keys=("acc,none", "acc_per_token,none", "quasi_exact_match,none")) -> dict[str, dict[str, float]]:
    return {task: {k: r[k] for k in keys if k in r} for task, r in results["results"].items()}


def loglik_deltas(a: dict, b: dict) -> list[float]:
    """|Δ log-likelihood| of every loglikelihood request, matched by task, doc and choice."""
    out = []
    for task, samples in a["samples"].items():
        for x, y in zip(samples, b["samples"][task], strict=True):
            for rx, ry in zip(x["resps"], y["resps"], strict=True):
                if isinstance(rx[0], (list, tuple)):
                    out.append(abs(float(rx[0][0]) - float(ry[0][0])))
    return out


def loglik_delta_stats(a: dict, b: dict) -> tuple[float, float]:
    """(max, mean) of ``loglik_deltas(a, b)``; (0, 0) when there are no loglikelihood requests."""
    deltas = loglik_deltas(a, b)
    return max(deltas, default=0.0), (sum(deltas) / len(deltas) if deltas else 0.0)


def say(line: str = "") -> None:
    print(line, flush=True)
    sys.stdout.flush()
