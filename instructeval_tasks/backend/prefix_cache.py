"""Keys and values of shared prompt prefixes, kept from one call to the next.

A sweep scores one instruction (with its demos) in several harness calls (log-likelihood or greedy
generation): a budgeted grid's first slice and its rounds each evaluate a few items of every
instruction, a pooled call holds a few items of many. Each call's tree computes the prefixes its
own requests share once, but every call recomputed the instruction. After each call the cache
keeps the KV of the call's shared prefixes (each node of its tree that two or more distinct
contexts pass through); before the next call each node at the top of the new tree takes the KV of
its longest common token prefix with a kept one, cut there (``PrefixTree.split``), and the
evaluator starts below it. At most ``max_tokens`` KV positions are kept, the least recently used
dropped first.

Exactness: the KV of position ``j`` is a function of tokens ``0..j`` alone (causal attention, the row
starts at position 0), so any sequence that begins with a kept prefix's first ``c`` tokens has those
positions' KV; the cache belongs to one model object, whose weights, dtype and attention do not
change. The scores agree with recomputation to float rounding (the same positions computed in
another batch), as the evaluator's own batching does.

Example (token ids; the KV is one layer of one head, one value per position):
    >>> import torch
    >>> from .tree import PrefixTree
    >>> cache = PrefixCache(max_tokens=100)
    >>> first = PrefixTree([(5, 6, 7, 1), (5, 6, 7, 2)])
    >>> [n.tokens() for n in cache.shared_nodes(first, [(0, 3), (1, 3)])]  # contexts 5 6 7 1 and 5 6 7 2
    [(5, 6, 7)]
    >>> cache.store((5, 6, 7), [(torch.arange(3.).view(1, 3, 1), torch.zeros(1, 3, 1))])
    >>> later = PrefixTree([(5, 6, 9, 3), (5, 6, 9, 4)])
    >>> cache.attach(later)  # positions given: 5 6
    2
    >>> top = later.root.children[0]; (top.tokens(), top.kv[0][0].flatten().tolist())
    ((5, 6), [0.0, 1.0])
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
import torch

from .tree import Node, PrefixTree, common_prefix_length

KV = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys, values [heads, positions, dim]


class PrefixCache:
    """The KV of token prefixes (each from position 0), at most ``max_tokens`` positions in all."""

    MAX_KEPT_PER_CALL = 256  # the most prefixes one call adds (each is compared with the kept ones)

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max(0, int(max_tokens))
        self.entries: OrderedDict[tuple[int, ...], KV] = OrderedDict()
        self.arrays: dict[tuple[int, ...], np.ndarray] = {}
        self.tokens = 0

    # ------------------------------------------------------------------ after a call: keep

    def shared_nodes(self, tree: PrefixTree, contexts: list[tuple[int, int]]) -> list[Node]:
        """The nodes whose path KV a call keeps, most shared first: every node that two or more of
        the call's distinct contexts pass through (an instruction's prefix, with its demos, is shared
        by its items' contexts; an item's answer choices share one context). ``contexts`` holds a
        ``(sequence id, position of the context's last token)`` per request (the first position it scores).
        At most ``MAX_KEPT_PER_CALL`` nodes, whose paths together fit in the cache."""
        ends = {(tree.locate(sid, last), last) for sid, last in contexts}
        below: dict[Node, int] = {}
        for node, _ in ends:
            while node.parent is not None:
                below[node] = below.get(node, 0) + 1
                node = node.parent
        chosen, tokens = [], 0
        shared = [node for node, n in below.items() if n >= 2]
        for node in sorted(shared, key=lambda n: (-below[n], n.end, tuple(n.ref[: n.end]))):
            if len(chosen) == self.MAX_KEPT_PER_CALL:
                break
            if tokens + node.end <= self.max_tokens:  # each is copied whole when computed: bounded here
                chosen.append(node)
                tokens += node.end
        return chosen

    def store(self, tokens: tuple[int, ...], kv: KV) -> None:
        """Keep ``kv`` (the KV of positions ``0..len(tokens)-1``) for ``tokens``; a kept prefix of
        ``tokens`` is replaced, and ``tokens`` is not kept when a kept sequence already starts with it."""
        n = len(tokens)
        if not n or n > self.max_tokens:
            return
        array = np.asarray(tokens, dtype=np.int64)
        for key, other in list(self.arrays.items()):
            common = common_prefix_length(array, other)
            if common == n:  # already covered by a longer (or equal) kept prefix
                self.entries.move_to_end(key)
                return
            if common == len(other):
                self._drop(key)
        self.entries[tokens] = kv
        self.arrays[tokens] = array
        self.tokens += n
        while self.tokens > self.max_tokens:
            self._drop(next(iter(self.entries)))

    def _drop(self, key: tuple[int, ...]) -> None:
        del self.entries[key]
        del self.arrays[key]
        self.tokens -= len(key)

    # ------------------------------------------------------------------ one call

    def use(self, tree: PrefixTree, evaluator: Any, contexts: list[tuple[int, int]]) -> None:
        """Before ``evaluator`` (a ``TreeEvaluator`` of ``tree``) runs: give the tree's top the kept
        KV (``attach``) and have the evaluator hand back the path KV of this call's shared nodes
        (``shared_nodes`` of ``contexts``), which are kept when computed."""
        shared = self.shared_nodes(tree, contexts)  # before ``attach`` cuts nodes
        self.attach(tree)
        evaluator.export = {n for n in shared if n.kv is None}  # a node given whole is kept already
        evaluator.on_export = lambda node, kv: self.store(tuple(node.ref[: node.end]), kv)

    # ------------------------------------------------------------------ before a call: give

    def attach(self, tree: PrefixTree) -> int:
        """Give the top of ``tree`` the kept KV: each node whose path starts with a kept prefix gets
        its positions' KV (``node.kv``), a node the prefix ends inside is cut there first, and the
        children of a node given whole are looked at in turn. A position a request scores is never
        given (its logits are needed). Returns the number of positions given."""
        given = 0
        todo = [(node, list(self.arrays.items())) for node in tree.root.children]
        while todo:
            node, candidates = todo.pop()
            path = np.asarray(node.ref[: node.end], dtype=np.int64)
            commons = [(key, array, common_prefix_length(array, path)) for key, array in candidates]
            best, reach = None, node.start
            for key, _, common in commons:
                if common > reach:
                    best, reach = key, common
            if best is None:
                continue
            if node.entries:
                reach = min(reach, min(j for _, j, _ in node.entries))
            if reach <= node.start:
                continue
            self.entries.move_to_end(best)
            whole = reach == node.end
            if not whole:
                node = tree.split(node, reach)
            node.kv = [(k[:, node.start : node.end], v[:, node.start : node.end]) for k, v in self.entries[best]]
            given += node.length
            if whole:
                below = [(key, array) for key, array, common in commons if common == node.end]
                todo.extend((child, below) for child in node.children)
        return given
