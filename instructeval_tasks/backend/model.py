"""``InstructEvalHFLM``: the harness ``HFLM`` whose log-likelihood and greedy generation go through the prefix tree.

Same ``model_args`` and tokenisation as ``hf`` (``_encode_pair``, BOS handling, left truncation to
``max_length``); the request methods hand the token rows to ``loglikelihood.TreeLoglikelihood`` and
``generation.TreeGreedyGeneration`` when ``support.PrefixSupport`` allows, else to the stock code.
See the package docstring for the model_args.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
from typing import Any

import torch
from lm_eval.api.registry import register_model
from lm_eval.models.huggingface import HFLM
from lm_eval.models.utils import handle_stop_sequences, normalize_gen_kwargs
from tqdm import tqdm

from ..errors import UserError
from .names import MODEL_NAME
from .evaluator import ForwardSpec, TreeEvaluator
from .generation import TreeGreedyGeneration, greedy_unsupported
from .kv import cache_argument, cache_tensors, make_cache, output_cache, parse_bytes
from .loglikelihood import TreeLoglikelihood
from .prefix_cache import PrefixCache
from .support import PrefixSupport, layer_windows
from .tree import PrefixTree
from .window import as_bool, check_evaluation

log = logging.getLogger(__name__)

DEFAULT_MAX_KV_MEMORY = "400MB"
DEFAULT_PREFIX_CACHE_MEMORY = "1GB"
_FORCE_GQA_ENV = "TRANSFORMERS_SDPA_FORCE_GQA"  # read by transformers.integrations.sdpa_attention


class PrefixPathUnavailable(UserError):
    """``require_prefix=true`` and a request would run on the stock ``hf`` code."""


class InstructEvalHFLM(HFLM):
    """``HFLM`` that evaluates shared token prefixes once (see the package docstring)."""

    def __init__(self, *args: Any, prefix_sharing: bool | str = True, pack_tokens: int | str = 32,
                 decode_batch_size: int | str | None = None, max_kv_memory: int | str | None = DEFAULT_MAX_KV_MEMORY,
                 require_prefix: bool | str = False, prefix_cache_memory: int | str | None = DEFAULT_PREFIX_CACHE_MEMORY,
                 allow_truncation: bool | str = False, **kwargs: Any) -> None:
        self.max_kv_memory = parse_bytes(max_kv_memory)  # before loading the model: a typo fails fast
        self.prefix_cache_memory = parse_bytes(prefix_cache_memory, "prefix_cache_memory", zero_is_off=True) or 0
        self.prefix_sharing = as_bool(prefix_sharing)
        self.require_prefix = as_bool(require_prefix)
        self.allow_truncation = as_bool(allow_truncation)  # prompts longer than max_length: run and record (window)
        self._ie_window_tasks: Any = None  # the tasks of the evaluation whose window was checked (window)
        if self.require_prefix and not self.prefix_sharing:
            raise PrefixPathUnavailable("instructeval-hf: require_prefix=true contradicts prefix_sharing=false; drop one")
        super().__init__(*args, **kwargs)
        self.pack_tokens = max(0, int(pack_tokens))
        self.decode_batch_size = None if decode_batch_size in (None, "", "None") else int(decode_batch_size)
        if self.decode_batch_size is not None and self.decode_batch_size < 1:
            raise ValueError(f"decode_batch_size must be >= 1, got {decode_batch_size!r}")
        self._ie_parent_only = False  # set while HFLM.loglikelihood_rolling runs
        self._ie_tok_cache: dict | None = None
        self._ie_spec_cache: ForwardSpec | None = None
        self._ie_support_cache: PrefixSupport | None = None
        self._ie_kv_bytes: int | None = None
        self._ie_auto_bs: int | None = None
        self._ie_prefix_cache: PrefixCache | None = None
        self.prefix_stats: dict[str, int] = {}  # of the last call: forward passes, tokens, distinct tokens, KV
        # Which path served the requests since the last ``get_model_info`` (one per simple_evaluate call).
        self.path_counts: dict[str, Any] = {"prefix": 0, "stock": 0, "stock_reasons": {}}
        self._ie_force_gqa = (
            self.device.type == "cpu"
            and tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 5)
            and getattr(getattr(self.model, "config", None), "_attn_implementation", None) == "sdpa"
        )
        self._ie_check_at_start()

    # ------------------------------------------------------------------ which path serves requests

    def _ie_check_config(self) -> None:
        """Refuse a config written by transformers 5.x whose RoPE base this 4.x cannot read.

        5.x writes ``rope_parameters``; 4.x reads a top-level ``rope_theta`` and otherwise silently
        uses its default, which gives other scores (``prepare-model`` writes both keys)."""
        config = getattr(self.model, "config", None)
        rope = getattr(config, "rope_parameters", None)
        if int(_transformers_version().split(".")[0]) >= 5 or not isinstance(rope, dict) or "rope_theta" not in rope:
            return
        if getattr(config, "rope_theta", None) != rope["rope_theta"]:
            raise UserError(
                f"instructeval-hf: {config._name_or_path}/config.json was written by transformers 5.x: its RoPE base "
                f"(rope_parameters.rope_theta={rope['rope_theta']}) is read by transformers {_transformers_version()} as "
                f"{getattr(config, 'rope_theta', None)}, which changes every score; prepare the model again with this "
                f"transformers (instructeval prepare-model ...), or add \"rope_theta\": {rope['rope_theta']} to config.json")

    def _ie_check_at_start(self) -> None:
        """Say now, not in the middle of the progress output, when no request can take the prefix path."""
        self._ie_check_config()
        if not self.prefix_sharing:
            return
        reason = self._ie_unsupported(0)
        if reason is None:
            # Under the harness's logger, so that lm_eval's --verbosity shows it with its own INFO lines.
            logging.getLogger("lm_eval.instructeval_hf").info(
                "instructeval-hf: prefix path ready (transformers %s): shared prefixes are computed once",
                _transformers_version())
            return
        message = (f"instructeval-hf: the prefix path cannot serve this model ({reason}; transformers "
                   f"{_transformers_version()}): every request runs on the stock hf code, with the same "
                   f"scores and about the speed of --model hf")
        if self.require_prefix:
            raise PrefixPathUnavailable(f"{message}; require_prefix=true makes this an error")
        log.warning("%s (require_prefix=true makes this an error)", message)

    def _ie_count(self, path: str, n: int, reason: str | None = None, what: str = "") -> None:
        """Count ``n`` requests served by ``path`` ("prefix" or "stock", the latter with its reason)."""
        if path == "stock":
            if self.require_prefix:
                raise PrefixPathUnavailable(
                    f"instructeval-hf: {n} {what or 'request'}(s) would run on the stock hf code ({reason}); "
                    f"require_prefix=true makes this an error")
            reasons = self.path_counts["stock_reasons"]
            key = f"{what}: {reason}" if what else str(reason)
            reasons[key] = reasons.get(key, 0) + n
        self.path_counts[path] += n

    def path_summary(self) -> str | None:
        """``"N of M requests ran on the stock path: <reasons>"`` since the last report (None: all on the prefix path)."""
        counts = self.path_counts
        total = counts["prefix"] + counts["stock"]
        if not counts["stock"]:
            return None
        reasons = "; ".join(f"{why} ({n})" for why, n in sorted(counts["stock_reasons"].items()))
        return f"{counts['stock']} of {total} requests ran on the stock path: {reasons}"

    def get_model_info(self) -> dict:
        """``HFLM``'s model info plus ``instructeval_hf``: which path served this evaluation's requests.

        ``simple_evaluate`` calls this once, after the requests ran, and puts it in the results'
        ``config``; the counts then start again for the next evaluation on the same model."""
        info = dict(super().get_model_info())
        counts = self.path_counts
        info["instructeval_hf"] = {
            "prefix_sharing": self.prefix_sharing,
            "require_prefix": self.require_prefix,
            "prefix_requests": counts["prefix"],
            "stock_requests": counts["stock"],
            "stock_reasons": dict(sorted(counts["stock_reasons"].items())),
            "transformers": _transformers_version(),
        }
        summary = self.path_summary()
        if summary:
            log.warning("instructeval-hf: %s", summary)
        self.path_counts = {"prefix": 0, "stock": 0, "stock_reasons": {}}
        self._ie_window_tasks = None  # the next evaluation is measured again
        return info

    # ------------------------------------------------------------------ model calls

    def _ie_model_call(self, input_ids, attention_mask, position_ids, past_key_values, logits_to_keep=None):
        """One forward pass with a KV cache; returns (logits, cache). Benchmarks wrap this to count tokens."""
        kwargs: dict[str, Any] = dict(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                                      use_cache=True)
        kwargs[self._ie_cache_argument()] = past_key_values
        if logits_to_keep is not None:
            kwargs["logits_to_keep"] = logits_to_keep
        # transformers repeats grouped K/V heads before sdpa whenever a mask is given; on CPU,
        # sdpa's own GQA support (torch >= 2.5) is ~1.5x faster on these masked calls.
        force_gqa = self._ie_force_gqa and _FORCE_GQA_ENV not in os.environ
        if force_gqa:
            os.environ[_FORCE_GQA_ENV] = "1"
        try:
            with (
                torch.no_grad(),
                torch.autocast(device_type=self.device.type, dtype=self.mixed_precision_dtype,
                               enabled=self.mixed_precision_dtype is not None),
            ):
                out = self.model(**kwargs)
        finally:
            if force_gqa:
                os.environ.pop(_FORCE_GQA_ENV, None)
        return out.logits, output_cache(out)

    def _ie_cache_argument(self) -> str:
        """The model forward's name for the KV cache argument (``cache`` on transformers 5.2x)."""
        return cache_argument(self.model.forward) or "past_key_values"

    def _ie_spec(self) -> ForwardSpec:
        if self._ie_spec_cache is None:
            model = self.model
            attn = getattr(model.config, "_attn_implementation", None)
            params = inspect.signature(model.forward).parameters
            mode = "none"
            if "logits_to_keep" in params:
                import transformers.modeling_utils as mu

                mode = "mask" if hasattr(mu, "slice_logits_to_keep") else "last"
            self._ie_spec_cache = ForwardSpec(
                call=self._ie_model_call,
                device=self.device,
                mask_dtype=None if attn == "sdpa" else (self.mixed_precision_dtype or model.dtype),
                logits_mode=mode,
                softmax_dtype=self.softmax_dtype,
                windows=layer_windows(model.config),
            )
        return self._ie_spec_cache

    def _ie_support(self) -> PrefixSupport:
        if self._ie_support_cache is None:
            self._ie_support_cache = PrefixSupport(self, self._ie_spec())
        return self._ie_support_cache

    def _ie_unsupported(self, max_len: int = 0) -> str | None:
        """Why the prefix path cannot serve these requests (None when it can)."""
        if not self.prefix_sharing:
            return "prefix_sharing=False"
        if self._ie_parent_only:
            return "loglikelihood_rolling"
        return self._ie_support().reason(max_len)

    def _ie_greedy_unsupported(self, kwargs: dict[str, Any]) -> str | None:
        return greedy_unsupported(self, kwargs)

    def _ie_kv_token_bytes(self) -> int:
        """Bytes of one token position's keys and values over all layers (a one-token forward pass)."""
        if self._ie_kv_bytes is None:
            ids = torch.tensor([[int(self.prefix_token_id)]], dtype=torch.long, device=self.device)
            with torch.no_grad():
                out = self.model(input_ids=ids, use_cache=True, **{self._ie_cache_argument(): make_cache(None)})
            self._ie_kv_bytes = sum(k.numel() * k.element_size() + v.numel() * v.element_size()
                                    for k, v in cache_tensors(output_cache(out)))
        return self._ie_kv_bytes

    def _ie_evaluator(self, tree: PrefixTree, seqs, batch_size: int, keep_all_kv: bool = False) -> TreeEvaluator:
        # A pass holds at most the tokens of ``batch_size`` of the longest rows the stock backend
        # would run (so no more compute memory than ``hf`` at this batch size) and at most
        # ``max_kv_memory`` bytes of KV; a subtree no longer than the longest sequence stays in one row.
        longest = max(len(s) for s in seqs)
        max_kv_tokens = None if self.max_kv_memory is None else max(1, self.max_kv_memory // self._ie_kv_token_bytes())
        return TreeEvaluator(tree, self._ie_spec(), token_budget=batch_size * longest, subtree_tokens=longest,
                             pack_tokens=self.pack_tokens, keep_all_kv=keep_all_kv, max_kv_tokens=max_kv_tokens)

    def _ie_cache(self) -> PrefixCache | None:
        """The KV of shared prefixes kept between calls (``prefix_cache_memory``; none at 0)."""
        if self._ie_prefix_cache is None and self.prefix_cache_memory:
            self._ie_prefix_cache = PrefixCache(self.prefix_cache_memory // self._ie_kv_token_bytes())
        return self._ie_prefix_cache

    def _ie_stats(self, stats: dict[str, int]) -> dict[str, int]:
        kv_bytes = self._ie_kv_token_bytes()
        return {**stats, "kv_token_bytes": kv_bytes, "peak_kv_bytes": stats.get("peak_kv_tokens", 0) * kv_bytes,
                "max_kv_memory": self.max_kv_memory or 0, "prefix_cache_memory": self.prefix_cache_memory}

    def _ie_batch_size(self, override_bs: int | None = None) -> int:
        if self.batch_size != "auto":
            return int(self.batch_size)
        if override_bs:
            return int(override_bs)
        if self._ie_auto_bs is None:
            self._ie_auto_bs = int(self._detect_batch_size())
        return self._ie_auto_bs

    # ------------------------------------------------------------------ tokenisation

    def tok_encode(self, string: str, add_special_tokens: bool | None = None, left_truncate_len: int | None = None, **kwargs):
        # Memoised during one loglikelihood() call: a context is encoded once for all its choices.
        cache = self._ie_tok_cache
        if cache is None or kwargs:
            return super().tok_encode(string, add_special_tokens=add_special_tokens, left_truncate_len=left_truncate_len, **kwargs)
        key = (string, add_special_tokens, left_truncate_len)
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = super().tok_encode(string, add_special_tokens=add_special_tokens, left_truncate_len=left_truncate_len)
        return list(hit)

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        self._ie_tok_cache = {} if self.prefix_sharing else None
        try:
            check_evaluation(self)  # its encodings are the ones memoised for the scoring below
            return super().loglikelihood(requests, disable_tqdm=disable_tqdm)
        finally:
            self._ie_tok_cache = None

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        # Explicitly the parent's: rolling windows are disjoint, there is no prefix to share.
        self._ie_parent_only = True
        try:
            return super().loglikelihood_rolling(requests, disable_tqdm=disable_tqdm)
        finally:
            self._ie_parent_only = False

    # ------------------------------------------------------------------ log-likelihood

    def _loglikelihood_tokens(self, requests, disable_tqdm: bool = False, override_bs: int | None = None):
        if not requests:
            return []
        what = "loglikelihood_rolling window" if self._ie_parent_only else "loglikelihood request"
        if self._ie_parent_only or not self.prefix_sharing or self.backend != "causal":
            self._ie_count("stock", len(requests), self._ie_unsupported(0) or f"backend {self.backend!r}", what)
            return super()._loglikelihood_tokens(requests, disable_tqdm=disable_tqdm, override_bs=override_bs)
        scorer = TreeLoglikelihood(self.max_length, self.softmax_dtype)
        scorer.add_requests(requests)
        reason = self._ie_unsupported(scorer.longest)
        if reason:
            self._ie_count("stock", len(requests), reason, what)
            self._ie_support().note("loglikelihood", reason)
            return super()._loglikelihood_tokens(requests, disable_tqdm=disable_tqdm, override_bs=override_bs)
        self._ie_count("prefix", len(requests))
        batch_size = self._ie_batch_size(override_bs)
        pbar = tqdm(total=len(requests), disable=(disable_tqdm or (self.rank != 0)), desc="Running loglikelihood requests")
        res, stats = scorer.score(lambda tree: self._ie_evaluator(tree, scorer.seqs, batch_size), pbar.update,
                                  cache=self._ie_cache())
        pbar.close()
        self.prefix_stats = self._ie_stats(stats)
        for (request_str, _, _), answer in zip(requests, res):
            if request_str is not None:
                self.cache_hook.add_partial("loglikelihood", request_str, answer)
        return res

    # ------------------------------------------------------------------ generation

    def generate_until(self, requests, disable_tqdm: bool = False):
        if not requests:
            return []
        check_evaluation(self)
        if not self.prefix_sharing or self.backend != "causal" or any(len(r.args) != 2 for r in requests):
            reason = ("prefix_sharing=False" if not self.prefix_sharing else
                      f"backend {self.backend!r}" if self.backend != "causal" else "multimodal requests")
            self._ie_count("stock", len(requests), reason, "generate_until request")
            return super().generate_until(requests, disable_tqdm=disable_tqdm)
        batch_size = self._ie_batch_size()
        generation = TreeGreedyGeneration(
            self, lambda tree, seqs, keep_all_kv: self._ie_evaluator(tree, seqs, batch_size, keep_all_kv=keep_all_kv),
            decode_rows=self.decode_batch_size or batch_size, cache=self._ie_cache())
        results: list[str | None] = [None] * len(requests)
        groups: dict[str, list[int]] = {}
        for i, req in enumerate(requests):
            key = json.dumps(req.args[1], sort_keys=True, default=repr)
            groups.setdefault(key, []).append(i)
        pbar = tqdm(total=len(requests), disable=(disable_tqdm or (self.rank != 0)), desc="Running generate_until requests")
        eos_text = self.tok_decode(self.eot_token_id, skip_special_tokens=False)
        for members in groups.values():
            gen_kwargs = requests[members[0]].args[1]
            kwargs = dict(normalize_gen_kwargs(gen_kwargs, self.max_gen_toks))
            until = handle_stop_sequences(kwargs.pop("until", None), eos=eos_text)
            max_gen_toks = int(kwargs.pop("max_gen_toks"))
            max_ctx_len = self.max_length - max_gen_toks
            assert max_ctx_len > 0, (
                f"Invalid configuration: requested max tokens to generate ({max_gen_toks}) must be less than "
                f"model's maximum sequence length ({self.max_length})."
            )
            reason = self._ie_greedy_unsupported(kwargs)
            truncated: list[int] = []
            contexts = [] if reason else [generation.encode_context(requests[i].args[0], max_ctx_len, truncated)
                                          for i in members]
            if truncated:
                log.warning(
                    f"Left truncation applied to {len(truncated)} contexts (up to {max(truncated)} tokens), "
                    f"truncating to last {max_ctx_len} tokens. Some content will be lost."
                )
            if not reason and any(len(c) == 0 for c in contexts):
                reason = "an empty context"
            if not reason:
                reason = self._ie_unsupported(max(len(c) for c in contexts) + max_gen_toks)
            if reason:
                self._ie_count("stock", len(members), reason, "generate_until request")
                self._ie_support().note("generate_until", reason)
                # the stock code's own bar shows its progress (this one moves when it is done)
                outs = super().generate_until([requests[i] for i in members], disable_tqdm=disable_tqdm or self.rank != 0)
                for i, s in zip(members, outs):
                    results[i] = s
                pbar.update(len(members))
                continue
            self._ie_count("prefix", len(members))
            # the bar moves as each decode batch finishes (the results come back together at the end)
            for i, s in zip(members, generation.generate(contexts, until, max_gen_toks, progress=pbar.update)):
                results[i] = s
                self.cache_hook.add_partial("generate_until", (requests[i].args[0], gen_kwargs), s)
            if generation.stats:
                self.prefix_stats = self._ie_stats(generation.stats)
        pbar.close()
        return results  # type: ignore[return-value]


def _transformers_version() -> str:
    import transformers

    return str(transformers.__version__)


# Its public path (``instructeval_tasks.backend.InstructEvalHFLM``) is the registry target the hook
# registers lazily; the registry upgrades that placeholder to a class whose module matches it.
InstructEvalHFLM.__module__ = "instructeval_tasks.backend"
register_model(MODEL_NAME)(InstructEvalHFLM)
