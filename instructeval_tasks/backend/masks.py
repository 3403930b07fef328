"""The tree-shaped attention mask of one forward pass.

Row ``b`` of a pass is laid out as ``[left padding | past of row b | row b's tokens | padding]`` in
key columns ``0 .. pmax + lmax``: its past (``row.past.end`` tokens) is right-aligned to ``pmax``.
A token attends to its row's whole past and, inside the row, to the tokens of its own node up to
itself and to every ancestor node in the row; padding queries attend to themselves only (so no
softmax row is empty). The result is ``[rows, 1, lmax, pmax + lmax]``: boolean (``True`` = attend)
for sdpa, or additive (0 / dtype min) in ``mask_dtype`` for eager attention.

With a ``window`` (a sliding-attention layer's), a query at position ``q`` also sees only the keys
at positions ``k`` with ``q - k < window``, the rule transformers' ``sliding_window_overlay``
applies; the past's keys sit at positions ``0 .. p - 1``, the row's at their ``positions``.

Example:
    >>> from .tree import PrefixTree
    >>> from .batch_rows import Row
    >>> tree = PrefixTree([(1, 2, 3), (1, 2, 4)])
    >>> row = Row(tree.root); row.add_subtree(tree.root.children[0])
    >>> tree_mask([row], 0, 4, torch.device("cpu"), None)[0, 0].int().tolist()  # 4 sees 1 2, not 3
    [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 0, 1]]
"""

from __future__ import annotations

import torch

from .batch_rows import Row


def tree_mask(rows: list[Row], pmax: int, lmax: int, device: torch.device, mask_dtype: torch.dtype | None,
              window: int | None = None, positions: torch.Tensor | None = None) -> torch.Tensor:
    mask = torch.zeros((len(rows), 1, lmax, pmax + lmax), dtype=torch.bool)
    tril = torch.ones((lmax, lmax), dtype=torch.bool).tril()
    for b, row in enumerate(rows):
        p = row.past.end
        if p:
            mask[b, 0, :, pmax - p : pmax] = True
        where = {id(n): (c, n.length) for n, c in zip(row.nodes, row.cols)}
        for node, c in zip(row.nodes, row.cols):
            n = node.length
            mask[b, 0, c : c + n, pmax + c : pmax + c + n] = tril[:n, :n]
            up = node.parent
            while up is not row.past:
                ca, na = where[id(up)]
                mask[b, 0, c : c + n, pmax + ca : pmax + ca + na] = True
                up = up.parent
        if row.length < lmax:
            idx = torch.arange(row.length, lmax)
            mask[b, 0, idx, pmax + idx] = True
    if window is not None:
        if positions is None:
            raise ValueError("a windowed tree mask needs the rows' positions")
        mask &= _within_window(rows, pmax, positions.cpu(), window)
    mask = mask.to(device)
    if mask_dtype is not None:
        mask = torch.zeros(mask.shape, dtype=mask_dtype, device=mask.device).masked_fill(~mask, torch.finfo(mask_dtype).min)
    return mask


def _within_window(rows: list[Row], pmax: int, positions: torch.Tensor, window: int) -> torch.Tensor:
    """``[rows, 1, lmax, pmax + lmax]``: True where the key is fewer than ``window`` positions before the query."""
    keys = torch.zeros((len(rows), pmax + positions.shape[1]), dtype=torch.long)
    for b, row in enumerate(rows):
        p = row.past.end
        keys[b, pmax - p : pmax] = torch.arange(p)
    keys[:, pmax:] = positions
    return ((positions[:, :, None] - keys[:, None, :]) < window)[:, None]
