"""Loading a task's two splits: the demonstration pool ("train") and the evaluation split.

Default source: the HF dataset named by the task YAML (``dataset_path``/``dataset_name`` and its
split names). With a data directory (metadata ``data_dir`` or ``$INSTRUCTEVAL_DATA_DIR``) the
splits come from ``<data_dir>/<local_dir>/train.jsonl`` and ``eval.jsonl`` instead, one JSON object
per line in the HF field layout (the layout of the project's shared sample data).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import datasets

from .options import DATA_DIR_ENV
from .specs import TaskSpec
from instructeval_tasks.errors import UserError

LOCAL_SPLIT_FILES = {"train": "train.jsonl", "eval": "eval.jsonl"}


class DatasetNotFound(UserError, FileNotFoundError):
    """A dataset or split could not be found; the message says what was looked for and how to fix it."""


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a malformed line is an error naming the file and line number."""
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{number}: not valid JSON ({err.msg}); each line must be one JSON object") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
            rows.append(row)
    if not rows:
        raise ValueError(f"{path}: the file holds no rows")
    return rows


def load_local_split(data_dir: str | Path, spec: TaskSpec, which: str) -> datasets.Dataset:
    """``<data_dir>/<spec.local_dir>/<train|eval>.jsonl`` as a ``datasets.Dataset``."""
    root = Path(data_dir).expanduser()
    path = root / spec.local_dir / LOCAL_SPLIT_FILES[which]
    if not path.is_file():
        hint = "" if root.is_dir() else f" (the data directory {root} itself does not exist)"
        raise DatasetNotFound(
            f"{spec.task_name}: no {which} split at {path}{hint}. A data directory holds "
            f"<dir>/{spec.local_dir}/train.jsonl and eval.jsonl; set data_dir in --metadata or "
            f"${DATA_DIR_ENV} to such a folder, or unset both to use the HF hub."
        )
    stat = path.stat()
    dataset = _load_jsonl_dataset(str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    needed = spec.text_fields + ((spec.label_field,) if spec.label_field else ())
    missing = [f for f in needed if f not in dataset.column_names]
    if missing:
        raise ValueError(f"{path}: rows lack the field(s) {missing} that {spec.task_name} needs (fields: {dataset.column_names})")
    return dataset


@functools.lru_cache(maxsize=32)
def _load_jsonl_dataset(path: str, mtime_ns: int, size: int) -> datasets.Dataset:
    # A sweep builds one task per variant; parse each file once per process (keyed by its
    # modification time and size, so an edited file is read again). Datasets are never modified
    # in place (select/map return new ones), so sharing is safe.
    return datasets.Dataset.from_list(read_jsonl(Path(path)))


def load_hf_split(path: str, name: str | None, split: str, spec: TaskSpec, **kwargs: Any) -> datasets.Dataset:
    """One split of an HF hub dataset, with an error that says how to run offline instead."""
    try:
        return datasets.load_dataset(path, name, split=split, **kwargs)
    except Exception as err:  # the hub raises many types: connection, missing config, auth
        raise DatasetNotFound(
            f"{spec.task_name}: could not load HF dataset {path!r} (config {name!r}, split {split!r}): "
            f"{type(err).__name__}: {err}. Without hub access, point data_dir in --metadata or "
            f"${DATA_DIR_ENV} at a folder with {spec.local_dir}/train.jsonl and eval.jsonl."
        ) from err


def load_splits(
    spec: TaskSpec,
    *,
    data_dir: str | None,
    dataset_path: str | None,
    dataset_name: str | None,
    train_split: str,
    eval_split: str,
    dataset_kwargs: dict[str, Any] | None = None,
) -> tuple[datasets.Dataset, datasets.Dataset, str]:
    """Return ``(train, eval, source)`` where ``source`` says where the rows came from."""
    if data_dir:
        train = load_local_split(data_dir, spec, "train")
        evaluation = load_local_split(data_dir, spec, "eval")
        source = str(Path(data_dir).expanduser().resolve() / spec.local_dir)
        return train, evaluation, source
    if not dataset_path:
        raise DatasetNotFound(f"{spec.task_name}: the task config names no dataset_path and no data_dir is set")
    kwargs = dict(dataset_kwargs or {})
    train = load_hf_split(dataset_path, dataset_name, train_split, spec, **kwargs)
    evaluation = load_hf_split(dataset_path, dataset_name, eval_split, spec, **kwargs)
    source = f"hf:{dataset_path}" + (f"/{dataset_name}" if dataset_name else "")
    return train, evaluation, source
