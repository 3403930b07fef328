"""The token prefix tree and the evaluator's schedule, on plain token lists (no tokenizer)."""

from __future__ import annotations

import random

import pytest

from instructeval_tasks.backend.batch_rows import Group, Row
from instructeval_tasks.backend.tree import PrefixTree


def trie_size(seqs) -> int:
    return len({tuple(s[: i + 1]) for s in seqs for i in range(len(s))})


def random_seqs(seed: int, n: int = 60) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    prefixes = [[rng.randrange(50) for _ in range(rng.randrange(0, 12))] for _ in range(4)]
    seqs = set()
    while len(seqs) < n:
        p = rng.choice(prefixes)
        seqs.add(tuple(p + [rng.randrange(6) for _ in range(rng.randrange(1, 6))]))
    return sorted(seqs, key=lambda _: rng.random())


@pytest.mark.parametrize("seed", range(5))
def test_tree_holds_every_distinct_prefix_once(seed):
    seqs = random_seqs(seed)
    tree = PrefixTree(seqs)
    assert tree.token_count == trie_size(seqs)
    for i, seq in enumerate(seqs):
        node = tree.terminal[i]
        assert node.end == len(seq) and i in node.terminal
        path = node.path()
        assert [t for n in path for t in n.tokens()] == list(seq)
        assert path[0].start == 0 and all(a.end == b.start for a, b in zip(path, path[1:]))
        for j in range(len(seq)):
            located = tree.locate(i, j)
            assert located.start <= j < located.end and located in path
    for node in tree.nodes():
        assert node.length > 0
        assert node.size == node.length + sum(c.size for c in node.children)
        # a radix tree: no node with a single child unless a sequence ends there
        assert len(node.children) != 1 or node.terminal
        firsts = [c.tokens()[0] for c in node.children]
        assert len(firsts) == len(set(firsts))


def test_prefix_of_another_sequence_ends_at_an_inner_node():
    tree = PrefixTree([(1, 2, 3, 4), (1, 2), (1, 2, 5)])
    inner = tree.terminal[1]
    assert inner.tokens() == (1, 2) and len(inner.children) == 2
    assert tree.token_count == 5


def test_rejects_empty_and_duplicate_sequences():
    with pytest.raises(ValueError):
        PrefixTree([(1, 2), ()])
    with pytest.raises(ValueError):
        PrefixTree([(1, 2), (1, 2)])


def test_rows_pack_siblings_up_to_the_budget():
    tree = PrefixTree([(1,) * 10 + (k, 7, 7) for k in range(2, 12)])  # a 10-token prefix, 10 children of 3
    root_child = tree.root.children[0]
    group = Group(root_child, list(root_child.children))
    row = Row(root_child)
    while group.items:
        more = group.pop_fitting(9 - row.length)
        if more is None:
            break
        row.add_subtree(more)
    assert row.length == 9 and len(row.nodes) == 3
    assert row.cols == [0, 3, 6]
