"""``--model instructeval-hf``: the harness ``hf`` backend, computing each shared prompt prefix once.

Every few-shot variant repeats one prefix (instruction + K demos, hundreds of tokens) in front of
every test example and every answer choice; the stock ``hf`` backend (``HFLM``) recomputes it for
every (doc, choice) row. ``InstructEvalHFLM`` is ``HFLM`` with the same ``model_args`` and the same
tokenisation (``_encode_pair``, BOS handling, left truncation to ``max_length``), but:

- **log-likelihood**: the token rows the stock backend would feed the model are put in a token
  prefix tree (``backend_tree.PrefixTree``) and every distinct token position is computed once, in
  batches of tree fragments that attend to their prefix's cached keys/values through a tree-shaped
  attention mask (``backend_tree.TreeEvaluator``). Scores, ``is_greedy``, ``softmax_dtype`` and the
  request order follow ``HFLM._loglikelihood_tokens``.
- **generation** (greedy): the contexts are prefilled through the same tree (shared prefixes once),
  then each request is decoded greedily from its cached prompt, stopping at EOS, at any ``until``
  string or after ``max_gen_toks``, and post-processed as ``HFLM.generate_until`` does.

It falls back to the parent ``HFLM`` code, explicitly and with a logged reason, for anything else:
``loglikelihood_rolling``, seq2seq and multimodal models (a vision/audio config, or requests with
extra arguments), attention implementations other than ``sdpa``/``eager``,
layer types other than (windowed) attention, sequences longer than a sliding window, sampling or
extra generation kwargs, generation configs with logits processors, and any model that fails the
one-time self-check (tree evaluation vs plain forwards of a few short token sequences). ``prefix_sharing=False``
turns the whole backend into plain ``hf``.

Extra ``model_args``: ``prefix_sharing`` (default true), ``pack_tokens`` (default 32: sibling
subtrees shorter than this share one batch row) and ``decode_batch_size`` (default ``batch_size``:
how many requests one greedy decoding step advances together). ``batch_size`` keeps its meaning as a
memory bound: a forward pass holds at most ``batch_size`` x (longest request) tokens, the most a
stock ``hf`` batch would; rows are usually much shorter than the stock rows, so one pass holds more
of them. A decoding step reads every weight once whatever its row count, so on a CPU it costs
nearly the same for 8 rows as for 32: a larger ``decode_batch_size`` speeds up generation at the
price of holding that many prompt caches at once.

Registration: importing this module registers ``instructeval-hf``. In other processes the
stdlib-only ``backend_hook`` module registers a lazy placeholder when the harness's registry is
imported (see its docstring for the ``.pth`` that installs it in every interpreter).
"""

from __future__ import annotations

import inspect
import json
import logging
import os
from typing import Any

import torch
import torch.nn.functional as F
from lm_eval.api.registry import register_model
from lm_eval.models.huggingface import HFLM
from lm_eval.models.utils import handle_stop_sequences, has_bos_prefix, normalize_gen_kwargs, postprocess_generated_text
from tqdm import tqdm

from .backend_tree import ModelSpec, PrefixTree, TreeEvaluator

log = logging.getLogger(__name__)

MODEL_NAME = "instructeval-hf"
_SUPPORTED_ATTENTION = ("sdpa", "eager")
_FORCE_GQA_ENV = "TRANSFORMERS_SDPA_FORCE_GQA"  # read by transformers.integrations.sdpa_attention
_WINDOWED_LAYER_TYPES = ("sliding_attention", "chunked_attention")

# Generation-config fields that add a logits processor (or another decoding strategy) to greedy
# decoding in ``model.generate``; any value other than these defaults sends generation to HFLM.
_GREEDY_DEFAULTS: dict[str, Any] = {
    "num_beams": 1, "num_beam_groups": 1, "diversity_penalty": 0.0, "repetition_penalty": 1.0,
    "encoder_repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "encoder_no_repeat_ngram_size": 0,
    "bad_words_ids": None, "force_words_ids": None, "constraints": None, "min_length": 0, "min_new_tokens": None,
    "max_new_tokens": None, "forced_bos_token_id": None, "forced_eos_token_id": None, "suppress_tokens": None,
    "begin_suppress_tokens": None, "sequence_bias": None, "exponential_decay_length_penalty": None,
    "guidance_scale": 1.0, "penalty_alpha": None, "dola_layers": None, "watermarking_config": None,
    "prompt_lookup_num_tokens": None, "assistant_early_exit": None,
}


