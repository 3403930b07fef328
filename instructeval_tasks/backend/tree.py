"""The token prefix tree: every distinct token prefix of the model's input rows, once.

Every request becomes one *input sequence* of token ids (for log-likelihood: context plus all but
the last continuation token, exactly the row the stock ``hf`` backend feeds the model; for
generation: the context). The sequences are put in a radix tree (a trie whose single-child chains
are merged into one node), so every distinct token prefix is one path and every token position that
any request needs is computed exactly once:

    root ─ "instruction" ─┬─ "demos (seed 0)" ─┬─ "doc 1 text"  ─┬─ (choice " World" ends here)
                          │                    │                 └─ " Sci" "/"   (choice " Sci/Tech")
                          │                    └─ "doc 2 text" ...
                          └─ "demos (seed 1)" ─ ...

Example:
    >>> tree = PrefixTree([(1, 2, 3), (1, 2, 4), (5,)])
    >>> tree.token_count  # 1 2 3 / 4 / 5
    5
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

class Node:
    """One radix-tree node: the tokens ``ref[start:end]`` at absolute positions ``start..end-1``."""

    __slots__ = ("start", "end", "ref", "parent", "children", "size", "entries", "kv", "users", "need_kv", "terminal")

    def __init__(self, start: int, end: int, ref: Sequence[int], parent: Node | None) -> None:
        self.start, self.end, self.ref, self.parent = start, end, ref, parent
        self.children: list[Node] = []
        self.size = 0  # tokens in this node's subtree, itself included
        self.entries: list[tuple[int, int, int]] = []  # (entry id, absolute position, target token or -1)
        self.kv: list[tuple[torch.Tensor, torch.Tensor]] | None = None  # own KV per layer, [heads, len, dim]
        self.users = 0  # pending consumers of this node's KV (rows, groups, decodes below it)
        self.need_kv = False
        self.terminal: list[int] = []  # ids of the sequences that end at this node

    @property
    def length(self) -> int:
        return self.end - self.start

    def tokens(self) -> Sequence[int]:
        return self.ref[self.start : self.end]

    def path(self) -> list[Node]:
        """The nodes from the root's first child down to this node (the root itself excluded)."""
        out, node = [], self
        while node.parent is not None:
            out.append(node)
            node = node.parent
        out.reverse()
        return out


def common_prefix_length(a: np.ndarray, b: np.ndarray) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if diff.size else n


class PrefixTree:
    """Radix tree over distinct, non-empty token sequences; ``terminal[i]`` is where ``seqs[i]`` ends."""

    def __init__(self, seqs: Sequence[Sequence[int]]) -> None:
        self.root = Node(0, 0, (), None)
        self.terminal: list[Node] = [self.root] * len(seqs)
        order = sorted(range(len(seqs)), key=lambda i: seqs[i])
        stack = [self.root]  # the rightmost path, by increasing depth
        prev: np.ndarray | None = None
        for i in order:
            seq = seqs[i]
            if not len(seq):
                raise ValueError("empty token sequence")
            current = np.asarray(seq, dtype=np.int64)
            shared = 0 if prev is None else common_prefix_length(prev, current)
            last = None
            while stack[-1].end > shared:
                last = stack.pop()
            top = stack[-1]
            if top.end < shared:  # split `last` (top's newest child) at the shared depth
                mid = Node(top.end, shared, last.ref, top)
                top.children[-1] = mid
                mid.children.append(last)
                last.parent, last.start = mid, shared
                stack.append(mid)
                top = mid
            if len(seq) == shared:  # impossible for sorted distinct sequences; kept as a guard
                raise ValueError("duplicate token sequence")
            node = Node(shared, len(seq), seq, top)
            top.children.append(node)
            stack.append(node)
            node.terminal.append(i)
            self.terminal[i] = node
            prev = current
        # subtree sizes, children before parents
        for node in [*reversed(list(self.nodes())), self.root]:
            node.size = node.length + sum(c.size for c in node.children)

    def nodes(self):
        """Every node except the root, parents before children."""
        todo = list(reversed(self.root.children))
        while todo:
            node = todo.pop()
            yield node
            todo.extend(reversed(node.children))

    @property
    def token_count(self) -> int:
        """Distinct token positions: the least any prefix-sharing evaluation must compute."""
        return self.root.size

    def split(self, node: Node, at: int) -> Node:
        """Cut ``node`` at absolute position ``at`` (``node.start < at < node.end``) into a new parent
        holding ``ref[start:at]`` and ``node`` itself, now ``ref[at:end]`` with its children, entries
        and terminals; returns the new parent. Every entry of ``node`` must lie at or after ``at``.

            >>> tree = PrefixTree([(1, 2, 3), (1, 2, 4)])
            >>> top = tree.split(tree.root.children[0], 1)
            >>> (top.tokens(), [c.tokens() for c in top.children], tree.token_count)
            ((1,), [(2,)], 4)
        """
        if not node.start < at < node.end:
            raise ValueError(f"cannot split a node of positions {node.start}..{node.end - 1} at {at}")
        if any(j < at for _, j, _ in node.entries):
            raise ValueError("a scored position lies above the cut")
        parent = node.parent
        top = Node(node.start, at, node.ref, parent)
        parent.children[parent.children.index(node)] = top
        top.children.append(node)
        node.parent, node.start = top, at
        top.size = node.size
        node.size -= top.length
        return top

    def locate(self, seq_id: int, position: int) -> Node:
        node = self.terminal[seq_id]
        while node.start > position:
            node = node.parent
        return node
