"""Checks of a sweep's options that run before the model loads (and in ``--dry-run``).

Each failure is a :class:`SweepOptionError` (a ``UserError``: ``instructeval`` prints one line and
exits 2) naming the option, the bad value and what would be accepted.

Example:
    >>> check_batch_size("auto:4")
    'auto:4'
    >>> resolve_names("agnwes", ["agnews", "imdb"], "task")
    Traceback (most recent call last):
    ...
    instructeval_tasks.sweep.validate.SweepOptionError: unknown task(s) ['agnwes'] (did you mean 'agnews'?); known: agnews, imdb
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from ..errors import UserError


class SweepOptionError(UserError, ValueError):
    """An option of ``instructeval run`` / ``run_sweep`` with a bad value."""


def resolve_names(values: list[str] | str, known: list[str], what: str) -> list[str]:
    """Split comma lists, expand ``all``, and reject unknown names with the closest and the known ones."""
    if isinstance(values, str):
        values = [values]
    names = [v.strip() for item in values for v in item.split(",") if v.strip()]
    if not names:
        raise SweepOptionError(f"no {what} given; known: {', '.join(known)}, or 'all'")
    if any(n in ("all", "instructeval") for n in names):
        return list(known)
    names = [n.removeprefix("instructeval_") for n in names] if what == "task" else names
    unknown = [n for n in names if n not in known]
    if unknown:
        close = difflib.get_close_matches(unknown[0], known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise SweepOptionError(f"unknown {what}(s) {unknown}{hint}; known: {', '.join(known)}")
    return names


def parse_model_args(model_args: str | dict | None) -> dict[str, Any]:
    """``key=value,...`` (as ``lm_eval --model_args``) as a dict; a key without a value is an error."""
    if isinstance(model_args, dict):
        return dict(model_args)
    from lm_eval.utils import simple_parse_args_string

    text = model_args or ""
    for part in (p.strip() for p in text.split(",")):
        if part and ("=" not in part or not part.split("=", 1)[0].strip()):
            raise SweepOptionError(f"--model_args: {part!r} is not key=value (e.g. pretrained=models/smollm2,dtype=float32)")
    try:
        return simple_parse_args_string(text)
    except Exception as err:  # the harness's parser raises plain ValueErrors
        raise SweepOptionError(f"--model_args {text!r}: {err}") from None


def check_backend(model: str) -> None:
    """The harness backend ``model`` exists (resolves its class; loads no weights)."""
    import lm_eval.api.registry

    try:
        lm_eval.api.registry.get_model(model)
    except ValueError:
        from lm_eval.api.registry import model_registry

        known = sorted(model_registry)
        close = difflib.get_close_matches(model, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise SweepOptionError(f"--model {model!r}: no such harness backend{hint}; known: {', '.join(known)}") from None


def check_pretrained(args_dict: dict) -> None:
    """A ``pretrained=`` (or ``tokenizer=``) that names a local folder must exist.

    A value is taken for a local path when it starts with ``/``, ``.`` or ``~``, or when its parent
    folder exists here (``models/smollm2x`` beside ``models/``); a hub id (``org/name``, no such
    local folder) is left to the backend. A typo then fails here, before the lock, the output folder
    and the model load, with the closest folder named.
    """
    import os

    for key in ("pretrained", "tokenizer"):
        value = args_dict.get(key)
        if not isinstance(value, str) or not value.strip():
            continue
        path = Path(os.path.expanduser(value))
        local = value.startswith(("/", ".", "~")) or (len(path.parts) > 1 and path.parent.is_dir())
        if not local or path.exists():
            continue
        parent = path.parent
        siblings = sorted(p.name for p in parent.iterdir()) if parent.is_dir() else []
        close = difflib.get_close_matches(path.name, siblings, n=1)
        hint = f" (did you mean {str(parent / close[0])!r}?)" if close else ""
        where = "" if parent.is_dir() else f"; {parent} does not exist either"
        raise SweepOptionError(f"--model_args {key}={value}: no such folder{hint}{where}")


def check_batch_size(batch_size: int | str) -> int | str:
    """A positive integer, ``auto`` or ``auto:N`` (as ``lm_eval --batch_size``)."""
    if isinstance(batch_size, int) and not isinstance(batch_size, bool) and batch_size >= 1:
        return batch_size
    if isinstance(batch_size, str) and re.fullmatch(r"auto(:[1-9][0-9]*)?", batch_size):
        return batch_size
    raise SweepOptionError(f"--batch_size {batch_size!r}: expected a positive integer, 'auto' or 'auto:N'")


def check_max_batch_size(max_batch_size: int | None) -> None:
    if max_batch_size is not None and max_batch_size < 1:
        raise SweepOptionError(f"--max_batch_size {max_batch_size}: expected a positive integer")


def check_chat_template(lm: Any, label: str | None = None) -> None:
    """Refuse a chat placement for a model whose tokenizer has no chat template (one line, exit 2)."""
    tokenizer = getattr(lm, "tokenizer", None)
    if tokenizer is not None and not getattr(tokenizer, "chat_template", None):
        who = f"model {label}" if label else "the model"
        raise UserError(f"--placements chat-system/chat-user need a chat template, and {who} has none "
                        "(a base model); use --placements description")
