"""Which task-metadata keys are model arguments, so the unknown-key check leaves them alone.

The ``lm_eval`` CLI merges ``--model_args`` into every task's metadata (``model_args | metadata``),
and ``simple_evaluate`` does the same when it builds its own ``TaskManager``. A task therefore sees
``pretrained``, ``dtype``, ``gguf_file`` ... beside the InstructEval keys, with nothing that says
where each came from. Two sources tell them apart:

- ``backend_parameters()``: every constructor parameter of the installed harness's model classes
  (``lm_eval/models/*.py``) and of ``instructeval-hf``, read from their source with ``ast`` (no
  import of torch, vLLM or API clients), so a new harness version brings its own keys;
- ``model_args_in_flight()``: the keys of the ``model_args`` that the running
  ``lm_eval.evaluator.simple_evaluate`` call received, which also covers keys a backend forwards
  to ``from_pretrained`` through ``**kwargs`` (``attn_implementation=...``).

Example:
    >>> {"pretrained", "dtype", "gguf_file", "trust_remote_code"} <= backend_parameters()
    True
"""

from __future__ import annotations

import ast
import functools
import json
import sys
from pathlib import Path
from typing import Any

_BACKEND_PACKAGE = Path(__file__).resolve().parent / "backend"  # the instructeval-hf backend


def _init_parameters(path: Path) -> set[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                args = item.args
                names.update(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs)
    names.discard("self")
    return names


@functools.cache
def backend_parameters() -> frozenset[str]:
    """Constructor parameters of every model class the installed harness ships, plus ours."""
    import lm_eval.models

    root = Path(lm_eval.models.__file__).resolve().parent
    names: set[str] = set()
    for path in sorted(root.glob("*.py")):
        if not path.name.startswith(("utils", "__")):
            names |= _init_parameters(path)
    for path in sorted(_BACKEND_PACKAGE.glob("*.py")):
        names |= _init_parameters(path)
    return frozenset(names)


def _keys_of(model_args: Any) -> set[str]:
    if isinstance(model_args, dict):
        return {str(k) for k in model_args}
    if isinstance(model_args, str) and model_args.strip():
        text = model_args.strip()
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                return {str(k) for k in parsed}
        from lm_eval.utils import simple_parse_args_string

        try:
            return set(simple_parse_args_string(text))
        except Exception:  # a string the harness itself will reject later
            return set()
    return set()


def model_args_in_flight() -> set[str]:
    """Keys of ``model_args`` of the ``simple_evaluate`` call that is building this task, if any.

    The harness passes tasks nothing but their merged metadata; the call's own arguments are the
    only exact record of what came from ``--model_args``, so they are read from its frame.
    """
    keys: set[str] = set()
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "simple_evaluate" and frame.f_globals.get("__name__") == "lm_eval.evaluator":
            keys |= _keys_of(frame.f_locals.get("model_args"))
        frame = frame.f_back
    return keys
