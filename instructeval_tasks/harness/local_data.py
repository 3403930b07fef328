"""Local rows for lm-eval's own tasks: ``--data-dir DIR`` instead of the HF hub (``local_data.yaml``).

A harness task names its dataset as ``dataset_path`` / ``dataset_name`` and its splits
(``training_split``, ``validation_split``, ``test_split``, ``fewshot_split``). :func:`local_splits`
finds the entry of ``local_data.yaml`` for that dataset and reads, for every split the task names,
the file under ``DIR`` that holds its rows in the HF field layout, so the task's own
``process_docs``, prompt and metrics run on them unchanged.

Example:
    >>> entry = find_entry("openai/gsm8k", "main")
    >>> entry.files("main")["test"]
    'gsm8k/eval.jsonl'
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from ..errors import UserError

MAP_FILE = Path(__file__).with_name("local_data.yaml")


class LocalDataError(UserError, ValueError):
    """A harness task's data is not available under ``--data-dir`` (the message names the folder or split)."""


@dataclass(frozen=True)
class LocalDataset:
    """One entry of ``local_data.yaml``."""

    paths: tuple[str, ...]
    name: str | None
    splits: Mapping[str, str]
    records: str | None = None
    fields: Mapping[str, str] | None = None

    def matches(self, path: str, name: str | None) -> bool:
        return path in self.paths and (self.name == "*" or self.name == name)

    def files(self, name: str | None) -> dict[str, str]:
        """``{split: relative file}`` with ``{name}`` filled in."""
        return {split: rel.replace("{name}", str(name)) for split, rel in self.splits.items()}


@functools.lru_cache(maxsize=1)
def local_datasets() -> tuple[LocalDataset, ...]:
    data = yaml.safe_load(MAP_FILE.read_text(encoding="utf-8"))
    out = []
    for i, entry in enumerate(data.get("datasets") or []):
        unknown = set(entry) - {"paths", "name", "splits", "records", "fields"}
        if unknown or "paths" not in entry or "splits" not in entry:
            raise LocalDataError(f"{MAP_FILE}: entry {i}: needs paths and splits (unknown keys: {sorted(unknown)})")
        out.append(LocalDataset(tuple(entry["paths"]), entry.get("name"), dict(entry["splits"]), entry.get("records"),
                                dict(entry["fields"]) if entry.get("fields") else None))
    return tuple(out)


def find_entry(path: str | None, name: str | None) -> LocalDataset | None:
    """The entry for dataset ``path`` / config ``name``, or None."""
    return next((e for e in local_datasets() if path is not None and e.matches(path, name)), None)


def _field(config: Any, key: str) -> Any:
    """A field of a config dict or of the harness's ``TaskConfig`` (a dataclass that subclasses dict)."""
    if hasattr(config, key):
        return getattr(config, key)
    return config.get(key) if isinstance(config, Mapping) else None


def named_splits(config: Any) -> list[str]:
    """The splits a harness task config names (training, validation, test, few-shot), in that order, once each."""
    out: list[str] = []
    for key in ("training_split", "validation_split", "test_split", "fewshot_split"):
        value = _field(config, key)
        if value and value not in out:
            out.append(value)
    return out


def _read_rows(path: Path, records: str | None) -> list[dict[str, Any]]:
    if path.suffix != ".json":
        from ..data import read_jsonl  # here, not at import: it loads `datasets`

        return read_jsonl(path)  # the nine tasks' JSON Lines reader: lines end at "\n" only, errors name the line
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = data.get(records) if isinstance(data, dict) and records else data
    if not isinstance(rows, list):
        raise LocalDataError(f"{path}: expected a list of rows{f' under {records!r}' if records else ''}")
    return rows


def _derive(row: dict[str, Any], fields: Mapping[str, str] | None) -> dict[str, Any]:
    if not fields:
        return row
    out = dict(row)
    for target, source in fields.items():
        value = row[source]
        out[target] = int(value) if isinstance(value, bool) else value
    return out


def local_splits(task_name: str, config: Any, data_dir: str, *, zero_shot: bool = False
                 ) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """``({split: rows}, record)`` of every split ``config`` names, read from ``data_dir``.

    ``record`` (for the metadata and the run fingerprint): the entry's dataset, and per split the
    file and its sha256. ``zero_shot``: the task draws no demos, so a training split the local copy
    lacks (ANLI R3's ``train_r3``) is given as empty and recorded as absent; with demos it is an error.

    Raises:
        LocalDataError: no entry for the task's dataset, a split the entry does not hold, a missing
            or unreadable file -- each naming the task, the folder and what to add.
    """
    path, name = _field(config, "dataset_path"), _field(config, "dataset_name")
    entry = find_entry(path, name)
    if entry is None:
        raise LocalDataError(
            f"{task_name}: --data-dir has no local copy of its dataset {path!r}"
            f"{f' (config {name!r})' if name else ''}; add an entry to {MAP_FILE} or run without --data-dir (HF hub)"
        )
    files = entry.files(name)
    rows: dict[str, list[dict[str, Any]]] = {}
    record: dict[str, Any] = {"dataset_path": path, "dataset_name": name, "data_dir": str(data_dir), "files": {}}
    splits = named_splits(config)
    demo_only = {_field(config, "training_split")} - {_field(config, "validation_split"), _field(config, "test_split"),
                                                       _field(config, "fewshot_split")}
    for split in [s for s in splits if s not in files and s in demo_only and zero_shot]:
        splits.remove(split)
        rows[split] = []
        record["files"][split] = {"absent": "0-shot: no demos are drawn from it"}
    for split in splits:  # first what the map cannot give, then what the folder lacks
        if split not in files:
            raise LocalDataError(
                f"{task_name}: needs split {split!r} of {path}, which the local copy does not hold "
                f"(it has {', '.join(sorted(files))}; {MAP_FILE.name})"
            )
    for split in splits:
        file = Path(data_dir) / files[split]
        if not file.is_file():
            raise LocalDataError(f"{task_name}: split {split!r} needs {file} (the folder --data-dir needs: {file.parent})")
        raw = file.read_bytes()
        rows[split] = [_derive(r, entry.fields) for r in _read_rows(file, entry.records)]
        record["files"][split] = {"file": files[split], "sha256": hashlib.sha256(raw).hexdigest(), "rows": len(rows[split])}
    return rows, record
