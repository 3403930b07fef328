"""Model family and parameter count, for the family and scale breakdowns.

Resolution order for the parameter count of a model:

1. a ``--model-registry`` YAML entry that matches (user overrides);
2. the HF checkpoint in the ``pretrained`` directory, when it exists on this machine: the exact
   count summed from the ``*.safetensors`` headers, else an estimate from ``config.json``
   (:func:`estimate_parameters`);
3. the built-in registry (``model_registry.yaml``: the paper's 13 models, SmolLM2-135M,
   gemma-3-270m, Qwen2.5-0.5B);
4. the results file's ``config.model_num_parameters`` (what lm-eval measured);
5. unknown (scale group ``unknown``, with a warning).

Family: user registry, built-in registry, then ``config.json``'s ``model_type``, else ``unknown``.
Scale: ``<T B`` when the count is below the threshold ``T`` (default 6, the paper's split of
bloom-7b1/llama-7b/opt-6.7b/... from the rest), else ``>=T B``.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from .issues import AggregationError, IssueLog

MODEL_TYPE_FAMILIES = {
    "bloom": "BLOOM",
    "gpt_neo": "GPT Neo",
    "gpt_neox": "GPT Neo",
    "llama": "LLaMA",
    "opt": "OPT",
    "gemma": "Gemma",
    "gemma2": "Gemma",
    "gemma3": "Gemma",
    "gemma3_text": "Gemma",
    "qwen2": "Qwen",
    "qwen3": "Qwen",
    "mistral": "Mistral",
    "gpt2": "GPT-2",
    "phi": "Phi",
    "phi3": "Phi",
}
_GATED_MLP = {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "gemma3_text", "phi3", "olmo", "olmo2"}
_LEARNED_POSITIONS = {"opt", "gpt2", "gpt_neo"}


@dataclass(frozen=True)
class RegistryEntry:
    pattern: str
    family: str | None
    params_b: float | None
    name: str | None
    source: str

    def matches(self, texts: Iterable[str]) -> bool:
        return any(re.search(self.pattern, t, flags=re.IGNORECASE) for t in texts if t)


def _read_entries(text: str, source: str) -> list[RegistryEntry]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise AggregationError(f"model registry {source}: not valid YAML ({err})") from None
    items = data.get("entries") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise AggregationError(f"model registry {source}: expected a list of entries (or a mapping with 'entries')")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("pattern"), str):
            raise AggregationError(f"model registry {source}: entry {i} needs a 'pattern' string")
        try:
            re.compile(item["pattern"])
        except re.error as err:
            raise AggregationError(f"model registry {source}: entry {i}: bad regex {item['pattern']!r} ({err})") from None
        params = item.get("params_b")
        if params is not None and (isinstance(params, bool) or not isinstance(params, (int, float)) or params <= 0):
            raise AggregationError(f"model registry {source}: entry {i}: params_b must be a positive number")
        out.append(RegistryEntry(item["pattern"], item.get("family"), None if params is None else float(params), item.get("name"), source))
    return out


@dataclass
class Registry:
    """User entries first, then the built-in ones; the first match wins."""

    user: list[RegistryEntry]
    builtin: list[RegistryEntry]

    @classmethod
    def load(cls, extra_files: Sequence[str | os.PathLike] = ()) -> "Registry":
        text = resources.files("instructeval_aggregation").joinpath("model_registry.yaml").read_text(encoding="utf-8")
        builtin = _read_entries(text, "built-in")
        user: list[RegistryEntry] = []
        for path in extra_files:
            try:
                user.extend(_read_entries(Path(path).read_text(encoding="utf-8"), str(path)))
            except OSError as err:
                raise AggregationError(f"model registry {path}: cannot read ({err.strerror or err})") from None
            except UnicodeDecodeError as err:
                raise AggregationError(f"model registry {path}: not UTF-8 (byte {err.start})") from None
        return cls(user, builtin)

    def match(self, texts: Sequence[str], *, user: bool) -> RegistryEntry | None:
        for entry in self.user if user else self.builtin:
            if entry.matches(texts):
                return entry
        return None


def safetensors_parameters(folder: Path) -> int | None:
    """Exact parameter count from the headers of ``*.safetensors`` files in ``folder`` (no weights read)."""
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for file in files:
        try:
            with open(file, "rb") as handle:
                (length,) = struct.unpack("<Q", handle.read(8))
                if length > 100_000_000:
                    return None
                header = json.loads(handle.read(length))
        except (OSError, struct.error, json.JSONDecodeError, UnicodeDecodeError):
            return None
        for name, info in header.items():
            if name != "__metadata__" and isinstance(info, dict):
                total += math.prod(info.get("shape") or [1])
    return total or None


def _first(config: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if config.get(key) is not None:
            return config[key]
    return None


def estimate_parameters(config: Mapping[str, Any]) -> int | None:
    """Approximate parameter count of a decoder-only transformer from its HF ``config.json``.

    ``L * (attention + mlp) + V * h * (1 if tied else 2) (+ P * h learned positions)`` with
    ``attention = 2 * h * (n_heads * d) + 2 * h * (n_kv * d)`` (q, o; k, v; ``d`` the head size) and
    ``mlp = 3 * h * I`` for gated (SwiGLU/GeGLU) families, else ``2 * h * I``. Norms and biases are
    ignored (well under 1%).

    Example (SmolLM2-135M: h 576, L 30, I 1536, 9 heads, 3 kv heads, V 49152, tied):
        >>> estimate_parameters({"model_type": "llama", "hidden_size": 576, "num_hidden_layers": 30,
        ...     "intermediate_size": 1536, "num_attention_heads": 9, "num_key_value_heads": 3,
        ...     "vocab_size": 49152, "tie_word_embeddings": True})
        134479872
    """
    if isinstance(config.get("text_config"), dict):  # multimodal configs nest the language model's
        config = {**config, **config["text_config"]}
    h = _first(config, "hidden_size", "n_embd", "d_model", "word_embed_proj_dim")
    layers = _first(config, "num_hidden_layers", "n_layer", "num_layers")
    vocab = _first(config, "vocab_size")
    if not all(isinstance(x, int) and x > 0 for x in (h, layers, vocab)):
        return None
    heads = _first(config, "num_attention_heads", "n_head", "num_heads") or 1
    kv = _first(config, "num_key_value_heads") or heads
    head_dim = _first(config, "head_dim") or h // heads
    inter = _first(config, "intermediate_size", "ffn_dim", "n_inner") or 4 * h
    model_type = str(config.get("model_type", "")).lower()
    attention = 2 * h * heads * head_dim + 2 * h * kv * head_dim
    mlp = (3 if model_type in _GATED_MLP else 2) * h * inter
    tied = config.get("tie_word_embeddings", True)
    total = layers * (attention + mlp) + vocab * h * (1 if tied else 2)
    if model_type in _LEARNED_POSITIONS and isinstance(config.get("max_position_embeddings"), int):
        total += config["max_position_embeddings"] * h
    return int(total)


def _from_checkpoint(pretrained: str | None) -> tuple[int | None, str | None, str | None]:
    """``(parameters, how, model_type)`` from a local HF checkpoint directory."""
    if not pretrained:
        return None, None, None
    folder = Path(os.path.expanduser(pretrained))
    if not folder.is_dir():
        return None, None, None
    model_type = None
    config = None
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        model_type = str(config.get("model_type")) if config.get("model_type") else None
    except (OSError, ValueError, RecursionError, AttributeError):  # unreadable, not UTF-8 / JSON, absurdly nested
        config = None
    exact = safetensors_parameters(folder)
    if exact:
        return exact, "safetensors headers", model_type
    if isinstance(config, dict):
        estimate = estimate_parameters(config)
        if estimate:
            return estimate, "config.json estimate", model_type
    return None, None, model_type


def scale_label(params_b: float | None, threshold_b: float) -> str:
    """``'<6B'`` / ``'>=6B'`` (or ``'unknown'``).

    Example:
        >>> scale_label(1.3, 6), scale_label(6.7, 6), scale_label(6.0, 6), scale_label(None, 6)
        ('<6B', '>=6B', '>=6B', 'unknown')
    """
    if params_b is None or not math.isfinite(params_b):
        return "unknown"
    return f"<{threshold_b:g}B" if params_b < threshold_b else f">={threshold_b:g}B"


def resolve_models(
    models: Mapping[str, Mapping[str, Any]],
    registry: Registry,
    issues: IssueLog,
    *,
    threshold_b: float = 6.0,
):
    """One row per model: family, parameters (billions), where each came from, scale group.

    ``models`` maps a model label to ``{"pretrained": [...], "model_num_parameters": [...]}``.
    """
    import pandas as pd

    rows = []
    for model in sorted(models):
        info = models[model]
        pretrained = sorted({p for p in info.get("pretrained", []) if p})
        texts = [model] + pretrained
        user = registry.match(texts, user=True)
        builtin = registry.match(texts, user=False)
        params_b = None
        params_source = None
        model_type = None
        if user and user.params_b:
            params_b, params_source = user.params_b, f"registry {user.source}"
        for path in pretrained:
            count, how, mtype = _from_checkpoint(path)
            model_type = model_type or mtype
            if params_b is None and count:
                params_b, params_source = count / 1e9, f"{how} ({path})"
        if params_b is None and builtin and builtin.params_b:
            params_b, params_source = builtin.params_b, "registry built-in"
        measured = sorted({float(n) for n in info.get("model_num_parameters", []) if n})
        if params_b is None and measured:
            params_b, params_source = measured[-1] / 1e9, "results config.model_num_parameters"
        family = (user and user.family) or (builtin and builtin.family) or MODEL_TYPE_FAMILIES.get(model_type or "", model_type) or "unknown"
        family_source = (
            f"registry {user.source}" if user and user.family else "registry built-in" if builtin and builtin.family else "config.json model_type" if model_type else "unknown"
        )
        if params_b is None:
            issues.warn("model-size", f"{model}: parameter count unknown (add it with --model-registry); scale group 'unknown'")
        if family == "unknown":
            issues.warn("model-family", f"{model}: family unknown (add it with --model-registry)")
        rows.append(
            {
                "model": model,
                "family": family,
                "params_b": params_b if params_b is not None else math.nan,
                "scale": scale_label(params_b, threshold_b),
                "params_source": params_source or "unknown",
                "family_source": family_source,
                "pretrained": "; ".join(pretrained),
            }
        )
    return pd.DataFrame(rows, columns=["model", "family", "params_b", "scale", "params_source", "family_source", "pretrained"])
