"""The units the evaluator schedules: groups of children waiting for a row, and batch rows.

A *row* (one batch row of a forward pass) is a fragment of the tree: nodes below a node ``past``
whose KV is already known, laid out depth first, each at a column offset; its tokens attend to the
past's KV and, inside the row, to their own ancestors only (see ``masks``). A *group* holds the
children of one node that still wait for a row, smallest subtree first.

Example:
    >>> from .tree import PrefixTree
    >>> tree = PrefixTree([(1, 2, 3), (1, 2, 4)])
    >>> row = Row(tree.root); row.add_subtree(tree.root.children[0]); (row.length, row.cols)
    (4, [0, 2, 3])
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from .tree import Node


@dataclass
class Group:
    """Children of ``parent`` that wait for a row; ``parent``'s KV is known. Sorted by subtree size."""

    parent: Node
    items: list[Node]
    sizes: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.items.sort(key=lambda n: n.size)
        self.sizes = [n.size for n in self.items]

    def pop(self, at: int = -1) -> Node:
        self.sizes.pop(at)
        return self.items.pop(at)

    def pop_fitting(self, budget: int) -> Node | None:
        at = bisect.bisect_right(self.sizes, budget) - 1
        return self.pop(at) if at >= 0 else None


@dataclass
class Row:
    """One batch row: nodes below ``past`` in depth-first order, with their column offsets."""

    past: Node
    nodes: list[Node] = field(default_factory=list)
    cols: list[int] = field(default_factory=list)
    length: int = 0
    deferred: list[Group] = field(default_factory=list)  # children that wait for this row's KV

    def add(self, node: Node) -> None:
        self.nodes.append(node)
        self.cols.append(self.length)
        self.length += node.length

    def add_subtree(self, node: Node) -> None:
        todo = [node]
        while todo:
            n = todo.pop()
            self.add(n)
            todo.extend(reversed(n.children))
