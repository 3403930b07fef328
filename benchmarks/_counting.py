"""Count what a harness model does: requests received and forward passes run.

Imported by the benchmarks; ``python benchmarks/_counting.py <lm_eval args>`` runs the ``lm_eval``
CLI with the counters installed and prints one line ``COUNTS {json}`` at exit.
"""

from __future__ import annotations

import atexit
import json
import sys

COUNTS = {"loglikelihood_requests": 0, "generate_requests": 0, "forward_calls": 0, "forward_tokens": 0, "generate_calls": 0}


def install() -> dict[str, int]:
    """Wrap HFLM's entry points with counters (idempotent); returns the live counter dict."""
    from lm_eval.models.huggingface import HFLM

    if getattr(HFLM, "_instructeval_counting", False):
        return COUNTS
    loglikelihood, generate, model_call = HFLM.loglikelihood, HFLM.generate_until, HFLM._model_call
    model_generate = HFLM._model_generate

    def counted_loglikelihood(self, requests, *args, **kwargs):
        COUNTS["loglikelihood_requests"] += len(requests)
        return loglikelihood(self, requests, *args, **kwargs)

    def counted_generate(self, requests, *args, **kwargs):
        COUNTS["generate_requests"] += len(requests)
        return generate(self, requests, *args, **kwargs)

    def counted_call(self, inps, *args, **kwargs):
        COUNTS["forward_calls"] += 1
        COUNTS["forward_tokens"] += int(inps.numel())
        return model_call(self, inps, *args, **kwargs)

    def counted_model_generate(self, *args, **kwargs):
        COUNTS["generate_calls"] += 1
        return model_generate(self, *args, **kwargs)

    HFLM.loglikelihood, HFLM.generate_until, HFLM._model_call = counted_loglikelihood, counted_generate, counted_call
    HFLM._model_generate = counted_model_generate
    HFLM._instructeval_counting = True
    return COUNTS


if __name__ == "__main__":
    install()
    atexit.register(lambda: print("COUNTS " + json.dumps(COUNTS), flush=True))
    from lm_eval.__main__ import cli_evaluate

    sys.argv = ["lm_eval", *sys.argv[1:]]
    cli_evaluate()
