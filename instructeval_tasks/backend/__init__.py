"""``--model instructeval-hf``: the harness ``hf`` backend, computing each shared prompt prefix once.

Every few-shot variant repeats one prefix (instruction + K demos, hundreds of tokens) in front of
every test example and every answer choice; the stock ``hf`` backend (``HFLM``) recomputes it for
every (doc, choice) row. ``InstructEvalHFLM`` (``model``) is ``HFLM`` with the same ``model_args``
and the same tokenisation (``_encode_pair``, BOS handling, left truncation to ``max_length``), but:

- **log-likelihood** (``loglikelihood``): the token rows the stock backend would feed the model are
  put in a token prefix tree (``tree``) and every distinct token position is computed once, in
  batches of tree fragments (``batch_rows``) that attend to their prefix's cached keys/values (``kv``)
  through a tree-shaped attention mask (``masks``), scheduled by ``evaluator``. Scores,
  ``is_greedy``, ``softmax_dtype`` and the request order follow ``HFLM._loglikelihood_tokens``.
- **generation** (greedy, ``generation`` and ``decoder``): the contexts are prefilled through the
  same tree (shared prefixes once), then each request is decoded greedily from its cached prompt,
  stopping at EOS, at any ``until`` string or after ``max_gen_toks``, and post-processed as
  ``HFLM.generate_until`` does.

It falls back to the parent ``HFLM`` code, explicitly and with a logged reason (``support``), for
anything else: ``loglikelihood_rolling``, seq2seq and multimodal models, attention implementations
other than ``sdpa``/``eager``, layer types other than (windowed) attention, sequences longer than a
chunked-attention chunk, sampling or extra generation kwargs, generation configs with logits
processors, and any model that fails the one-time self-check. Sequences longer than a sliding
window (Gemma 3's 512 tokens) stay on the prefix path with one mask per layer type, the sliding
one windowed, once a second self-check on sequences that cross the window has passed.
``prefix_sharing=False`` turns the whole backend into plain ``hf``.

Extra ``model_args``:

- ``prefix_sharing`` (default true);
- ``pack_tokens`` (default 32): sibling subtrees shorter than this share one batch row;
- ``decode_batch_size`` (default ``batch_size``): how many requests one greedy decoding step
  advances together;
- ``max_kv_memory`` (default ``400MB``; bytes, a size such as ``1GB``/``300MiB``, or ``none``): the
  most key/value cache alive at once, i.e. the KV kept on tree nodes for prefixes still in use plus
  the cache one forward pass fills (each row's past and its own tokens). When the next row would
  exceed it, the pass runs with the rows it has and the rest wait for later passes (smaller passes,
  same results); a pass always takes at least one row, so a budget below one sequence's KV is
  exceeded by that row. Prompt caches waiting for greedy decoding count toward it too.
- ``prefix_cache_memory`` (default ``1GB``; a size, ``0`` keeps none): the KV of the prefixes a
  call's contexts shared (an instruction with its demos; log-likelihood or greedy generation), kept
  for the next calls of the same model (``prefix_cache``), the least recently used dropped first. A sweep that scores
  one instruction in several calls (a budgeted grid's first slice and rounds, pooled calls)
  computes its prefix once; a position a request scores is always computed. Besides
  ``max_kv_memory``: a pass that reads kept KV copies it into its rows' past, and that copy counts.
- ``allow_truncation`` (default false): before an evaluation's first forward pass, every request of
  its tasks is measured against ``max_length`` (``window``); a task whose prompts the harness would
  cut from the left (the instruction first) is refused (under the ``lm_eval`` CLI: one line, exit
  code 2). With ``allow_truncation=True`` it runs, and its results record what was cut
  (``truncation`` in the task's config metadata, which ``instructeval aggregate`` warns about). A
  task with ``allow_truncation: true`` in its metadata (a sweep run with ``--allow-truncation``) is
  allowed too; a task the sweep already checked is not measured again.

``batch_size`` keeps its meaning as a compute-memory bound: a forward pass holds at most
``batch_size`` x (longest request) tokens, the most a stock ``hf`` batch would.

Registration: ``instructeval_tasks.backend:InstructEvalHFLM`` is the registry target; getting that
attribute imports ``model``, whose ``@register_model`` registers ``instructeval-hf``. Importing this
package itself is cheap (no torch), so the stdlib-only ``hook`` module under it can register a lazy
placeholder when the harness's registry is imported (see its docstring for the ``.pth``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from .names import MODEL_NAME

if TYPE_CHECKING:  # read on first use (``instructeval_tasks.lazy``): the package itself imports no torch
    from .evaluator import ForwardSpec, TreeEvaluator
    from .model import DEFAULT_MAX_KV_MEMORY, InstructEvalHFLM
    from .tree import Node, PrefixTree

__all__ = ["DEFAULT_MAX_KV_MEMORY", "MODEL_NAME", "ForwardSpec", "InstructEvalHFLM", "Node", "PrefixTree", "TreeEvaluator"]

__getattr__, __dir__ = lazy_exports(__name__)
