"""Loading a task's two splits: the demonstration pool ("train") and the evaluation split.

Default source: the HF dataset named by the task YAML (``dataset_path``/``dataset_name`` and its
split names). With a data directory (metadata ``data_dir`` or ``$INSTRUCTEVAL_DATA_DIR``) the
splits come from ``<data_dir>/<local_dir>/train.jsonl`` and ``eval.jsonl`` instead, one JSON object
per line in the HF field layout (the layout of the project's shared sample data).

Every row of both splits is checked against the task's fields (``rows.ROW_FIELDS``) when the
splits load, before any request is built, and a local eval file may not repeat an item: a bad row is an error naming the file and line (or the
HF split and row index), the field and the expected values. Undecodable bytes and invalid JSON are
errors naming the file and line too. All of these are :class:`~instructeval_tasks.errors.UserError`.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import datasets

from .options import DATA_DIR_ENV
from .rows import ROW_FIELDS, DataRowError, check_dataset, check_rows, repeated_rows
from .specs import TaskSpec
from instructeval_tasks.errors import UserError, json_problem

LOCAL_SPLIT_FILES = {"train": "train.jsonl", "eval": "eval.jsonl"}


class DatasetNotFound(UserError, FileNotFoundError):
    """A dataset or split could not be found; the message says what was looked for and how to fix it."""


class DataFileError(DataRowError):
    """A data file that cannot be read as UTF-8 JSON Lines; the message names the file and line."""


def read_jsonl_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, row)`` for each non-blank line of a JSONL file.

    Lines are split at newline bytes only (as ``wc -l`` and editors count them), each decoded as strict
    UTF-8 (a byte-order mark on the first line is allowed); an undecodable byte, invalid JSON or a
    line that is no JSON object is a :class:`DataFileError` naming the file and line.
    """
    rows = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataFileError(
                    f"{path}:{number}: byte 0x{raw[err.start]:02x} at column {err.start + 1} is not valid UTF-8; "
                    f"save the file as UTF-8"
                ) from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataFileError(
                    f"{path}:{number}: not valid JSON ({json_problem(err)}); each line must be one JSON object"
                ) from None
            except RecursionError:
                raise DataFileError(f"{path}:{number}: JSON nested too deeply to read; each line must be one flat row object") from None
            if not isinstance(row, dict):
                raise DataFileError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
            rows.append((number, row))
    if not rows:
        raise DataFileError(f"{path}: the file holds no rows")
    return rows


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a malformed line is an error naming the file and line number."""
    return [row for _number, row in read_jsonl_lines(path)]


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
    return _load_jsonl_dataset(str(path.resolve()), stat.st_mtime_ns, stat.st_size, spec.name, which)


@functools.lru_cache(maxsize=32)
def _load_jsonl_dataset(path: str, mtime_ns: int, size: int, task: str, which: str) -> datasets.Dataset:
    # A sweep builds one task per variant; parse and check each file once per process (keyed by
    # its modification time and size, so an edited file is read again). Datasets are never
    # modified in place (select/map return new ones), so sharing is safe.
    numbered = read_jsonl_lines(Path(path))
    rows = [row for _number, row in numbered]
    # Checked before pyarrow sees the rows: a "2" among integer labels would otherwise fail as
    # an arrow type error without a line number, or load as a column of strings.
    check_rows(task, rows, lambda i: f"{path}:{numbered[i][0]}")
    if which == "eval":
        repeats = repeated_rows(task, rows)
        if repeats:
            first, again = (numbered[i][0] for i in repeats[0])
            raise DataRowError(
                f"{path}:{again}: the same item as line {first} (equal in every field instructeval_{task} reads: "
                f"{', '.join(ROW_FIELDS[task])}); a repeated item weighs twice in every accuracy. Remove the duplicate."
            )
    try:
        return datasets.Dataset.from_list(rows)
    except Exception as err:  # pyarrow: a field the task does not read changes type between rows
        raise _mixed_type_error(path, numbered, err) from None


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _mixed_type_error(path: str, numbered: list[tuple[int, dict[str, Any]]], err: Exception) -> DataFileError:
    """The first row whose field has another JSON type than in the rows before it."""
    first: dict[str, tuple[str, int]] = {}
    for number, row in numbered:
        for field, value in row.items():
            if value is None:
                continue
            kind = _kind(value)
            seen = first.setdefault(field, (kind, number))
            if seen[0] != kind:
                return DataFileError(
                    f"{path}:{number}: field {field!r} is {kind} but {seen[0]} on line {seen[1]}; "
                    f"a field must have one type in every row"
                )
    return DataFileError(f"{path}: the rows cannot form one table ({type(err).__name__}: {err})")


def load_hf_split(path: str, name: str | None, split: str, spec: TaskSpec, **kwargs: Any) -> datasets.Dataset:
    """One split of an HF hub dataset, with an error that says how to run offline instead."""
    try:
        dataset = datasets.load_dataset(path, name, split=split, **kwargs)
    except Exception as err:  # the hub raises many types: connection, missing config, auth
        raise DatasetNotFound(
            f"{spec.task_name}: could not load HF dataset {path!r} (config {name!r}, split {split!r}): "
            f"{type(err).__name__}: {err}. Without hub access, point data_dir in --metadata or "
            f"${DATA_DIR_ENV} at a folder with {spec.local_dir}/train.jsonl and eval.jsonl."
        ) from err
    if isinstance(dataset, datasets.Dataset):  # a streamed split is not materialised here
        source = f"HF dataset {path!r}" + (f" (config {name!r})" if name else "")
        check_dataset(spec.name, dataset, lambda i: f"{source}, split {split!r}, row {i}")
    return dataset


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
