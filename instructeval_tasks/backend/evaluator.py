"""The batched evaluator of a ``PrefixTree``: every distinct token position computed once.

The tree is evaluated top-down in batched forward passes. One batch row is a *fragment* (``rows.Row``):
a node below a node ``q`` whose key/value cache (KV) is already known, with as much of its subtree
as fits (a subtree no longer than the longest sequence is never split; tiny sibling subtrees may
share a row), laid out depth first. The row attends to the KV of ``q``'s path (the "past",
left-padded to the longest past of the pass) and, inside the row, every token attends only to its
own ancestors (``masks.tree_mask``), with the true position ids. A node whose children did not fit
in its row keeps its KV, and its children are scheduled next (depth first, so finished subtrees
free their KV early). Built rows wait in a pool sorted by length; a pass takes the longest rows
that fit both budgets:

- ``token_budget``: padded tokens per pass (``batch_size`` x the longest sequence, the most a stock
  ``hf`` batch holds);
- ``max_kv_tokens``: KV tokens alive during the pass, i.e. the KV kept on tree nodes, the cache
  the pass fills, ``rows x (longest past + longest row)`` (each row carries its own copy of its
  past, as the model's attention needs it), and the KV of this pass's nodes that later rows need.
  When the longest row does not fit, the longest one that does leads the pass; when none does,
  the row with the smallest KV footprint runs alone (rows that keep no KV only free it), so a
  budget below one sequence's KV is exceeded by that row (counted in ``stats["kv_overruns"]``).

For log-likelihood the logits are taken only at the positions a request scores; for generation the
last context position gives the first greedy token and the tree's KV is the prompt cache from which
``decoder.GreedyDecoder`` continues each request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .kv import NodeKV, cache_tensors, make_cache, path_kv
from .masks import tree_mask
from .batch_rows import Group, Row
from .tree import Node, PrefixTree


@dataclass
class ForwardSpec:
    """What the evaluator needs to know about the model and how to call it."""

    call: Callable[..., tuple[torch.Tensor, Any]]  # (input_ids, attention_mask, position_ids, past_key_values, logits_to_keep)
    device: torch.device
    mask_dtype: torch.dtype | None  # None: boolean masks (sdpa); else an additive float mask of this dtype (eager)
    logits_mode: str  # "mask": bool logits_to_keep; "last": int logits_to_keep; "none": full logits
    softmax_dtype: torch.dtype | None
    # each attention layer type's window ({"full_attention": None, "sliding_attention": 512}); empty:
    # no windowed layers. A pass whose positions reach a window gets one mask per layer type.
    windows: dict[str, int | None] = field(default_factory=dict)

    def masks(self, rows: list[Row], pmax: int, lmax: int, positions: torch.Tensor) -> torch.Tensor | dict[str, torch.Tensor]:
        """The attention mask(s) of one pass: one tree mask while every query is within every
        window, else a windowed mask per layer type (a dict when the model mixes types, as the
        models whose forward takes a mask per layer type do)."""
        reach = int(positions.max()) if positions.numel() else 0
        if not any(w is not None and reach >= w for w in self.windows.values()):
            return tree_mask(rows, pmax, lmax, self.device, self.mask_dtype)
        built: dict[int | None, torch.Tensor] = {}
        for window in self.windows.values():
            if window not in built:
                built[window] = tree_mask(rows, pmax, lmax, self.device, self.mask_dtype, window, positions)
        if len(self.windows) == 1:
            return next(iter(built.values()))
        return {kind: built[window] for kind, window in self.windows.items()}


class TreeEvaluator:
    """Evaluates a ``PrefixTree`` in forward passes within a token budget and a KV budget.

    A row holds one node and as much of its subtree as fits in ``subtree_tokens`` (a subtree that
    fits is never split, so a request's scored tokens are normally in one row); siblings are packed
    into one row only while it stays within ``pack_tokens`` (packing saves rows but every token of
    a row attends, masked, over the whole row). Built rows wait in a pool; each pass takes the
    longest ones that fit the budgets (see the module docstring), so rows of similar length share a
    pass (padding is what separates the forward tokens from the distinct-token bound)."""

    POOL_PASSES = 8  # rows of up to this many passes wait in the pool, sorted by length
    MIN_FILL = 0.75  # a pass takes no row shorter than this fraction of its longest (see ``run``)

    def __init__(self, tree: PrefixTree, spec: ForwardSpec, token_budget: int, subtree_tokens: int,
                 pack_tokens: int = 32, keep_all_kv: bool = False, max_kv_tokens: int | None = None) -> None:
        self.tree, self.spec = tree, spec
        self.token_budget = max(1, int(token_budget))
        self.subtree_tokens = max(1, int(subtree_tokens))
        self.pack_tokens = max(0, int(pack_tokens))
        self.keep_all_kv = keep_all_kv
        self.max_kv_tokens = None if max_kv_tokens is None else max(1, int(max_kv_tokens))
        self.kv = NodeKV()
        self.stats = {"forward_calls": 0, "forward_tokens": 0, "rows": 0, "peak_kv_tokens": 0, "kv_overruns": 0,
                      "cached_tokens": 0}
        # nodes whose path KV (positions 0..end-1) is handed to ``on_export`` once computed (``prefix_cache``)
        self.export: set[Node] = set()
        self.on_export: Callable[[Node, list[tuple[torch.Tensor, torch.Tensor]]], None] | None = None

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

    def _kept(self, row: Row) -> int:
        """KV tokens of ``row`` that stay on its nodes after the pass."""
        return sum(n.length for n in row.nodes if n.need_kv or self.keep_all_kv)

    def _kv_tokens(self, rows: list[Row]) -> int:
        """KV tokens alive right after a pass of ``rows``: the node KV held, the pass's cache, the KV it keeps."""
        lmax = max(r.length for r in rows)
        pmax = max(r.past.end for r in rows)
        return self.kv.tokens + len(rows) * (pmax + lmax) + sum(self._kept(r) for r in rows)

    def _select(self, pool: list[Row]) -> list[int]:
        """The pool indices (pool sorted longest first) of the rows the next pass takes.

        The pass is led by the longest row that fits the KV budget on its own (else by the row with
        the smallest KV footprint, which always makes progress: rows that keep no KV only release
        it), then takes the next rows while both budgets hold."""
        held = self.kv.tokens
        lead = 0
        if self.max_kv_tokens is not None:
            footprint = [self._kept(r) + r.past.end + r.length for r in pool]
            fits = [i for i, f in enumerate(footprint) if held + f <= self.max_kv_tokens]
            lead = fits[0] if fits else min(range(len(pool)), key=footprint.__getitem__)
        lmax = pool[lead].length
        pmax = pool[lead].past.end
        kept = held + self._kept(pool[lead])
        chosen = [lead]
        for i in range(lead + 1, len(pool)):
            nxt = pool[i]
            if (len(chosen) + 1) * lmax > self.token_budget:
                break
            more = self._kept(nxt)
            if self.max_kv_tokens is not None:
                if kept + more + (len(chosen) + 1) * (max(pmax, nxt.past.end) + lmax) > self.max_kv_tokens:
                    break
            # rows much shorter than the longest wait for a pass of their own, once this one is
            # worth running (padding is wasted compute)
            if nxt.length < self.MIN_FILL * lmax and len(chosen) * lmax >= self.token_budget // 4:
                break
            pmax = max(pmax, nxt.past.end)
            kept += more
            chosen.append(i)
        return chosen

    # ---------------------------------------------------------------- one forward pass

    def _past(self, rows: list[Row], pmax: int) -> list[tuple[torch.Tensor, torch.Tensor]] | None:
        if pmax == 0:
            return None
        paths = {id(row.past): path_kv(row.past) for row in rows if row.past.parent is not None}
        if len(paths) == 1 and all(row.past.end == pmax for row in rows):  # one shared past: a broadcast view
            kv = next(iter(paths.values()))
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

    def _forward(self, rows: list[Row], on_entries: Callable[..., None]) -> None:
        device = self.spec.device
        lmax = max(r.length for r in rows)
        pmax = max(r.past.end for r in rows)
        alive = self._kv_tokens(rows)
        self.stats["peak_kv_tokens"] = max(self.stats["peak_kv_tokens"], alive)
        if self.max_kv_tokens is not None and alive > self.max_kv_tokens:
            self.stats["kv_overruns"] += 1
        ids = torch.zeros((len(rows), lmax), dtype=torch.long)
        pos = torch.zeros((len(rows), lmax), dtype=torch.long)
        # the positions whose logits are needed, row-major
        need: list[tuple[int, int]] = []
        entry_ids: list[int] = []
        entry_slot: list[tuple[int, int]] = []
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
                    entry_slot.append((b, col))
                    entry_target.append(target)
            need.extend((b, col) for col in sorted(cols))
        slot_of = {bc: i for i, bc in enumerate(need)}
        entry_index = [slot_of[bc] for bc in entry_slot]

        cache = make_cache(self._past(rows, pmax))  # the padded past is owned by the cache alone
        mask = self.spec.masks(rows, pmax, lmax, pos)
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
        del mask
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
            del logits
            index = torch.tensor(entry_index, dtype=torch.long, device=picked.device)
            targets = torch.tensor(entry_target, dtype=torch.long, device=picked.device)
            on_entries(entry_ids, picked, index, targets)
        else:
            del logits

        # keep the KV of the nodes that later rows or decodes build on
        kv_nodes = [(b, node, c) for b, row in enumerate(rows) for node, c in zip(row.nodes, row.cols)
                    if node.need_kv or self.keep_all_kv]
        if kv_nodes:
            layers = cache_tensors(cache)
            for b, node, c in kv_nodes:
                lo, hi = pmax + c, pmax + c + node.length
                self.kv.keep(node, [(k[b, :, lo:hi].clone(), v[b, :, lo:hi].clone()) for k, v in layers])
        if self.export and self.on_export is not None:
            self._export(rows, pmax, cache)

    def _export(self, rows: list[Row], pmax: int, cache: Any) -> None:
        """Hand ``on_export`` the path KV of each exported node this pass computed: its row's past
        (right-aligned before column ``pmax``), then its ancestors inside the row, then itself."""
        layers = None
        for b, row in enumerate(rows):
            cols = {id(n): c for n, c in zip(row.nodes, row.cols)}
            for node in row.nodes:
                if node not in self.export:
                    continue
                chain, up = [], node
                while id(up) in cols:
                    chain.append(up)
                    up = up.parent
                spans = [(pmax - row.past.end, pmax)] if row.past.end else []
                spans += [(pmax + cols[id(n)], pmax + cols[id(n)] + n.length) for n in reversed(chain)]
                layers = layers if layers is not None else cache_tensors(cache)
                # torch.cat writes a new tensor: the pass's cache is not kept alive by it
                self.on_export(node, [(torch.cat([k[b, :, lo:hi] for lo, hi in spans], dim=1),
                                       torch.cat([v[b, :, lo:hi] for lo, hi in spans], dim=1))
                                      for k, v in layers])

    # ---------------------------------------------------------------- the schedule

    def _start_below_given(self, node: Node, stack: list[Group]) -> None:
        """Schedule the children of ``node`` (the root, or a node whose KV was given before the run by
        ``prefix_cache``): those given too are walked into, the others wait in one group."""
        given = [c for c in node.children if c.kv is not None]
        waiting = [c for c in node.children if c.kv is None]
        for child in given:
            self.kv.lend(child, child.kv)
            self.stats["cached_tokens"] += child.length
            self._start_below_given(child, stack)
        if waiting:
            self.kv.hold(node)
            stack.append(Group(node, waiting))

    def run(self, on_entries, on_ready: Callable[[list[Node]], None] | None = None,
            flush: Callable[[bool], None] | None = None) -> None:
        """Evaluate every node once. ``on_entries(entry_ids, logits, index, targets)`` receives the
        logits of the needed positions (``logits[index[i]]`` is entry ``entry_ids[i]``'s);
        ``on_ready(nodes)`` the nodes computed by one pass; ``flush(final)`` runs after each pass
        (generation decodes the contexts that are ready there)."""
        stack: list[Group] = []
        self._start_below_given(self.tree.root, stack)
        pool: list[Row] = []
        pooled = 0
        while stack or pool:
            while stack and pooled < self.POOL_PASSES * self.token_budget:
                group = stack[-1]
                row = self._take_row(group)
                self.kv.hold(row.past)
                pool.append(row)
                pooled += row.length
                if not group.items:
                    stack.pop()
                    self.kv.release(group.parent)
            pool.sort(key=lambda r: r.length, reverse=True)
            chosen = set(self._select(pool))
            rows = [r for i, r in enumerate(pool) if i in chosen]
            pool = [r for i, r in enumerate(pool) if i not in chosen]
            pooled -= sum(r.length for r in rows)
            self._forward(rows, on_entries)
            for row in rows:  # their parents' KV is known now
                for kids in row.deferred:
                    self.kv.hold(kids.parent)
                    stack.append(kids)
            if on_ready is not None:
                on_ready([n for row in rows for n in row.nodes])
            for row in rows:
                self.kv.release(row.past)
            for row in rows:  # KV nobody holds (e.g. generation terminals already decoded)
                for node in row.nodes:
                    if node.users == 0:
                        self.kv.drop(node)
            if flush is not None:
                flush(not stack and not pool)
        if flush is not None:
            flush(True)
