"""Sequences longer than a sliding-attention window (Gemma 3's 512) stay on the prefix path.

A tiny Gemma 3 with a 16-token window (one sliding and one full layer) scores few-shot requests of
about 50 tokens: the prefix path builds one mask per layer type, the sliding one windowed, and
matches the stock ``hf`` code (which lets transformers build the windowed masks); ignoring the
window would not. A model whose forward cannot take a mask per layer type fails the windowed
self-check and falls back to the stock code, with the reason recorded.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from lm_eval.api.instance import Instance

WINDOW = 16  # tiny_windowed_gemma_dir's
TOL = 1e-4
DEMOS = "News: Ceasefire talks resume in Geneva.\nCategory: World\n\nNews: Home side wins the cup final.\nCategory: Sports\n\n"


@pytest.fixture(scope="module")
def windowed_dir(tiny_windowed_gemma_dir: Path) -> Path:
    return tiny_windowed_gemma_dir


def _args(model_dir: Path) -> dict:
    return dict(pretrained=str(model_dir), dtype="float32", device="cpu", batch_size=4, max_length=128)


def _requests() -> list[Instance]:
    args = [(f"{instruction}{DEMOS}News: {doc}\nCategory:", choice)
            for instruction in ("Solve the following task:\n\n", "Find the answer below:\n\n")
            for doc in ("Fears for pension after talks.", "Robot learns to fold laundry.")
            for choice in (" World", " Sports", " Business")]
    return [Instance("loglikelihood", {}, a, i) for i, a in enumerate(args)]


def test_requests_longer_than_the_window_take_the_prefix_path_with_stock_scores(windowed_dir):
    from lm_eval.models.huggingface import HFLM

    from instructeval_tasks.backend import InstructEvalHFLM

    new = InstructEvalHFLM(**_args(windowed_dir))
    assert new._ie_spec().windows == {"sliding_attention": WINDOW, "full_attention": None}
    reqs = _requests()
    assert min(len(new.tok_encode(r.args[0])) for r in reqs) > 2 * WINDOW
    got = new.loglikelihood(reqs)
    want = HFLM(**_args(windowed_dir)).loglikelihood(reqs)
    assert max(abs(a[0] - b[0]) for a, b in zip(want, got)) <= TOL
    info = new.get_model_info()["instructeval_hf"]
    assert info["stock_requests"] == 0 and info["prefix_requests"] == len(reqs), info
    assert new._ie_support().window_check == ""  # the windowed self-check ran and passed

    # the same tree with one unwindowed mask for every layer: different scores
    blind = InstructEvalHFLM(**_args(windowed_dir))
    blind._ie_support().window_check = ""
    blind._ie_spec().windows = {}
    off = blind.loglikelihood(reqs)
    assert max(abs(a[0] - b[0]) for a, b in zip(want, off)) > 1e-2


def test_generation_past_the_window_equals_stock(windowed_dir):
    from lm_eval.models.huggingface import HFLM

    from instructeval_tasks.backend import InstructEvalHFLM

    new = InstructEvalHFLM(**_args(windowed_dir))
    reqs = [Instance("generate_until", {}, (f"{DEMOS}News: {doc}\nCategory:", {"until": ["\n\n"], "max_gen_toks": 12}), i)
            for i, doc in enumerate(["Fears for pension after talks.", "Robot learns to fold laundry.",
                                     "Oil prices climb on supply fears."])]
    got = new.generate_until(reqs)
    assert new.prefix_stats.get("distinct_tokens"), "the prefix path was not used"
    assert got == HFLM(**_args(windowed_dir)).generate_until(reqs)
    assert any(got), "every generation was empty: nothing compared"


def test_a_forward_without_masks_per_layer_type_fails_the_windowed_check(windowed_dir):
    from lm_eval.models.huggingface import HFLM
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from instructeval_tasks.backend import InstructEvalHFLM

    model = AutoModelForCausalLM.from_pretrained(windowed_dir, dtype="float32").eval()
    inner = model.forward

    def forward(*args, attention_mask=None, **kwargs):  # as a model that applies one mask to all layers
        if isinstance(attention_mask, dict):
            attention_mask = attention_mask["full_attention"]
        return inner(*args, attention_mask=attention_mask, **kwargs)

    forward.__signature__ = inspect.signature(inner)
    model.forward = forward
    new = InstructEvalHFLM(pretrained=model, tokenizer=AutoTokenizer.from_pretrained(windowed_dir), device="cpu",
                           batch_size=4, max_length=128)
    reqs = _requests()
    got = new.loglikelihood(reqs)
    want = HFLM(**_args(windowed_dir)).loglikelihood(reqs)
    assert max(abs(a[0] - b[0]) for a, b in zip(want, got)) <= TOL  # the stock code served them
    reasons = list(new.get_model_info()["instructeval_hf"]["stock_reasons"])
    assert len(reasons) == 1 and f"exceed the attention window ({WINDOW}) and the windowed self-check failed: max KL" \
        in reasons[0], reasons
