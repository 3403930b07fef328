"""Log-likelihood requests scored through the prefix tree, as ``HFLM._loglikelihood_tokens`` scores them.

Each request ``(context tokens, continuation tokens)`` becomes the row the stock backend feeds the
model, ``(context + continuation)[-(max_length + 1):][:-1]``; identical rows are one tree sequence.
Every continuation token is an *entry* ``(entry id, absolute position, target token)`` on the tree
node holding that position; the evaluator hands back the logits of the entries' positions, and a
request's score is the sum of its entries' log-softmax values in the softmax dtype (``is_greedy``:
every target is the argmax), exactly the stock sums.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch
import torch.nn.functional as F

from .evaluator import TreeEvaluator
from .prefix_cache import PrefixCache
from .tree import PrefixTree

log = logging.getLogger(__name__)


class TreeLoglikelihood:
    """Builds the tree of a request list and sums each request's continuation log-probs."""

    def __init__(self, max_length: int, softmax_dtype: torch.dtype | None) -> None:
        self.max_length, self.softmax_dtype = max_length, softmax_dtype
        self.seqs: list[tuple[int, ...]] = []
        self.plan: list[tuple[int, int, list[int]]] = []  # per request: (sequence id, first scored position, targets)

    def add_requests(self, requests) -> None:
        """Plan ``_loglikelihood_tokens`` requests (``(key, context tokens, continuation tokens)``)."""
        seq_ids: dict[tuple[int, ...], int] = {}
        for _, context_enc, continuation_enc in requests:
            assert len(context_enc) > 0
            assert len(continuation_enc) > 0
            assert len(continuation_enc) <= self.max_length
            total = len(context_enc) + len(continuation_enc)
            if total > self.max_length + 1:
                log.warning(
                    f"Combined length of context ({len(context_enc)}) and continuation ({len(continuation_enc)}) "
                    f"exceeds model's maximum length ({self.max_length}). "
                    f"Truncating {total - self.max_length + 1} tokens from the left."
                )
            whole = (context_enc + continuation_enc)[-(self.max_length + 1) :]
            inp = tuple(whole[:-1])
            sid = seq_ids.setdefault(inp, len(self.seqs))
            if sid == len(self.seqs):
                self.seqs.append(inp)
            self.plan.append((sid, len(inp) - len(continuation_enc), list(continuation_enc)))

    @property
    def longest(self) -> int:
        return max(len(s) for s in self.seqs)

    def score(self, make_evaluator: Callable[[PrefixTree], TreeEvaluator],
              on_done: Callable[[int], None] = lambda n: None,
              cache: PrefixCache | None = None) -> tuple[list[tuple[float, bool]], dict[str, int]]:
        """``(log-likelihood, is_greedy)`` per request in order, and the evaluator's stats.
        ``on_done(n)`` is told each time ``n`` more requests are complete. With ``cache``, the tree's
        top starts from the KV kept by earlier calls, and this call's shared prefixes are kept."""
        plan = self.plan
        tree = PrefixTree(self.seqs)
        n_entries = 0
        for sid, start, targets in plan:
            node = tree.terminal[sid]
            for k in range(len(targets) - 1, -1, -1):  # walk up the path from the end
                j = start + k
                while node.start > j:
                    node = node.parent
                node.entries.append((n_entries + k, j, targets[k]))
            n_entries += len(targets)
        owner = [r for r, p in enumerate(plan) for _ in p[2]]
        values: list[torch.Tensor | None] = [None]
        greedy = torch.zeros(n_entries + 1, dtype=torch.bool)
        greedy[-1] = True
        left = [len(p[2]) for p in plan]

        def on_entries(eids, picked, index, targets):
            lsm = F.log_softmax(picked, dim=-1, dtype=self.softmax_dtype)
            got = lsm[index, targets]
            hit = lsm.argmax(dim=-1)[index] == targets
            if values[0] is None:
                values[0] = torch.zeros(n_entries + 1, dtype=got.dtype)
            ids = torch.tensor(eids, dtype=torch.long)
            values[0][ids] = got.cpu()
            greedy[ids] = hit.cpu()
            finished = 0
            for eid in eids:
                r = owner[eid]
                left[r] -= 1
                finished += left[r] == 0
            on_done(finished)

        evaluator = make_evaluator(tree)
        if cache is not None:
            cache.use(tree, evaluator, [(sid, start) for sid, start, _ in plan])
        evaluator.run(on_entries)
        stats = {**evaluator.stats, "distinct_tokens": tree.token_count, "requests": len(plan)}

        width = max(len(p[2]) for p in plan)
        index = torch.full((len(plan), width), n_entries, dtype=torch.long)
        base = 0
        for r, (_, _, targets) in enumerate(plan):
            index[r, : len(targets)] = torch.arange(base, base + len(targets))
            base += len(targets)
        sums = values[0][index].sum(dim=1).tolist()
        all_greedy = greedy[index].all(dim=1).tolist()
        return [(float(total), bool(is_greedy)) for total, is_greedy in zip(sums, all_greedy)], stats
