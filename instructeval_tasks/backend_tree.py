"""The token prefix tree and the batched evaluator behind ``InstructEvalHFLM`` (``backend.py``).

Every request becomes one *input sequence* of token ids (for log-likelihood: context plus all but
the last continuation token, exactly the row the stock ``hf`` backend feeds the model; for
generation: the context). The sequences are put in a radix tree (a trie whose single-child chains
are merged into one node), so every distinct token prefix is one path and every token position that
any request needs is computed exactly once:

    root ─ "instruction" ─┬─ "demos (seed 0)" ─┬─ "doc 1 text"  ─┬─ (choice " World" ends here)
                          │                    │                 └─ " Sci" "/"   (choice " Sci/Tech")
                          │                    └─ "doc 2 text" ...
                          └─ "demos (seed 1)" ─ ...

The tree is evaluated top-down in batched forward passes. One batch row is a *fragment*: a node
below a node ``q`` whose key/value cache (KV) is already known, with as much of its subtree as fits
(a subtree no longer than the longest sequence is never split; tiny sibling subtrees may share a
row), laid out depth first. The row attends to the KV of ``q``'s path (the "past", left-padded to
the longest past of the batch) and, inside the row, every token attends only to its own ancestors
(a tree-shaped 4D attention mask), with the true position ids. A node whose children did not fit in
its row keeps its KV, and its children are scheduled next (depth first, so finished subtrees free
their KV early). Built rows wait in a pool sorted by length; a pass takes the longest rows that fit
``batch_size`` x (longest sequence) tokens, so padding stays small.

For log-likelihood the logits are taken only at the positions a request scores; for generation the
last context position gives the first greedy token and the tree's KV is the prompt cache from which
each request is decoded greedily.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------- the tree


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


def _lcp(a: np.ndarray, b: np.ndarray) -> int:
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
            shared = 0 if prev is None else _lcp(prev, current)
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

    def locate(self, seq_id: int, position: int) -> Node:
        node = self.terminal[seq_id]
        while node.start > position:
            node = node.parent
        return node


# ----------------------------------------------------------------------------------- cache helpers


def make_cache(kv: list[tuple[torch.Tensor, torch.Tensor]] | None):
    """A transformers ``DynamicCache`` holding ``kv`` ([batch, heads, len, dim] per layer), or empty."""
    from transformers.cache_utils import DynamicCache

    if kv is None:
        return DynamicCache()
    try:
        from transformers.cache_utils import DynamicLayer
    except ImportError:  # transformers < 4.56: the legacy tuple format
        return DynamicCache.from_legacy_cache(tuple(kv))
    cache = DynamicCache()
    for keys, values in kv:
        layer = DynamicLayer()
        layer.lazy_initialization(keys, values)
        layer.keys, layer.values = keys, values
        cache.layers.append(layer)
    return cache


def cache_tensors(cache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "key_cache"):
        return list(zip(cache.key_cache, cache.value_cache))
    return [(k, v) for k, v, *_ in cache]


# ----------------------------------------------------------------------------------- scheduling


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


def _incref(node: Node) -> None:
    while node.parent is not None:
        node.users += 1
        node = node.parent


def _decref(node: Node) -> None:
    while node.parent is not None:
        node.users -= 1
        if node.users <= 0:
            node.users = 0
            node.kv = None
        node = node.parent


# ----------------------------------------------------------------------------------- the evaluator


@dataclass
class ModelSpec:
    """What the evaluator needs to know about the model and how to call it."""

    call: Callable[..., tuple[torch.Tensor, Any]]  # (input_ids, attention_mask, position_ids, past_key_values, logits_to_keep)
    device: torch.device
    mask_dtype: torch.dtype | None  # None: boolean masks (sdpa); else an additive float mask of this dtype (eager)
    logits_mode: str  # "mask": bool logits_to_keep; "last": int logits_to_keep; "none": full logits
    softmax_dtype: torch.dtype | None


class TreeEvaluator:
    """Evaluates a ``PrefixTree`` in forward passes of at most ``token_budget`` padded tokens.

    A row holds one node and as much of its subtree as fits in ``subtree_tokens`` (a subtree that
    fits is never split, so a request's scored tokens are normally in one row); siblings are packed
    into one row only while it stays within ``pack_tokens`` (packing saves rows but every token of
    a row attends, masked, over the whole row). Built rows wait in a pool; each pass takes the
    longest ones that fit the token budget, so rows of similar length share a pass (padding is what
    separates the forward tokens from the distinct-token bound)."""

    POOL_PASSES = 8  # rows of up to this many passes wait in the pool, sorted by length
    MIN_FILL = 0.75  # a pass takes no row shorter than this fraction of its longest (see ``run``)

    def __init__(self, tree: PrefixTree, spec: ModelSpec, token_budget: int, subtree_tokens: int,
                 pack_tokens: int = 32, keep_all_kv: bool = False) -> None:
        self.tree, self.spec = tree, spec
        self.token_budget = max(1, int(token_budget))
        self.subtree_tokens = max(1, int(subtree_tokens))
        self.pack_tokens = max(0, int(pack_tokens))
        self.keep_all_kv = keep_all_kv
        self.stats = {"forward_calls": 0, "forward_tokens": 0, "rows": 0}

    # ---------------------------------------------------------------- rows

    def _take_row(self, group: Group) -> Row:
        row = Row(group.parent)
        node = group.pop()
        if node.size <= self.subtree_tokens:
            row.add_subtree(node)
            while group.items and row.length < self.pack_tokens:
                more = group.pop_fitting(self.pack_tokens - row.length)
                if more is None:
                    break
                row.add_subtree(more)
            return row
        row.add(node)
        if node.children:
            kids = Group(node, list(node.children))
            while kids.items and row.length < self.subtree_tokens:
                more = kids.pop_fitting(self.subtree_tokens - row.length)
                if more is None:
                    break
                row.add_subtree(more)
            if kids.items:
                node.need_kv = True
                row.deferred.append(kids)
        return row

    # ---------------------------------------------------------------- one forward pass

    def _past(self, rows: list[Row], pmax: int) -> list[tuple[torch.Tensor, torch.Tensor]] | None:
        if pmax == 0:
            return None
        paths: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = {}
        for row in rows:
            if id(row.past) not in paths and row.past.parent is not None:
                segments = [n.kv for n in row.past.path()]
                if any(s is None for s in segments):
                    raise RuntimeError("internal error: a needed KV segment was released")
                paths[id(row.past)] = [
                    (torch.cat([s[i][0] for s in segments], dim=1), torch.cat([s[i][1] for s in segments], dim=1))
                    for i in range(len(segments[0]))
                ]
        if len({id(r.past) for r in rows}) == 1:  # one shared past: a broadcast view, no copy
            kv = paths[id(rows[0].past)]
            return [(k.unsqueeze(0).expand(len(rows), -1, -1, -1), v.unsqueeze(0).expand(len(rows), -1, -1, -1)) for k, v in kv]
        some = next(iter(paths.values()))
        out = []
        for i, (k0, v0) in enumerate(some):
            keys = k0.new_zeros((len(rows), k0.shape[0], pmax, k0.shape[2]))
            values = v0.new_zeros((len(rows), v0.shape[0], pmax, v0.shape[2]))
            for b, row in enumerate(rows):
                p = row.past.end
                if p:
                    k, v = paths[id(row.past)][i]
                    keys[b, :, pmax - p :] = k
                    values[b, :, pmax - p :] = v
            out.append((keys, values))
        return out

    def _mask(self, rows: list[Row], pmax: int, lmax: int) -> torch.Tensor:
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
            if row.length < lmax:  # padding queries attend to themselves only (no empty softmax rows)
                idx = torch.arange(row.length, lmax)
                mask[b, 0, idx, pmax + idx] = True
        mask = mask.to(self.spec.device)
        if self.spec.mask_dtype is not None:
            mask = torch.zeros(mask.shape, dtype=self.spec.mask_dtype, device=mask.device).masked_fill(
                ~mask, torch.finfo(self.spec.mask_dtype).min
            )
        return mask

    def _forward(self, rows: list[Row], on_entries: Callable[..., None]) -> None:
        device = self.spec.device
        lmax = max(r.length for r in rows)
        pmax = max(r.past.end for r in rows)
        ids = torch.zeros((len(rows), lmax), dtype=torch.long)
        pos = torch.zeros((len(rows), lmax), dtype=torch.long)
        # the positions whose logits are needed, row-major
        need: list[tuple[int, int]] = []
        entry_ids: list[int] = []
        entry_slot: list[int] = []
        entry_target: list[int] = []
        for b, row in enumerate(rows):
            ids[b, : row.length] = torch.tensor([t for n in row.nodes for t in n.tokens()], dtype=torch.long)
            pos[b, : row.length] = torch.tensor([p for n in row.nodes for p in range(n.start, n.end)], dtype=torch.long)
            cols: dict[int, int] = {}
            for node, c in zip(row.nodes, row.cols):
                for eid, j, target in node.entries:
                    col = c + j - node.start
                    if col not in cols:
                        cols[col] = len(cols)
                    entry_ids.append(eid)
                    entry_slot.append((b, col))  # resolved below
                    entry_target.append(target)
            need.extend((b, col) for col in sorted(cols))
        slot_of = {bc: i for i, bc in enumerate(need)}
        entry_index = [slot_of[bc] for bc in entry_slot]

        past = self._past(rows, pmax)
        cache = make_cache(past)
        mask = self._mask(rows, pmax, lmax)
        ids, pos = ids.to(device), pos.to(device)

        mode = self.spec.logits_mode
        if not need:
            keep: Any = 1 if mode != "none" else None
        elif mode == "mask":
            keep = torch.zeros((len(rows), lmax), dtype=torch.bool)
            for b, col in need:
                keep[b, col] = True
            keep = keep.to(device)
        elif mode == "last":
            keep = lmax - min(col for _, col in need)
        else:
            keep = None
        logits, cache = self.spec.call(ids, mask, pos, cache, keep)
        self.stats["forward_calls"] += 1
        self.stats["forward_tokens"] += int(ids.numel())
        self.stats["rows"] += len(rows)

        if need:
            if logits.dim() == 2:  # boolean logits_to_keep: already [len(need), vocab], row-major
                picked = logits
            else:
                offset = logits.shape[1] - lmax  # < 0 when only the last columns were kept
                bi = torch.tensor([b for b, _ in need], device=logits.device)
                ci = torch.tensor([c + offset for _, c in need], device=logits.device)
                picked = logits[bi, ci]
            index = torch.tensor(entry_index, dtype=torch.long, device=picked.device)
            targets = torch.tensor(entry_target, dtype=torch.long, device=picked.device)
            on_entries(entry_ids, picked, index, targets)

        # keep the KV of the nodes that later rows or decodes build on
        kv_nodes = [(b, node, c) for b, row in enumerate(rows) for node, c in zip(row.nodes, row.cols)
                    if node.need_kv or self.keep_all_kv]
        if kv_nodes:
            layers = cache_tensors(cache)
            for b, node, c in kv_nodes:
                lo, hi = pmax + c, pmax + c + node.length
                node.kv = [(k[b, :, lo:hi].clone(), v[b, :, lo:hi].clone()) for k, v in layers]

    # ---------------------------------------------------------------- the schedule

    def run(self, on_entries, on_ready: Callable[[list[Node]], None] | None = None,
            flush: Callable[[bool], None] | None = None) -> None:
        """Evaluate every node once. ``on_entries(entry_ids, logits, index, targets)`` receives the
        logits of the needed positions (``logits[index[i]]`` is entry ``entry_ids[i]``'s);
        ``on_ready(nodes)`` the nodes computed by one pass; ``flush(final)`` runs after each pass
        (generation decodes the contexts that are ready there)."""
        stack: list[Group] = []
        if self.tree.root.children:
            stack.append(Group(self.tree.root, list(self.tree.root.children)))
        pool: list[Row] = []
        pooled = 0
        while stack or pool:
            while stack and pooled < self.POOL_PASSES * self.token_budget:
                group = stack[-1]
                row = self._take_row(group)
                _incref(row.past)
                pool.append(row)
                pooled += row.length
                if not group.items:
                    stack.pop()
                    _decref(group.parent)
            pool.sort(key=lambda r: r.length, reverse=True)
            take, lmax = 1, pool[0].length
            while take < len(pool) and (take + 1) * lmax <= self.token_budget:
                # rows much shorter than the longest wait for a pass of their own, once this one is
                # worth running (padding is wasted compute)
                if pool[take].length < self.MIN_FILL * lmax and take * lmax >= self.token_budget // 4:
                    break
                take += 1
            rows, pool = pool[:take], pool[take:]
            pooled -= sum(r.length for r in rows)
            self._forward(rows, on_entries)
            for row in rows:  # their parents' KV is known now
                for kids in row.deferred:
                    _incref(kids.parent)
                    stack.append(kids)
            if on_ready is not None:
                on_ready([n for row in rows for n in row.nodes])
            for row in rows:
                _decref(row.past)
            for row in rows:  # KV nobody holds (e.g. generation terminals already decoded)
                for node in row.nodes:
                    if node.users == 0:
                        node.kv = None
            if flush is not None:
                flush(not stack and not pool)
        if flush is not None:
            flush(True)

    # ---------------------------------------------------------------- greedy decoding

    def decode(self, nodes: list[Node], first: list[int], max_new: int, eos: set[int],
               stopped: Callable[[list[int]], bool]) -> list[list[int]]:
        """Greedy continuation of the contexts ending at ``nodes`` (their KV known), ``first`` being
        each one's first generated token; stops a row at an EOS id, when ``stopped(tokens)``, or
        after ``max_new`` tokens."""
        spec = self.spec
        out = [[t] for t in first]
        active = [i for i, toks in enumerate(out) if not (toks[-1] in eos or len(toks) >= max_new or stopped(toks))]
        if not active:
            return out
        nodes_a = [nodes[i] for i in active]
        lens = [n.end for n in nodes_a]
        pmax = max(lens)
        # left-padded prompt KV
        paths: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = {}
        for n in nodes_a:
            if id(n) not in paths:
                segs = [m.kv for m in n.path()]
                paths[id(n)] = [(torch.cat([s[i][0] for s in segs], dim=1), torch.cat([s[i][1] for s in segs], dim=1))
                                for i in range(len(segs[0]))]
        kv = []
        for i, (k0, v0) in enumerate(next(iter(paths.values()))):
            keys = k0.new_zeros((len(nodes_a), k0.shape[0], pmax, k0.shape[2]))
            values = v0.new_zeros((len(nodes_a), v0.shape[0], pmax, v0.shape[2]))
            for b, n in enumerate(nodes_a):
                k, v = paths[id(n)][i]
                keys[b, :, pmax - n.end :] = k
                values[b, :, pmax - n.end :] = v
            kv.append((keys, values))
        del paths
        cache = make_cache(kv)
        del kv
        mask = torch.zeros((len(nodes_a), pmax), dtype=torch.long, device=spec.device)
        for b, n in enumerate(nodes_a):
            mask[b, pmax - n.end :] = 1
        pos = torch.tensor(lens, dtype=torch.long, device=spec.device)
        keep = 1 if spec.logits_mode != "none" else None
        while active:
            ids = torch.tensor([[out[i][-1]] for i in active], dtype=torch.long, device=spec.device)
            mask = torch.cat([mask, mask.new_ones((len(active), 1))], dim=1)
            logits, cache = spec.call(ids, mask, pos[:, None], cache, keep)
            self.stats["forward_calls"] += 1
            self.stats["forward_tokens"] += int(ids.numel())
            nxt = logits[:, -1].argmax(dim=-1).tolist()
            pos = pos + 1
            still = []
            for b, (i, tok) in enumerate(zip(active, nxt)):
                out[i].append(tok)
                if not (tok in eos or len(out[i]) >= max_new or stopped(out[i])):
                    still.append(b)
            if len(still) < len(active):
                if not still:
                    break
                sel = torch.tensor(still, dtype=torch.long, device=spec.device)
                cache.batch_select_indices(sel)
                mask, pos = mask[sel], pos[sel]
                active = [active[b] for b in still]
        return out