def _as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in ("0", "false", "no", "off", "")
    return bool(value)


@register_model(MODEL_NAME)
class InstructEvalHFLM(HFLM):
    """``HFLM`` that evaluates shared token prefixes once (see the module docstring)."""

    def __init__(self, *args: Any, prefix_sharing: bool | str = True, pack_tokens: int | str = 32,
                 decode_batch_size: int | str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.prefix_sharing = _as_bool(prefix_sharing)
        self.pack_tokens = max(0, int(pack_tokens))
        self.decode_batch_size = None if decode_batch_size in (None, "", "None") else int(decode_batch_size)
        if self.decode_batch_size is not None and self.decode_batch_size < 1:
            raise ValueError(f"decode_batch_size must be >= 1, got {decode_batch_size!r}")
        self._ie_parent_only = False  # set while HFLM.loglikelihood_rolling runs
        self._ie_tok_cache: dict | None = None
        self._ie_spec_cache: ModelSpec | None = None
        self._ie_self_check: str | None = None  # None: not run yet; "": passed; else the failure
        self._ie_auto_bs: int | None = None
        self._ie_noted: set[str] = set()
        self.prefix_stats: dict[str, int] = {}  # of the last call: forward passes, tokens, distinct tokens
        self._ie_force_gqa = (
            self.device.type == "cpu"
            and tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 5)
            and getattr(getattr(self.model, "config", None), "_attn_implementation", None) == "sdpa"
        )

    # ------------------------------------------------------------------ model calls

    def _ie_model_call(self, input_ids, attention_mask, position_ids, past_key_values, logits_to_keep=None):
        """One forward pass with a KV cache; returns (logits, cache). Benchmarks wrap this to count tokens."""
        kwargs: dict[str, Any] = dict(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                                      past_key_values=past_key_values, use_cache=True)
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
        return out.logits, out.past_key_values

    def _ie_spec(self) -> ModelSpec:
        if self._ie_spec_cache is None:
            model = self.model
            attn = getattr(model.config, "_attn_implementation", None)
            params = inspect.signature(model.forward).parameters
            mode = "none"
            if "logits_to_keep" in params:
                import transformers.modeling_utils as mu

                mode = "mask" if hasattr(mu, "slice_logits_to_keep") else "last"
            self._ie_spec_cache = ModelSpec(
                call=self._ie_model_call,
                device=self.device,
                mask_dtype=None if attn == "sdpa" else (self.mixed_precision_dtype or model.dtype),
                logits_mode=mode,
                softmax_dtype=self.softmax_dtype,
            )
        return self._ie_spec_cache

    def _ie_window(self) -> tuple[set[str], int | None]:
        """The model's layer types and its smallest attention window (None: no windowed layers)."""
        config = self.model.config
        text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
        try:
            from transformers.cache_utils import get_layer_types_and_kwargs

            types, per_layer = get_layer_types_and_kwargs(text)
        except Exception:  # older transformers
            types = list(getattr(text, "layer_types", None) or [])
            window = getattr(text, "sliding_window", None) if getattr(text, "use_sliding_window", True) else None
            if not types:
                types = ["sliding_attention" if window else "full_attention"]
            per_layer = [{"sliding_window": window}] * len(types)
        windows = [kw.get("sliding_window") for t, kw in zip(types, per_layer) if t in _WINDOWED_LAYER_TYPES]
        windows = [int(w) for w in windows if w]
        return set(types), (min(windows) if windows else None)

    def _ie_unsupported(self, max_len: int = 0) -> str | None:
        """Why the prefix path cannot serve these requests (None when it can)."""
        if not self.prefix_sharing:
            return "prefix_sharing=False"
        if self._ie_parent_only:
            return "loglikelihood_rolling"
        if self.backend != "causal":
            return f"backend {self.backend!r} (only causal models)"
        model = self.model
        config = getattr(model, "config", None)
        if config is None or not hasattr(model, "forward"):
            return "not a transformers model"
        if any(getattr(config, key, None) is not None for key in ("vision_config", "audio_config", "speech_config")):
            return "multimodal model (text-only requests through the stock code)"
        attn = getattr(config, "_attn_implementation", None)
        if attn not in _SUPPORTED_ATTENTION:
            return f"attention implementation {attn!r} (tree masks need one of {_SUPPORTED_ATTENTION})"
        params = inspect.signature(model.forward).parameters
        if not {"past_key_values", "position_ids", "attention_mask"} <= set(params):
            return "the model's forward takes no past_key_values/position_ids/attention_mask"
        types, window = self._ie_window()
        other = types - {"full_attention", *_WINDOWED_LAYER_TYPES}
        if other:
            return f"layer types {sorted(other)}"
        if window is not None and max_len > window:
            return f"sequences of {max_len} tokens exceed the attention window ({window})"
        if self._ie_self_check is None:
            self._ie_self_check = self._ie_check_logits_modes()
        if self._ie_self_check:
            return f"self-check failed: {self._ie_self_check}"
        return None

    def _ie_note(self, what: str, reason: str) -> None:
        key = f"{what}: {reason}"
        if key not in self._ie_noted:
            self._ie_noted.add(key)
            log.warning("instructeval-hf: %s falls back to the stock hf code (%s)", what, reason)

    def _ie_check_logits_modes(self) -> str:
        """Run the self-check, falling back from a boolean ``logits_to_keep`` to an int one to none
        (custom model code may not take the newer forms)."""
        spec = self._ie_spec()
        modes = {"mask": ["mask", "last", "none"], "last": ["last", "none"]}.get(spec.logits_mode, ["none"])
        first = ""
        for mode in modes:
            spec.logits_mode = mode
            failure = self._ie_run_self_check()
            if not failure:
                return ""
            first = first or failure
        return first

    def _ie_run_self_check(self) -> str:
        """Tree evaluation (shared pasts, packing, deferred groups) vs a plain forward of each sequence.

        Compared by the largest KL divergence of the next-token distributions over all positions:
        a wrong mask or position gives KL of order 1; float32 noise is below 1e-6 and bfloat16 noise
        below 1e-2 here."""
        try:
            vocab = int(min(getattr(self.model.config.get_text_config(), "vocab_size", 0) or len(self.tokenizer),
                            len(self.tokenizer)))
            text = "Solve the following task. News: Markets rally as investors welcome the news. Category: Business"
            stem = [t for t in self.tokenizer.encode(text, add_special_tokens=False) if 0 <= t < vocab][:14]
            if len(stem) < 10:
                gen = torch.Generator().manual_seed(1234)
                stem = torch.randint(5, max(6, min(vocab, 5000)), (14,), generator=gen).tolist()
            seqs = [stem[:12], stem[:9] + stem[10:11], stem[:9] + stem[11:14] + stem[9:11], stem[:12] + stem[:2], stem[:4]]
            seqs = list(dict.fromkeys(tuple(s) for s in seqs))
            tree = PrefixTree(seqs)
            for sid, seq in enumerate(seqs):
                for j in range(len(seq)):
                    tree.locate(sid, j).entries.append((sid * 100 + j, j, -1))
            got: dict[tuple[int, int], torch.Tensor] = {}

            def on_entries(eids, picked, index, targets):
                lsm = F.log_softmax(picked.float(), dim=-1)
                for eid, i in zip(eids, index.tolist()):
                    got[(eid // 100, eid % 100)] = lsm[i].cpu()

            refs = []
            for seq in seqs:
                ids = torch.tensor([seq], dtype=torch.long, device=self.device)
                with torch.no_grad():
                    refs.append(F.log_softmax(self.model(ids).logits[0].float(), dim=-1).cpu())
            dtype = self.mixed_precision_dtype or self.model.dtype
            tol = 1e-4 if dtype == torch.float32 else 0.05
            for subtree, pack in ((3, 0), (64, 64)):  # tiny rows, every child deferred; one packed row
                got.clear()
                TreeEvaluator(tree, self._ie_spec(), token_budget=2 * subtree, subtree_tokens=subtree,
                              pack_tokens=pack).run(on_entries)
                worst = 0.0
                for sid, seq in enumerate(seqs):
                    for j in range(len(seq)):
                        p = refs[sid][j]
                        worst = max(worst, float((p.exp() * (p - got[(sid, j)])).sum()))
                if not worst <= tol:
                    return f"max KL {worst:.3g} > {tol} (row budget {subtree})"
            return ""
        except Exception as err:  # any model that cannot take these inputs
            return f"{type(err).__name__}: {err}"

    def _ie_evaluator(self, tree: PrefixTree, seqs, batch_size: int, keep_all_kv: bool = False) -> TreeEvaluator:
        # A pass holds at most the tokens of ``batch_size`` of the longest rows the stock backend
        # would run (so no more memory than ``hf`` at this batch size); a subtree no longer than the
        # longest sequence stays in one row.
        longest = max(len(s) for s in seqs)
        return TreeEvaluator(tree, self._ie_spec(), token_budget=batch_size * longest, subtree_tokens=longest,
                             pack_tokens=self.pack_tokens, keep_all_kv=keep_all_kv)

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
        if self._ie_parent_only or not self.prefix_sharing or self.backend != "causal":
            return super()._loglikelihood_tokens(requests, disable_tqdm=disable_tqdm, override_bs=override_bs)
        seq_ids: dict[tuple[int, ...], int] = {}
        seqs: list[tuple[int, ...]] = []
        plan: list[tuple[int, int, list[int]]] = []  # per request: (sequence id, first scored position, targets)
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
            sid = seq_ids.setdefault(inp, len(seqs))
            if sid == len(seqs):
                seqs.append(inp)
            plan.append((sid, len(inp) - len(continuation_enc), list(continuation_enc)))
        reason = self._ie_unsupported(max(len(s) for s in seqs))
        if reason:
            self._ie_note("loglikelihood", reason)
            return super()._loglikelihood_tokens(requests, disable_tqdm=disable_tqdm, override_bs=override_bs)

        tree = PrefixTree(seqs)
        owner: list[int] = []
        for r, (sid, start, targets) in enumerate(plan):
            node = tree.terminal[sid]
            for k in range(len(targets) - 1, -1, -1):  # walk up the path from the end
                j = start + k
                while node.start > j:
                    node = node.parent
                node.entries.append((len(owner) + k, j, targets[k]))
            owner.extend([r] * len(targets))
        n_entries = len(owner)
        values: list[torch.Tensor | None] = [None]
        greedy = torch.zeros(n_entries + 1, dtype=torch.bool)
        greedy[-1] = True
        left = [len(p[2]) for p in plan]
        pbar = tqdm(total=len(requests), disable=(disable_tqdm or (self.rank != 0)), desc="Running loglikelihood requests")

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
            pbar.update(finished)

        evaluator = self._ie_evaluator(tree, seqs, self._ie_batch_size(override_bs))
        evaluator.run(on_entries)
        pbar.close()
        self.prefix_stats = {**evaluator.stats, "distinct_tokens": tree.token_count, "requests": len(requests)}

        # per request: the sum of its continuation's log-probs in the softmax dtype, as HFLM sums them
        width = max(len(p[2]) for p in plan)
        index = torch.full((len(plan), width), n_entries, dtype=torch.long)
        base = 0
        for r, (_, _, targets) in enumerate(plan):
            index[r, : len(targets)] = torch.arange(base, base + len(targets))
            base += len(targets)
        sums = values[0][index].sum(dim=1).tolist()
        all_greedy = greedy[index].all(dim=1).tolist()
        res = []
        for (request_str, _, _), total, is_greedy in zip(requests, sums, all_greedy):
            answer = (float(total), bool(is_greedy))
            res.append(answer)
            if request_str is not None:
                self.cache_hook.add_partial("loglikelihood", request_str, answer)
        return res

    # ------------------------------------------------------------------ generation

    def _ie_greedy_unsupported(self, kwargs: dict[str, Any]) -> str | None:
        extra = sorted(k for k in kwargs if k not in ("do_sample", "temperature"))
        if extra:
            return f"generation kwargs {extra}"
        if kwargs.get("do_sample") or float(kwargs.get("temperature") or 0.0) > 0.0:
            return "sampling"
        config = getattr(self.model, "generation_config", None)
        for name, default in _GREEDY_DEFAULTS.items():
            value = getattr(config, name, None) if config is not None else None
            if value is not None and value != default and value != [] and value != {}:
                return f"generation_config.{name}={value!r}"
        return None

    def _ie_encode_context(self, context: str, max_ctx_len: int, truncated: list[int]) -> list[int]:
        # HFLM.tok_batch_encode for one string (it decides BOS on a batch's first string).
        kwargs: dict[str, Any] = {}
        if has_bos_prefix(context, getattr(self.tokenizer, "bos_token", None)):
            kwargs = {"add_special_tokens": False}
        elif self.add_bos_token is not None:
            kwargs = {"add_special_tokens": self.add_bos_token}
        ids = list(self.tokenizer(context, truncation=self.truncation, **kwargs)["input_ids"])
        if len(ids) > max_ctx_len:
            truncated.append(len(ids))
            ids = ids[-max_ctx_len:]
        return ids

    def _ie_eos_ids(self) -> set[int]:
        config = getattr(self.model, "generation_config", None)
        eos = getattr(config, "eos_token_id", None) if config is not None else None
        if eos is None:
            eos = getattr(self.model.config, "eos_token_id", None)
        if eos is None:
            return set()
        return {int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])}

    def _ie_finish_text(self, tokens: list[int], until: list[str]) -> str:
        # HFLM.generate_until's post-processing of one row.
        if isinstance(self.think_end_token, int):
            marks = [i for i, t in enumerate(tokens) if t == self.think_end_token]
            if marks:
                tokens = tokens[marks[-1] + 1 :]
        text = self.tok_decode(tokens)
        if isinstance(self.think_end_token, int):
            text = text.lstrip()
        return postprocess_generated_text(
            generation=text, stop=until,
            think_end_token=self.think_end_token if isinstance(self.think_end_token, str) else None,
        )

    def generate_until(self, requests, disable_tqdm: bool = False):
        if not requests:
            return []
        if not self.prefix_sharing or self.backend != "causal" or any(len(r.args) != 2 for r in requests):
            return super().generate_until(requests, disable_tqdm=disable_tqdm)
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
            contexts = [] if reason else [self._ie_encode_context(requests[i].args[0], max_ctx_len, truncated)
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
                self._ie_note("generate_until", reason)
                outs = super().generate_until([requests[i] for i in members], disable_tqdm=True)
                for i, s in zip(members, outs):
                    results[i] = s
                pbar.update(len(members))
                continue
            for i, s in zip(members, self._ie_generate(contexts, until, max_gen_toks)):
                results[i] = s
                self.cache_hook.add_partial("generate_until", (requests[i].args[0], gen_kwargs), s)
                pbar.update(1)
        pbar.close()
        return results  # type: ignore[return-value]

    def _ie_generate(self, contexts: list[list[int]], until: list[str], max_gen_toks: int) -> list[str]:
        if max_gen_toks <= 0:
            return [self._ie_finish_text([], until) for _ in contexts]
        seq_ids: dict[tuple[int, ...], int] = {}
        seqs: list[tuple[int, ...]] = []
        which = []
        for ctx in contexts:
            sid = seq_ids.setdefault(tuple(ctx), len(seqs))
            if sid == len(seqs):
                seqs.append(tuple(ctx))
            which.append(sid)
        tree = PrefixTree(seqs)
        for sid, seq in enumerate(seqs):
            tree.terminal[sid].entries.append((sid, len(seq) - 1, -1))
        first: dict[int, int] = {}
        tokens: dict[int, list[int]] = {}
        ready: list[int] = []
        eos = self._ie_eos_ids()
        batch_size = self._ie_batch_size()
        evaluator = self._ie_evaluator(tree, seqs, batch_size, keep_all_kv=True)
        decode_rows = self.decode_batch_size or batch_size

        def stopped(toks: list[int]) -> bool:
            text = self.tokenizer.decode(toks, skip_special_tokens=False)
            return any(stop and stop in text for stop in until)

        def on_entries(eids, picked, index, targets):
            best = picked.argmax(dim=-1)[index].tolist()
            for sid, tok in zip(eids, best):
                first[sid] = tok

        def on_ready(nodes):
            for node in nodes:
                for sid in node.terminal:
                    ready.append(sid)
                    _hold(node)

        def _hold(node):
            while node.parent is not None:
                node.users += 1
                node = node.parent

        def _release(node):
            while node.parent is not None:
                node.users -= 1
                if node.users <= 0:
                    node.users, node.kv = 0, None
                node = node.parent

        def flush(final: bool) -> None:
            while len(ready) >= decode_rows or (final and ready):
                batch, ready[:] = ready[:decode_rows], ready[decode_rows:]
                nodes = [tree.terminal[sid] for sid in batch]
                outs = evaluator.decode(nodes, [first[sid] for sid in batch], max_gen_toks, eos, stopped)
                for sid, node, toks in zip(batch, nodes, outs):
                    tokens[sid] = toks
                    _release(node)

        evaluator.run(on_entries, on_ready=on_ready, flush=flush)
        self.prefix_stats = {**evaluator.stats, "distinct_tokens": tree.token_count, "requests": len(contexts)}
        return [self._ie_finish_text(tokens[sid], until) for sid in which]
