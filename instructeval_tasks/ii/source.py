"""Where the raw Instruction Induction files come from: a data directory or the pinned download.

- With ``data_dir`` (task metadata, or ``$INSTRUCTEVAL_DATA_DIR``):
  ``<data_dir>/instruction_induction/raw/<execute|induce>/<task>.json`` (the layout of
  ``../shared/data``, a copy of the original repository's ``data/``).
- Without it: the original repository's raw files at the pinned commit,
  ``RAW_URL.format(commit=SOURCE_COMMIT, split=..., task=...)``, downloaded once into
  ``$INSTRUCTEVAL_CACHE`` (default ``~/.cache/instructeval``)
  ``/instruction_induction/<commit>/raw/<split>/<task>.json``; later runs read the cached copy.
  With ``HF_DATASETS_OFFLINE=1`` or ``HF_HUB_OFFLINE=1`` nothing is downloaded.

A file that cannot be found or fetched is a :class:`IIDataNotFound` naming the path (or URL) and
the fix.
"""

from __future__ import annotations

import json
import os
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from ..data import DatasetNotFound
from .examples import ExampleError
from .names import REPOSITORY, SOURCE_COMMIT  # facts, also read by the gold bank importer

RAW_URL = "https://raw.githubusercontent.com/" + REPOSITORY + "/{commit}/data/raw/{split}/{task}.json"
LOCAL_DIR = "instruction_induction"
SPLITS = ("execute", "induce")
CACHE_ENV = "INSTRUCTEVAL_CACHE"
OFFLINE_ENVS = ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")


class IIDataNotFound(DatasetNotFound):
    """A raw Instruction Induction file is missing or could not be downloaded."""


def local_path(data_dir: str | Path, split: str, task: str) -> Path:
    """``<data_dir>/instruction_induction/raw/<split>/<task>.json`` (``task``: the original name)."""
    return Path(data_dir).expanduser() / LOCAL_DIR / "raw" / split / f"{task}.json"


def cache_path(split: str, task: str, cache_dir: str | Path | None = None) -> Path:
    root = Path(cache_dir or os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "instructeval").expanduser()
    return root / LOCAL_DIR / SOURCE_COMMIT / "raw" / split / f"{task}.json"


def _offline() -> bool:
    return any(os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on") for name in OFFLINE_ENVS)


def download(split: str, task: str, *, base_url: str = RAW_URL, cache_dir: str | Path | None = None) -> Path:
    """The cached copy of the pinned raw file, fetched first when absent (atomic write)."""
    target = cache_path(split, task, cache_dir)
    if target.is_file():
        return target
    url = base_url.format(commit=SOURCE_COMMIT, split=split, task=task)
    fix = (f"pass --metadata '{{\"data_dir\": \"<dir>\"}}' (or set $INSTRUCTEVAL_DATA_DIR) with "
           f"<dir>/{LOCAL_DIR}/raw/{split}/{task}.json, a copy of {REPOSITORY}@{SOURCE_COMMIT[:7]} data/")
    if _offline():
        raise IIDataNotFound(f"{task}: {target} is not cached and downloads are off (HF_*_OFFLINE); {fix}")
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            payload = response.read()
        json.loads(payload.decode("utf-8"))
    except Exception as err:  # network, HTTP status, truncated or non-JSON body
        raise IIDataNotFound(f"{task}: could not download {url} ({type(err).__name__}: {err}); {fix}") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{task}.", suffix=".part")
    with os.fdopen(fd, "wb") as handle:
        handle.write(payload)
    os.replace(tmp, target)
    return target


def raw_path(split: str, task: str, data_dir: str | Path | None) -> Path:
    """The file to read: under ``data_dir`` when given (it must exist), else the cached download."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if data_dir:
        path = local_path(data_dir, split, task)
        if not path.is_file():
            root = Path(data_dir).expanduser()
            hint = "" if root.is_dir() else f" (the data directory {root} itself does not exist)"
            raise IIDataNotFound(
                f"{task}: no {split} file at {path}{hint}. A data directory holds "
                f"<dir>/{LOCAL_DIR}/raw/{{execute,induce}}/<task>.json (the original repository's data/); "
                f"point data_dir at such a folder, or unset it to download {REPOSITORY}@{SOURCE_COMMIT[:7]}."
            )
        return path
    return download(split, task)


def read_examples(path: Path, task: str) -> list[tuple[str, dict[str, Any]]]:
    """``(id, example)`` pairs of a raw file ``{"metadata": ..., "examples": {"1": {...}, ...}}``, in file order."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise IIDataNotFound(f"{task}: cannot read {path} as JSON ({type(err).__name__}: {err})") from None
    examples = data.get("examples") if isinstance(data, dict) else None
    if not isinstance(examples, dict) or not examples:
        raise ExampleError(f"{path}: expected {{\"examples\": {{\"1\": {{...}}, ...}}}} with at least one example")
    return [(str(key), value) for key, value in examples.items()]
