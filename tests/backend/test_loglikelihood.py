"""``instructeval-hf`` log-likelihoods equal the stock ``hf`` backend's (fp32, within 1e-4).

Requests mix shared few-shot prefixes, a different prefix, continuations that merge with the
context's last token, contexts with trailing spaces, an empty context, duplicates, and contexts
longer than ``max_length`` (left truncation); on a GPT-2 (byte-level BPE, no BOS added) and two
Llamas (SentencePiece-style, with and without BOS); at batch sizes 1 and 8.
"""

from __future__ import annotations

import random

import pytest
from lm_eval.api.instance import Instance

TOL = 1e-4
MAX_LENGTH = 64  # small enough that the few-shot prompts below need left truncation

DEMOS = (
    "News: Ceasefire talks resume in Geneva.\nCategory: World\n\n"
    "News: Home side wins the cup final.\nCategory: Sports\n\n"
)
DOCS = ["Fears for pension after talks.", "Goalkeeper saves late penalty.", "Robot learns to fold laundry."]
CHOICES = [" World", " Sports", " Business", " Sci/Tech"]


def request_args() -> list[tuple[str, str]]:
    reqs: list[tuple[str, str]] = []
    for instruction in ("Solve the following task:\n\n", "Find the answer below:\n\n"):  # two shared prefixes
        for doc in DOCS:
            reqs += [(f"{instruction}{DEMOS}News: {doc}\nCategory:", c) for c in CHOICES]
    reqs += [(f"News: {doc}\nCategory:", c) for doc in DOCS[:2] for c in CHOICES]  # zero-shot, short
    reqs += [
        ("hello wor", "ld hello world"),  # the continuation merges with the context's last token
        ("The quick bro", "wn fox jumps over the lazy dog."),
        ("Category: Sci", "/Tech\n\nCategory: World"),
        ("News: Markets rally.\nCategory: ", "World"),  # trailing space moves into the continuation
        ("Answer:  ", "yes"),  # two trailing spaces
        ("Answer:\n", "yes"),  # a trailing newline is whitespace too
        ("", "hello world"),  # empty context: the prefix token
        ("Category:", " World"),  # duplicate below
        ("Category:", " World"),
        ("Complete the problem. " * 12 + "Answer:", " yes no maybe"),  # needs left truncation
        ("x", "Solve the following task: " * 3),  # long continuation (but <= max_length)
    ]
    return reqs


def instances(args: list[tuple[str, str]]) -> list[Instance]:
    return [Instance("loglikelihood", {}, a, i) for i, a in enumerate(args)]


@pytest.mark.parametrize("model", ["gpt2", "llama-bos", "llama-nobos"])
@pytest.mark.parametrize("batch_size", [1, 8])
def test_loglikelihood_equals_stock(make_pair, model, batch_size):
    pair = make_pair(model, batch_size=batch_size, max_length=MAX_LENGTH)
    reqs = instances(request_args())
    want = pair.stock.loglikelihood(reqs)
    got = pair.new.loglikelihood(reqs)
    assert pair.new.prefix_stats.get("distinct_tokens"), "the prefix path was not used"
    assert len(got) == len(want)
    for (lw, gw), (lg, gg), req in zip(want, got, reqs):
        assert abs(lw - lg) <= TOL, (req.args, lw, lg)
        assert gw == gg, req.args


def test_prefix_is_computed_once(make_pair):
    pair = make_pair("gpt2", batch_size=8)
    reqs = instances(request_args()[:24])  # two instructions x 3 docs x 4 choices, no truncation
    pair.new.loglikelihood(reqs)
    stats = pair.new.prefix_stats
    rows = {tuple((r[1] + r[2])[:-1]) for r in _encoded(pair.stock, reqs)}
    stock_tokens = sum(len(r) for r in rows)  # even with the stock single-token dedup
    assert stats["distinct_tokens"] < stock_tokens / 3
    assert stats["forward_tokens"] <= 1.3 * stats["distinct_tokens"]


def _encoded(lm, reqs):
    return [((c, x),) + lm._encode_pair(c, x) for c, x in (r.args for r in reqs)]


def test_request_order_is_preserved(make_pair):
    pair = make_pair("llama-nobos", batch_size=4, max_length=MAX_LENGTH)
    args = request_args()
    base = pair.new.loglikelihood(instances(args))
    order = list(range(len(args)))
    random.Random(7).shuffle(order)
    shuffled = pair.new.loglikelihood(instances([args[i] for i in order]))
    for pos, i in enumerate(order):
        assert abs(shuffled[pos][0] - base[i][0]) <= TOL and shuffled[pos][1] == base[i][1]


@pytest.mark.parametrize("subtree_tokens, pack_tokens", [(1, 0), (16, 16), (64, 64)])
def test_row_budgets(make_pair, subtree_tokens, pack_tokens):
    # (1, 0): every node is its own row and every child waits for its parent's cache;
    # (64, 64): whole subtrees and packed siblings share rows
    pair = make_pair("gpt2", batch_size=3, max_length=MAX_LENGTH)
    reqs = instances(request_args())
    want = pair.stock.loglikelihood(reqs)
    import instructeval_tasks.backend as backend

    original = backend.TreeEvaluator.__init__

    def budgets(self, tree, spec, token_budget, **kwargs):
        kwargs.update(subtree_tokens=subtree_tokens, pack_tokens=pack_tokens)
        original(self, tree, spec, token_budget, **kwargs)

    assert pair.new._ie_unsupported(10) is None  # the self-check runs with the real budgets
    backend.TreeEvaluator.__init__ = budgets
    try:
        pair.new.prefix_stats = {}
        got = pair.new.loglikelihood(reqs)
    finally:
        backend.TreeEvaluator.__init__ = original
    stats = pair.new.prefix_stats
    if subtree_tokens == 1:  # one row per tree node, one pass per tree level at least
        assert stats["rows"] > 20 and stats["forward_calls"] >= 3, stats
    assert max(abs(a[0] - b[0]) for a, b in zip(want, got)) <= TOL
    assert [a[1] for a in want] == [b[1] for b in got]


