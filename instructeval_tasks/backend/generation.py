"""Greedy ``generate_until`` through the prefix tree, post-processed as ``HFLM.generate_until`` does.

The contexts are encoded as ``HFLM.tok_batch_encode`` encodes one string, put in a prefix tree and
prefilled once (shared prefixes once); as soon as a pass has computed a context's last position,
its first greedy token is known and its prompt cache is held until ``decode_rows`` contexts are
ready, which ``GreedyDecoder`` then continues together.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lm_eval.models.utils import has_bos_prefix, postprocess_generated_text

from .decoder import GreedyDecoder
from .evaluator import TreeEvaluator
from .prefix_cache import PrefixCache
from .tree import PrefixTree

if TYPE_CHECKING:
    from lm_eval.models.huggingface import HFLM

# Generation-config fields that add a logits processor (or another decoding strategy) to greedy
# decoding in ``model.generate``; any value other than these defaults sends generation to HFLM.
GREEDY_DEFAULTS: dict[str, Any] = {
    "num_beams": 1, "num_beam_groups": 1, "diversity_penalty": 0.0, "repetition_penalty": 1.0,
    "encoder_repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "encoder_no_repeat_ngram_size": 0,
    "bad_words_ids": None, "force_words_ids": None, "constraints": None, "min_length": 0, "min_new_tokens": None,
    "max_new_tokens": None, "forced_bos_token_id": None, "forced_eos_token_id": None, "suppress_tokens": None,
    "begin_suppress_tokens": None, "sequence_bias": None, "exponential_decay_length_penalty": None,
    "guidance_scale": 1.0, "penalty_alpha": None, "dola_layers": None, "watermarking_config": None,
    "prompt_lookup_num_tokens": None, "assistant_early_exit": None,
}


def greedy_unsupported(lm: HFLM, kwargs: dict[str, Any]) -> str | None:
    """Why these generation kwargs (or the model's generation config) are not plain greedy decoding."""
    extra = sorted(k for k in kwargs if k not in ("do_sample", "temperature"))
    if extra:
        return f"generation kwargs {extra}"
    if kwargs.get("do_sample") or float(kwargs.get("temperature") or 0.0) > 0.0:
        return "sampling"
    config = getattr(lm.model, "generation_config", None)
    for name, default in GREEDY_DEFAULTS.items():
        value = getattr(config, name, None) if config is not None else None
        if value is not None and value != default and value != [] and value != {}:
            return f"generation_config.{name}={value!r}"
    return None


def context_ids(lm: HFLM, context: str) -> list[int]:
    """``HFLM.tok_batch_encode`` for one string, uncut (it decides BOS on a batch's first string)."""
    kwargs: dict[str, Any] = {}
    if has_bos_prefix(context, getattr(lm.tokenizer, "bos_token", None)):
        kwargs = {"add_special_tokens": False}
    elif lm.add_bos_token is not None:
        kwargs = {"add_special_tokens": lm.add_bos_token}
    return list(lm.tokenizer(context, truncation=lm.truncation, **kwargs)["input_ids"])


class TreeGreedyGeneration:
    """Greedy continuations of a list of token contexts (one ``until``/``max_gen_toks`` setting)."""

    def __init__(self, lm: HFLM, make_evaluator: Callable[..., TreeEvaluator], decode_rows: int,
                 cache: PrefixCache | None = None) -> None:
        self.lm, self.make_evaluator, self.decode_rows, self.cache = lm, make_evaluator, decode_rows, cache
        self.stats: dict[str, int] = {}

    def encode_context(self, context: str, max_ctx_len: int, truncated: list[int]) -> list[int]:
        """``context_ids``, its left cut to ``max_ctx_len`` (the uncut length of a cut one appended to ``truncated``)."""
        ids = context_ids(self.lm, context)
        if len(ids) > max_ctx_len:
            truncated.append(len(ids))
            ids = ids[-max_ctx_len:]
        return ids

    def eos_ids(self) -> set[int]:
        config = getattr(self.lm.model, "generation_config", None)
        eos = getattr(config, "eos_token_id", None) if config is not None else None
        if eos is None:
            eos = getattr(self.lm.model.config, "eos_token_id", None)
        if eos is None:
            return set()
        return {int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])}

    def finish_text(self, tokens: list[int], until: list[str]) -> str:
        """``HFLM.generate_until``'s post-processing of one row."""
        lm = self.lm
        if isinstance(lm.think_end_token, int):
            marks = [i for i, t in enumerate(tokens) if t == lm.think_end_token]
            if marks:
                tokens = tokens[marks[-1] + 1 :]
        text = lm.tok_decode(tokens)
        if isinstance(lm.think_end_token, int):
            text = text.lstrip()
        return postprocess_generated_text(
            generation=text, stop=until,
            think_end_token=lm.think_end_token if isinstance(lm.think_end_token, str) else None,
        )

    def generate(self, contexts: list[list[int]], until: list[str], max_gen_toks: int,
                 progress: Callable[[int], Any] | None = None) -> list[str]:
        """The greedy generation of each context; ``progress(n)`` is told as each decode batch
        finishes how many of ``contexts`` it completed (a duplicate context counts each time)."""
        if max_gen_toks <= 0:
            if progress is not None:
                progress(len(contexts))
            return [self.finish_text([], until) for _ in contexts]
        seq_ids: dict[tuple[int, ...], int] = {}
        seqs: list[tuple[int, ...]] = []
        which = []
        for ctx in contexts:
            sid = seq_ids.setdefault(tuple(ctx), len(seqs))
            if sid == len(seqs):
                seqs.append(tuple(ctx))
            which.append(sid)
        copies = Counter(which)
        tree = PrefixTree(seqs)
        for sid, seq in enumerate(seqs):
            tree.terminal[sid].entries.append((sid, len(seq) - 1, -1))
        first: dict[int, int] = {}
        tokens: dict[int, list[int]] = {}
        ready: list[int] = []
        eos = self.eos_ids()
        evaluator = self.make_evaluator(tree, seqs, keep_all_kv=True)
        if self.cache is not None:  # each context is scored at its last position
            self.cache.use(tree, evaluator, [(sid, len(seq) - 1) for sid, seq in enumerate(seqs)])
        decoder = GreedyDecoder(evaluator.spec, evaluator.stats)
        tokenizer = self.lm.tokenizer

        def stopped(toks: list[int]) -> bool:
            text = tokenizer.decode(toks, skip_special_tokens=False)
            return any(stop and stop in text for stop in until)

        def on_entries(eids, picked, index, targets):
            best = picked.argmax(dim=-1)[index].tolist()
            for sid, tok in zip(eids, best):
                first[sid] = tok

        def on_ready(nodes):
            for node in nodes:
                for sid in node.terminal:
                    ready.append(sid)
                    evaluator.kv.hold(node)

        def flush(final: bool) -> None:
            while len(ready) >= self.decode_rows or (final and ready):
                batch, ready[:] = ready[: self.decode_rows], ready[self.decode_rows :]
                nodes = [tree.terminal[sid] for sid in batch]
                outs = decoder.decode(nodes, [first[sid] for sid in batch], max_gen_toks, eos, stopped)
                for sid, node, toks in zip(batch, nodes, outs):
                    tokens[sid] = toks
                    evaluator.kv.release(node)
                if progress is not None:
                    progress(sum(copies[sid] for sid in batch))

        evaluator.run(on_entries, on_ready=on_ready, flush=flush)
        self.stats = {**evaluator.stats, "distinct_tokens": tree.token_count, "requests": len(contexts)}
        return [self.finish_text(tokens[sid], until) for sid in which]
