"""Greedy decoding from prompt caches kept on prefix-tree nodes.

Each context's prompt KV is the KV of its terminal node's path (computed once by the
``TreeEvaluator``, shared prefixes included); the contexts of one batch are left-padded to the
longest and advanced one token per step together, each row stopping on its own.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .evaluator import ForwardSpec
from .kv import make_cache, path_kv
from .tree import Node


class GreedyDecoder:
    """Advances a batch of contexts greedily; counts its forward passes and tokens in ``stats``."""

    def __init__(self, spec: ForwardSpec, stats: dict[str, int]) -> None:
        self.spec, self.stats = spec, stats

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
        paths = {id(n): path_kv(n) for n in nodes_a}
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
