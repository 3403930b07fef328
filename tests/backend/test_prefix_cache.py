"""``prefix_cache_memory``: the KV of shared prefixes kept from one log-likelihood call to the next.

A later call whose requests start with a prefix an earlier call shared computes fewer positions, and
its scores stay the stock backend's (fp32, within 1e-4), on a GPT-2 and on Llamas with and without
BOS; a position a request scores is never taken from the cache; the cache stays within its size.
"""

from __future__ import annotations

import pytest
import torch
from lm_eval.api.instance import Instance

from instructeval_tasks.backend.prefix_cache import PrefixCache
from instructeval_tasks.backend.tree import PrefixTree

TOL = 1e-4
INSTRUCTIONS = ["Solve the following task:\n\n", "Find the answer below:\n\n", "Complete the problem.\n\n"]
DOCS = ["Fears for pension after talks.", "Goalkeeper saves late penalty.", "Robot learns to fold laundry.",
        "Markets rally on jobs data.", "Oil prices climb on supply fears.", "New chip doubles battery life."]
CHOICES = [" World", " Sports", " Business", " Sci/Tech"]


def requests(docs: list[str]) -> list[Instance]:
    """Every instruction on ``docs``, the four choices each (as a budgeted round pools them)."""
    args = [(f"{i}News: {d}\nCategory:", c) for i in INSTRUCTIONS for d in docs for c in CHOICES]
    return [Instance("loglikelihood", {}, a, n) for n, a in enumerate(args)]


def assert_stock(pair, reqs, got) -> None:
    want = pair.stock.loglikelihood(reqs)
    assert max(abs(a[0] - b[0]) for a, b in zip(want, got)) <= TOL
    assert [a[1] for a in want] == [b[1] for b in got]


@pytest.mark.parametrize("model", ["gpt2", "llama-bos", "llama-nobos"])
def test_a_later_call_starts_from_the_kept_prefixes(make_pair, model):
    cached = make_pair(model, batch_size=4, max_length=128)
    fresh = make_pair(model, batch_size=4, max_length=128, prefix_cache_memory="0")
    first, later = requests(DOCS[:3]), requests(DOCS[3:])
    cached.new._ie_prefix_cache = None  # the session's pair may hold prefixes of another test
    assert_stock(cached, first, cached.new.loglikelihood(first))
    got = cached.new.loglikelihood(later)
    stats = cached.new.prefix_stats
    fresh.new.loglikelihood(later)
    assert fresh.new.prefix_stats["cached_tokens"] == 0 and fresh.new._ie_cache() is None
    # every instruction's prefix (at least its first words) comes from the first call
    assert stats["cached_tokens"] >= 3 * 4, stats
    assert stats["distinct_tokens"] == fresh.new.prefix_stats["distinct_tokens"]
    assert stats["forward_tokens"] < fresh.new.prefix_stats["forward_tokens"]
    assert_stock(cached, later, got)


def test_the_same_requests_again_compute_only_what_is_scored(make_pair):
    pair = make_pair("llama-nobos", batch_size=4, max_length=128)
    pair.new._ie_prefix_cache = None
    reqs = requests(DOCS[:2])
    pair.new.loglikelihood(reqs)
    again = pair.new.loglikelihood(reqs)
    stats = pair.new.prefix_stats
    assert 0 < stats["cached_tokens"] < stats["distinct_tokens"]
    assert_stock(pair, reqs, again)


def test_a_scored_position_is_never_given():
    # the kept prefix covers the whole of the later sequences; their scored positions stay computed
    cache = PrefixCache(max_tokens=100)
    kv = [(torch.arange(6.0).view(1, 6, 1), torch.zeros(1, 6, 1))]
    cache.store((1, 2, 3, 4, 5, 6), kv)
    tree = PrefixTree([(1, 2, 3, 4), (1, 2, 3, 5)])
    for sid, position in ((0, 3), (1, 3), (0, 2)):  # both sequences score position 3, the first also 2
        tree.locate(sid, position).entries.append((len(tree.terminal), position, 0))
    assert cache.attach(tree) == 2
    top = tree.root.children[0]
    assert top.tokens() == (1, 2) and top.kv[0][0].flatten().tolist() == [0.0, 1.0]
    assert [child.kv for child in top.children] == [None]


def test_kept_prefixes_stay_within_the_size_and_drop_the_oldest():
    cache = PrefixCache(max_tokens=6)

    def kv(n):
        return [(torch.zeros(1, n, 1), torch.zeros(1, n, 1))]

    cache.store((1, 2), kv(2))
    cache.store((1, 2, 3), kv(3))  # replaces its own prefix
    assert list(cache.entries) == [(1, 2, 3)] and cache.tokens == 3
    cache.store((1, 2), kv(2))  # already covered
    assert list(cache.entries) == [(1, 2, 3)]
    cache.store((7, 8, 9), kv(3))
    cache.store((4, 5), kv(2))  # over 6 positions: the least recently used goes
    assert list(cache.entries) == [(7, 8, 9), (4, 5)] and cache.tokens == 5
    cache.store(tuple(range(10, 20)), kv(10))  # longer than the whole cache: not kept
    assert cache.tokens == 5


def test_prefix_cache_memory_must_be_a_size(model_dirs):
    from instructeval_tasks.backend import InstructEvalHFLM

    with pytest.raises(ValueError, match="prefix_cache_memory: cannot read .lots."):
        InstructEvalHFLM(pretrained=str(model_dirs["gpt2"]), dtype="float32", device="cpu", prefix_cache_memory="lots")


def test_a_call_keeps_its_most_shared_prefixes_within_the_size():
    # prefix (1, 2) is shared by four contexts, (1, 2, 3) and (1, 2, 4) by two each
    seqs = [(1, 2, 3, 5), (1, 2, 3, 6), (1, 2, 4, 7), (1, 2, 4, 8)]
    tree = PrefixTree(seqs)
    contexts = [(sid, 3) for sid in range(4)]
    assert sorted(n.ref[: n.end] for n in PrefixCache(100).shared_nodes(tree, contexts)) == [(1, 2), (1, 2, 3), (1, 2, 4)]
    kept = PrefixCache(5).shared_nodes(tree, contexts)  # paths of 2 + 3 positions fit, not a second 3
    assert [n.ref[: n.end] for n in kept] == [(1, 2), (1, 2, 3)]
