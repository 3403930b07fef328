"""Key/value caches: transformers cache objects from tensors and back, and the KV memory budget.

A *KV token* is one token position's keys and values in every layer; its size in bytes
(``kv_token_bytes``) is measured once per model from a one-token forward pass. Everything the
evaluator keeps or builds is counted in KV tokens: the caches kept on tree nodes (prefixes that later
rows attend to) and, per forward pass, the cache the model fills (every row's past plus its own
tokens, the past repeated per row).

Example:
    >>> parse_bytes("1.5GB"), parse_bytes("512MiB"), parse_bytes(2048), parse_bytes("none")
    (1500000000, 536870912, 2048, None)
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import torch

from .tree import Node

# The forward argument that takes a KV cache, newest name first: transformers 5.2x calls it
# ``cache`` (``past_key_values`` stays a deprecated alias for a while), earlier releases
# ``past_key_values``.
CACHE_ARGUMENTS = ("cache", "past_key_values")

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_bytes(value: int | float | str | None, name: str = "max_kv_memory", *, zero_is_off: bool = False) -> int | None:
    """Bytes from an int or a string like ``"1GB"``, ``"512MiB"``, ``"2e9"``; ``None``/``"none"``: no bound.
    With ``zero_is_off`` (a cache's size): 0 is allowed (no cache) and "none" is not (a cache needs a bound)."""
    hint = "0 to keep none" if zero_is_off else "'none' for no bound"
    if value is None and not zero_is_off:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number, unit = float(value), ""
    else:
        text = str(value).strip().lower().replace(" ", "")
        if text in ("none", "inf", "unbounded") and not zero_is_off:
            return None
        match = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)([kmgt]i?b|b)?", text)
        if not match:
            raise ValueError(f"{name}: cannot read {value!r} as a size; give bytes (2000000000) or a "
                             f"size like '1GB', '512MB', '1.5GiB', or {hint}")
        number, unit = float(match.group(1)), match.group(2) or ""
    size = int(number * _UNITS[unit])
    if size < 0 or (size == 0 and not zero_is_off):
        raise ValueError(f"{name} must be positive, got {value!r} (use {hint})")
    return size


def cache_argument(forward: Any) -> str | None:
    """The name under which ``forward`` takes a KV cache (``cache`` or ``past_key_values``), or None.

    Example:
        >>> cache_argument(lambda input_ids, cache=None: None), cache_argument(lambda input_ids: None)
        ('cache', None)
    """
    params = inspect.signature(forward).parameters
    return next((name for name in CACHE_ARGUMENTS if name in params), None)


def output_cache(output: Any) -> Any:
    """The KV cache a forward pass returned (``output.cache``, or ``output.past_key_values`` before 5.2x)."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else getattr(output, "past_key_values", None)


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
    # transformers 4.56-4.57 initialise a layer from its keys alone, 5.x from keys and values.
    takes_values = len(inspect.signature(DynamicLayer.lazy_initialization).parameters) > 2
    for keys, values in kv:
        layer = DynamicLayer()
        layer.lazy_initialization(*((keys, values) if takes_values else (keys,)))
        layer.keys, layer.values = keys, values
        cache.layers.append(layer)
    return cache


def cache_tensors(cache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "key_cache"):
        return list(zip(cache.key_cache, cache.value_cache))
    return [(k, v) for k, v, *_ in cache]


def path_kv(node: Node) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The KV of ``node``'s whole path (root excluded), [heads, len, dim] per layer, in one tensor each."""
    segments = [n.kv for n in node.path()]
    if any(s is None for s in segments):
        raise RuntimeError("internal error: a needed KV segment was released")
    if len(segments) == 1:
        return list(segments[0])
    return [(torch.cat([s[i][0] for s in segments], dim=1), torch.cat([s[i][1] for s in segments], dim=1))
            for i in range(len(segments[0]))]


class NodeKV:
    """The KV kept on tree nodes, counted in KV tokens: set with ``keep``, freed with ``drop``.

    KV ``lend``-ed to a node (views of ``prefix_cache``'s tensors, whose memory the cache holds
    anyway) is not counted; a pass that reads it copies it into its rows' past, which is."""

    def __init__(self) -> None:
        self.tokens = 0  # KV tokens held on nodes now
        self.peak = 0
        self.lent: set[int] = set()  # ids of the nodes whose KV is lent

    def lend(self, node: Node, kv: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        node.kv = kv
        self.lent.add(id(node))

    def keep(self, node: Node, kv: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        if node.kv is None:
            self.tokens += node.length
            self.peak = max(self.peak, self.tokens)
        node.kv = kv

    def drop(self, node: Node) -> None:
        if node.kv is not None:
            node.kv = None
            if id(node) in self.lent:
                self.lent.discard(id(node))
            else:
                self.tokens -= node.length

    def hold(self, node: Node) -> None:
        """One more consumer of the KV of ``node``'s path."""
        while node.parent is not None:
            node.users += 1
            node = node.parent

    def release(self, node: Node) -> None:
        """One consumer fewer; the KV nobody needs any more is freed."""
        while node.parent is not None:
            node.users -= 1
            if node.users <= 0:
                node.users = 0
                self.drop(node)
            node = node.parent
