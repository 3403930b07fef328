"""Whether the prefix-tree path can serve a model (and a set of requests), and why not.

The checks are structural (causal text model, sdpa/eager attention, a forward that takes a KV
cache, position ids and a 4D mask; attention layers only, no chunked-attention layer shorter than
the sequences) plus a one-time numerical self-check: tree evaluation (shared pasts, packing,
deferred children) against plain forwards of a few short sequences. Sequences longer than a
sliding-attention window (Gemma 3's 512) get windowed masks, one per layer type; the first such
request runs a second self-check, on sequences that cross the window, against the model's own
windowed forward. Anything that fails goes to the stock ``HFLM`` code, with the reason logged once.
"""

from __future__ import annotations

import inspect
import logging
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from .evaluator import ForwardSpec, TreeEvaluator
from .kv import CACHE_ARGUMENTS, cache_argument
from .tree import PrefixTree

if TYPE_CHECKING:
    from lm_eval.models.huggingface import HFLM

log = logging.getLogger(__name__)

SUPPORTED_ATTENTION = ("sdpa", "eager")
WINDOWED_LAYER_TYPES = ("sliding_attention", "chunked_attention")
_SELF_CHECK_TEXT = "Solve the following task. News: Markets rally as investors welcome the news. Category: Business"


class PrefixSupport:
    """Answers "can the prefix path serve this model, for sequences this long?" (None: yes, else why not)."""

    def __init__(self, lm: HFLM, spec: ForwardSpec) -> None:
        self.lm, self.spec = lm, spec
        self.self_check: str | None = None  # None: not run yet; "": passed; else the failure
        self.window_check: str | None = None  # the same, for sequences longer than the window
        self._noted: set[str] = set()

    def window(self) -> tuple[set[str], int | None]:
        """The model's layer types and its smallest attention window (None: no windowed layers)."""
        windows = self.spec.windows  # read from the model config once, when the spec was built
        sizes = [w for w in windows.values() if w is not None]
        return set(windows), (min(sizes) if sizes else None)

    def reason(self, max_len: int = 0) -> str | None:
        """Why the prefix path cannot serve sequences of up to ``max_len`` tokens (None when it can)."""
        lm = self.lm
        if lm.backend != "causal":
            return f"backend {lm.backend!r} (only causal models)"
        model = lm.model
        config = getattr(model, "config", None)
        if config is None or not hasattr(model, "forward"):
            return "not a transformers model"
        if any(getattr(config, key, None) is not None for key in ("vision_config", "audio_config", "speech_config")):
            return "multimodal model (text-only requests through the stock code)"
        attn = getattr(config, "_attn_implementation", None)
        if attn not in SUPPORTED_ATTENTION:
            return f"attention implementation {attn!r} (tree masks need one of {SUPPORTED_ATTENTION})"
        params = inspect.signature(model.forward).parameters
        missing = [name for name in ("position_ids", "attention_mask") if name not in params]
        if cache_argument(model.forward) is None:
            missing.insert(0, "/".join(CACHE_ARGUMENTS))
        if missing:
            return f"the model's forward takes no {', '.join(missing)}"
        types, window = self.window()
        other = types - {"full_attention", *WINDOWED_LAYER_TYPES}
        if other:
            return f"layer types {sorted(other)}"
        beyond = window is not None and max_len > window
        if beyond and "chunked_attention" in types:
            return f"sequences of {max_len} tokens exceed the attention chunk ({window})"
        if self.self_check is None:
            self.self_check = self._check_logits_modes()
        if self.self_check:
            return f"self-check failed: {self.self_check}"
        if beyond:
            if self.window_check is None:
                self.window_check = self._run_window_check(window)
            if self.window_check:
                return (f"sequences of {max_len} tokens exceed the attention window ({window}) and the windowed "
                        f"self-check failed: {self.window_check}")
        return None

    def note(self, what: str, reason: str) -> None:
        """Log a fallback once per (entry point, reason)."""
        key = f"{what}: {reason}"
        if key not in self._noted:
            self._noted.add(key)
            log.warning("instructeval-hf: %s falls back to the stock hf code (%s)", what, reason)

    def _check_logits_modes(self) -> str:
        """Run the self-check, falling back from a boolean ``logits_to_keep`` to an int one to none
        (custom model code may not take the newer forms)."""
        spec = self.spec
        modes = {"mask": ["mask", "last", "none"], "last": ["last", "none"]}.get(spec.logits_mode, ["none"])
        first = ""
        for mode in modes:
            spec.logits_mode = mode
            failure = self._run_self_check()
            if not failure:
                return ""
            first = first or failure
        return first

    def _run_self_check(self) -> str:
        """Tree evaluation (shared pasts, packing, deferred groups) vs a plain forward of each sequence.

        Compared by the largest KL divergence of the next-token distributions over all positions:
        a wrong mask or position gives KL of order 1; float32 noise is below 1e-6 and bfloat16 noise
        below 1e-2 here."""
        lm = self.lm
        try:
            vocab = self._token_range()
            stem = [t for t in lm.tokenizer.encode(_SELF_CHECK_TEXT, add_special_tokens=False) if 0 <= t < vocab][:14]
            if len(stem) < 10:
                gen = torch.Generator().manual_seed(1234)
                stem = torch.randint(5, max(6, min(vocab, 5000)), (14,), generator=gen).tolist()
            seqs = [stem[:12], stem[:9] + stem[10:11], stem[:9] + stem[11:14] + stem[9:11], stem[:12] + stem[:2], stem[:4]]
            seqs = list(dict.fromkeys(tuple(s) for s in seqs))
            refs = []
            for seq in seqs:
                ids = torch.tensor([seq], dtype=torch.long, device=lm.device)
                with torch.no_grad():
                    refs.append(F.log_softmax(lm.model(ids).logits[0].float(), dim=-1).cpu())
            # tiny rows, every child deferred; one packed row
            return self._tree_against(seqs, [range(len(seq)) for seq in seqs], refs, ((3, 0), (64, 64)))
        except Exception as err:  # any model that cannot take these inputs
            return f"{type(err).__name__}: {err}"

    def _run_window_check(self, window: int) -> str:
        """Tree evaluation of sequences that cross the window (branching before and after it, in one
        packed row and in rows split over pasts) vs the model's own forward of each, which builds its
        windowed masks itself. Compared on the last positions, where the window cuts keys off."""
        lm = self.lm
        try:
            gen = torch.Generator().manual_seed(window)
            base = torch.randint(5, max(6, min(self._token_range(), 5000)), (window + 16,), generator=gen).tolist()
            w = window
            seqs = [tuple(base[: w + 12]), tuple(base[: w + 4] + base[w + 8 : w + 16]),
                    tuple(base[: w - 6] + base[w + 2 : w + 14])]
            last = 10
            takes_keep = "logits_to_keep" in inspect.signature(lm.model.forward).parameters
            refs = []
            for seq in seqs:
                ids = torch.tensor([seq], dtype=torch.long, device=lm.device)
                with torch.no_grad():
                    logits = lm.model(ids, **({"logits_to_keep": last} if takes_keep else {})).logits[0, -last:]
                refs.append(F.log_softmax(logits.float(), dim=-1).cpu())
            # rows split below the first branch (pasts that cross the window), then one packed row
            return self._tree_against(seqs, [range(len(seq) - last, len(seq)) for seq in seqs], refs,
                                      ((w // 2, 0), (4 * w, 4 * w)))
        except Exception as err:  # e.g. a forward that takes no mask per layer type
            return f"{type(err).__name__}: {err}"

    def _token_range(self) -> int:
        """Token ids below this are valid for both the model and the tokenizer."""
        lm = self.lm
        return int(min(getattr(lm.model.config.get_text_config(), "vocab_size", 0) or len(lm.tokenizer), len(lm.tokenizer)))

    def _tree_against(self, seqs: list[tuple[int, ...]], scored: list[range], refs: list[torch.Tensor],
                      layouts: tuple[tuple[int, int], ...]) -> str:
        """The tree evaluation of ``seqs`` under each ``(subtree_tokens, pack_tokens)`` layout against
        reference next-token log-probabilities (``refs[s][i]`` is position ``scored[s][i]`` of
        sequence ``s``): "" when the largest KL divergence is within the dtype's tolerance, else why not."""
        lm = self.lm
        tree = PrefixTree(seqs)
        cells: list[tuple[int, int]] = []
        for sid, positions in enumerate(scored):
            for i, j in enumerate(positions):
                tree.locate(sid, j).entries.append((len(cells), j, -1))
                cells.append((sid, i))
        got: dict[tuple[int, int], torch.Tensor] = {}

        def on_entries(eids, picked, index, targets):
            lsm = F.log_softmax(picked.float(), dim=-1)
            for eid, k in zip(eids, index.tolist()):
                got[cells[eid]] = lsm[k].cpu()

        dtype = lm.mixed_precision_dtype or lm.model.dtype
        tol = 1e-4 if dtype == torch.float32 else 0.05
        for subtree, pack in layouts:
            got.clear()
            TreeEvaluator(tree, self.spec, token_budget=2 * subtree, subtree_tokens=subtree,
                          pack_tokens=pack).run(on_entries)
            worst = 0.0
            for cell in cells:
                p = refs[cell[0]][cell[1]]
                worst = max(worst, float((p.exp() * (p - got[cell])).sum()))
            if not worst <= tol:
                return f"max KL {worst:.3g} > {tol} (row budget {subtree})"
        return ""

def layer_windows(config) -> dict[str, int | None]:
    """Each attention layer type of ``config``'s text model and its window (None: full attention).

    Example: Gemma 3 270M gives ``{"sliding_attention": 512, "full_attention": None}``; Llama
    ``{"full_attention": None}``."""
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
    windows: dict[str, int | None] = {}
    for kind, kwargs in zip(types, per_layer):
        size = kwargs.get("sliding_window") if kind in WINDOWED_LAYER_TYPES else None
        size = int(size) if size else None
        known = windows.get(kind, size)
        windows[kind] = size if known is None or size is None else min(known, size)
    return windows
