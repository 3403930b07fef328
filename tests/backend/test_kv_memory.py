"""``max_kv_memory``: the KV alive at once stays under the budget, and the scores stay the stock ones.

The KV is measured, not taken from the evaluator's own count: before each forward pass the bytes of
the KV tensors kept on tree nodes (those lent by the prefix cache are the cache's, bounded apart), plus the bytes of the cache the pass returns (every row's past
and its own tokens) and of the node KV the pass keeps.
"""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance

from instructeval_tasks.backend.evaluator import TreeEvaluator
from instructeval_tasks.backend.kv import cache_tensors, parse_bytes

TOL = 1e-4
INSTRUCTIONS = ["Solve the following task:", "Find the answer below:", "Complete the problem."]
DEMOS = ["News: Ceasefire talks resume in Geneva.\nCategory: World", "News: Home side wins the cup final.\nCategory: Sports",
         "News: Oil prices climb on supply fears.\nCategory: Business", "News: New chip doubles battery life.\nCategory: Sci/Tech"]
WORDS = "fears pension talks goalkeeper saves late penalty robot learns fold laundry markets rally jobs data".split()
CHOICES = [" World", " Sports", " Business", " Sci/Tech"]


def large_tree_requests() -> list[Instance]:
    """3 instructions x 2 demo orders x 24 docs x 4 choices: 576 requests, a few hundred tree nodes."""
    args = []
    for i, instruction in enumerate(INSTRUCTIONS):
        for order in (DEMOS, DEMOS[::-1]):
            prefix = instruction + "\n\n" + "\n\n".join(order) + "\n\n"
            for d in range(24):
                doc = " ".join(WORDS[(d * 3 + k * 5 + i) % len(WORDS)] for k in range(4 + d % 5))
                args += [(f"{prefix}News: {doc}.\nCategory:", c) for c in CHOICES]
    return [Instance("loglikelihood", {}, a, n) for n, a in enumerate(args)]


def _bytes(kv) -> int:
    return sum(t.numel() * t.element_size() for pair in kv for t in pair)


def measured_kv(monkeypatch) -> list[int]:
    """Record, per forward pass, the KV bytes alive right after the model returns."""
    seen: list[int] = []
    forward = TreeEvaluator._forward

    def measuring(self, rows, on_entries):
        # KV lent by the prefix cache is the cache's memory (prefix_cache_memory), not the call's
        held = sum(_bytes(n.kv) for n in self.tree.nodes() if n.kv is not None and id(n) not in self.kv.lent)
        kept = sum(n.length for row in rows for n in row.nodes if n.need_kv or self.keep_all_kv)
        call = self.spec.call

        def measured_call(*args, **kwargs):
            logits, cache = call(*args, **kwargs)
            layers = cache_tensors(cache)
            per_token = _bytes(layers) // (layers[0][0].shape[0] * layers[0][0].shape[2])
            seen.append(held + _bytes(layers) + kept * per_token)
            return logits, cache

        self.spec.call = measured_call
        try:
            forward(self, rows, on_entries)
        finally:
            self.spec.call = call

    monkeypatch.setattr(TreeEvaluator, "_forward", measuring)
    return seen


def test_large_tree_stays_under_max_kv_memory_with_stock_scores(make_pair, monkeypatch):
    pair = make_pair("llama-nobos", batch_size=64)
    reqs = large_tree_requests()
    want = pair.stock.loglikelihood(reqs)
    new = pair.new
    per_token = new._ie_kv_token_bytes()
    longest = max(len(new.tok_encode(r.args[0] + r.args[1])) for r in reqs)
    saved = new.max_kv_memory
    assert new._ie_unsupported(10) is None  # the self-check's own passes run before measuring
    try:
        new.max_kv_memory = None  # unbounded: how much KV this tree takes at this batch size
        seen = measured_kv(monkeypatch)
        free = new.loglikelihood(reqs)
        unbounded_peak, unbounded_passes = max(seen), len(seen)

        budget = 4 * longest * per_token  # a few sequences' worth
        assert unbounded_peak > 2 * budget, "the tree is too small to test the budget"
        new.max_kv_memory = budget
        seen.clear()
        got = new.loglikelihood(reqs)
    finally:
        new.max_kv_memory = saved
    stats = new.prefix_stats
    assert max(seen) <= budget, (max(seen), budget)
    assert stats["peak_kv_bytes"] <= budget and stats["kv_overruns"] == 0, stats
    assert len(seen) > unbounded_passes  # the budget split the work into more, smaller passes
    assert stats["forward_tokens"] <= 1.3 * stats["distinct_tokens"]  # still each distinct token about once
    for (lw, gw), (lg, gg), (lf, _), req in zip(want, got, free, reqs):
        assert abs(lw - lg) <= TOL and abs(lw - lf) <= TOL, req.args
        assert gw == gg, req.args


def test_a_budget_below_one_sequence_is_exceeded_by_one_row_only(make_pair, monkeypatch):
    pair = make_pair("gpt2", batch_size=8)
    reqs = large_tree_requests()[:48]
    want = pair.stock.loglikelihood(reqs)
    saved = pair.new.max_kv_memory
    assert pair.new._ie_unsupported(10) is None  # the self-check's own passes run before measuring
    try:
        pair.new.max_kv_memory = 1
        seen = measured_kv(monkeypatch)
        got = pair.new.loglikelihood(reqs)
    finally:
        pair.new.max_kv_memory = saved
    assert pair.new.prefix_stats["kv_overruns"] == len(seen) > 0
    assert pair.new.prefix_stats["rows"] == len(seen)  # one row per pass
    assert max(abs(a[0] - b[0]) for a, b in zip(want, got)) <= TOL


@pytest.mark.parametrize("text, size", [("1GB", 10**9), ("512MB", 512 * 10**6), ("1.5GiB", 3 * 2**29),
                                        ("300 kib", 300 * 1024), (4096, 4096), ("2e9", 2 * 10**9), ("none", None)])
def test_max_kv_memory_sizes(text, size):
    assert parse_bytes(text) == size


@pytest.mark.parametrize("text", ["1 GBytes", "lots", "-5", "0"])
def test_bad_max_kv_memory_names_the_argument(text):
    with pytest.raises(ValueError, match="max_kv_memory"):
        parse_bytes(text)


def test_bad_max_kv_memory_fails_before_loading(model_dirs):
    from instructeval_tasks.backend import InstructEvalHFLM

    with pytest.raises(ValueError, match="max_kv_memory"):
        InstructEvalHFLM(pretrained=str(model_dirs["gpt2"]), device="cpu", max_kv_memory="lots")