def test_softmax_dtype_is_respected(model_dirs):
    import torch
    from lm_eval.models.huggingface import HFLM

    from instructeval_tasks.backend import InstructEvalHFLM

    args = dict(pretrained=str(model_dirs["gpt2"]), dtype="float32", device="cpu", batch_size=8, softmax_dtype="float16")
    stock, new = HFLM(**args), InstructEvalHFLM(**args)
    assert new.softmax_dtype == torch.float16
    reqs = instances(request_args()[:12])
    want, got = stock.loglikelihood(reqs), new.loglikelihood(reqs)
    # identical fp16 log-softmax, summed in fp16 as HFLM does
    assert max(abs(a[0] - b[0]) for a, b in zip(want, got)) <= 1e-2
    assert [a[1] for a in want] == [b[1] for b in got]


def test_rolling_and_disabled_use_the_stock_code(make_pair, model_dirs):
    from instructeval_tasks.backend import InstructEvalHFLM

    pair = make_pair("gpt2", batch_size=2, max_length=MAX_LENGTH)
    texts = [Instance("loglikelihood_rolling", {}, (t,), i) for i, t in enumerate(["hello world " * 20, "Category: World"])]
    want = pair.stock.loglikelihood_rolling(texts)
    got = pair.new.loglikelihood_rolling(texts)
    assert got == pytest.approx(want, abs=TOL)

    off = InstructEvalHFLM(pretrained=str(model_dirs["gpt2"]), dtype="float32", device="cpu", batch_size=2,
                           max_length=MAX_LENGTH, prefix_sharing="false")
    reqs = instances(request_args()[:8])
    off.prefix_stats = {}
    assert off.loglikelihood(reqs) == pair.stock.loglikelihood(reqs)  # the very same code path
    assert off.prefix_stats == {}


def test_unsupported_model_falls_back_with_a_reason(make_pair, caplog):
    pair = make_pair("llama-bos", batch_size=8)
    model = pair.new.model
    saved = model.config._attn_implementation
    try:
        model.config._attn_implementation = "flash_attention_2"  # not run: only the check reads it
        assert "attention implementation" in pair.new._ie_unsupported(10)
    finally:
        model.config._attn_implementation = saved
    assert pair.new._ie_unsupported(10) is None


@pytest.mark.parametrize("model", ["gpt2", "llama-nobos"])
def test_eager_attention_equals_stock(make_pair, model):
    # eager attention takes the tree mask as an additive float mask
    pair = make_pair(model, batch_size=4, max_length=MAX_LENGTH, attn_implementation="eager")
    assert pair.new.model.config._attn_implementation == "eager"
    reqs = instances(request_args())
    want, got = pair.stock.loglikelihood(reqs), pair.new.loglikelihood(reqs)
    assert pair.new.prefix_stats.get("distinct_tokens")
    assert max(abs(a[0] - b[0]) for a, b in zip(want, got)) <= TOL
    assert [a[1] for a in want] == [b[1] for b in got]


@pytest.mark.parametrize("mode", ["last", "none"])
def test_other_logits_modes(make_pair, mode):
    # models whose forward takes no boolean (or no) logits_to_keep
    pair = make_pair("llama-bos", batch_size=4, max_length=MAX_LENGTH)
    spec = pair.new._ie_spec()
    saved = spec.logits_mode
    try:
        spec.logits_mode = mode
        reqs = instances(request_args())
        want, got = pair.stock.loglikelihood(reqs), pair.new.loglikelihood(reqs)
    finally:
        spec.logits_mode = saved
    assert pair.new.prefix_stats.get("distinct_tokens")
    assert max(abs(a[0] - b[0]) for a, b in zip(want, got)) <= TOL
    assert [a[1] for a in want] == [b[1] for b in got]


def test_add_bos_token_model_arg(make_pair):
    # add_bos_token=True on a tokenizer that adds no BOS by default (HFLM passes add_special_tokens=True)
    pair = make_pair("llama-nobos", batch_size=8, max_length=MAX_LENGTH, add_bos_token=True)
    reqs = instances(request_args())
    want, got = pair.stock.loglikelihood(reqs), pair.new.loglikelihood(reqs)
    assert pair.new.prefix_stats.get("distinct_tokens")
    assert max(abs(a[0] - b[0]) for a, b in zip(want, got)) <= TOL
    assert [a[1] for a in want] == [b[1] for b in got]
    # the same tokens as hf (transformers 5.x then adds the BOS; 4.57's fast tokenizer adds none without a template)
    assert pair.new.tok_encode("Category: World") == pair.stock.tok_encode("Category: World")
    import transformers

    if int(transformers.__version__.split(".")[0]) >= 5:
        assert pair.new.tok_encode("Category: World")[0] == pair.new.tokenizer.bos_token_id
