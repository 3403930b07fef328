"""Loading a bank directory: every ``*.yaml`` below it, native schema or original InstructEval layout.

The layout is detected per file: a YAML document whose top level is a list is an original-layout
bank (``original_layout.py``); a mapping is a native bank file (``schema.py``). Both may be mixed.

Layering: ``load_banks([dir1, dir2, ...])`` merges several directories, a later directory's
``(method, task, model)`` bank replacing an earlier one's; ``load_layered_bank(bank_dir)`` is the
shipped banks with ``bank_dir`` (one directory, a list, or several joined by ``os.pathsep``) on top.
The sweep runner and the tasks' ``bank_dir`` metadata use the layered form, so a directory of
induced banks (``instructeval induce``) adds methods without hiding the shipped null/generic banks.
``load_bank(None)`` and ``load_bank(dir)`` still read exactly one directory.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from instructeval_tasks.errors import did_you_mean

from .original_layout import check_original_file, is_original_data
from .schema import PAPER_METHODS, BankEntry, BankError, check_bank_file, known_tasks, read_yaml

BANKS_DIR = Path(__file__).resolve().parent


@dataclass
class Bank:
    """All entries of a bank directory, indexed by (method, task, model)."""

    root: Path
    entries_by_key: dict[tuple[str, str, str | None], list[BankEntry]]
    # For a layered bank (``merge_banks``): the directory each (method, task, model) bank came from,
    # and the layers bottom to top. Empty for a single directory (everything comes from ``root``).
    key_roots: dict[tuple[str, str, str | None], Path] = field(default_factory=dict)
    layers: tuple[Path, ...] = ()

    def root_of(self, method: str, task: str, model: str | None = None) -> Path:
        """The bank directory that serves ``(method, task, model)`` (``root`` for a single directory)."""
        return self.key_roots.get((method, task, model), self.root)

    def methods(self, task: str | None = None) -> list[str]:
        found = {m for (m, t, _), _e in self.entries_by_key.items() if task is None or t == task}
        order = {m: i for i, m in enumerate(PAPER_METHODS)}
        return sorted(found, key=lambda m: (order.get(m, len(order)), m))

    def tasks(self, method: str | None = None) -> list[str]:
        found = {t for (m, t, _), _e in self.entries_by_key.items() if method is None or m == method}
        order = {t: i for i, t in enumerate(known_tasks())}
        return sorted(found, key=lambda t: (order.get(t, len(order)), t))

    def models(self, method: str, task: str) -> list[str]:
        """The models a model-specific bank of (method, task) was selected for (empty: model-agnostic)."""
        return sorted(m for (me, t, m) in self.entries_by_key if me == method and t == task and m)

    def entries(self, method: str, task: str, model: str | None = None) -> list[BankEntry]:
        """The entries of ``method`` for ``task``; a model-specific bank wins when ``model`` has one."""
        if model is not None and (method, task, model) in self.entries_by_key:
            return self.entries_by_key[(method, task, model)]
        if (method, task, None) in self.entries_by_key:
            return self.entries_by_key[(method, task, None)]
        models = self.models(method, task)
        if models:
            raise BankError(
                f"bank {self.root}: method {method!r} for task {task!r} is model-specific "
                f"(models: {', '.join(models)}); name one of them"
                + (f" (no bank for model {model!r})" if model else "")
            )
        if task not in self.tasks():
            raise BankError(f"bank {self.root}: no task {task!r}{did_you_mean(task, self.tasks())}; tasks: {', '.join(self.tasks())}")
        raise BankError(
            f"bank {self.root}: no method {method!r} for task {task!r}{did_you_mean(method, self.methods(task))}; "
            f"available: {', '.join(self.methods(task)) or 'none'}"
        )

    def entry(
        self,
        method: str,
        task: str,
        *,
        index: int | None = None,
        entry_id: str | None = None,
        model: str | None = None,
    ) -> BankEntry:
        """One entry by position (default 0) or by id.

        An id is unique within its bank, so for a model-specific bank an id such as
        ``orig-low_perplexity-agnews-opt1b3-2`` finds its entry without naming the model.
        """
        if entry_id is not None and model is None:
            # Every bank of (method, task), model-agnostic and per-model alike: ids are unique per
            # file, and per-model banks name the model in their ids, so one match is expected.
            matches = [
                entry
                for (m, t, _model), entries in self.entries_by_key.items()
                if m == method and t == task
                for entry in entries
                if entry.id == entry_id
            ]
            if len(matches) == 1:
                return matches[0]
            if len(matches) > 1:
                raise BankError(
                    f"bank {self.root}: method {method!r}, task {task!r}: entry id {entry_id!r} is in the banks of "
                    f"several models ({', '.join(str(e.model) for e in matches)}); name the model"
                )
        entries = self.entries(method, task, model)
        if entry_id is not None:
            for entry in entries:
                if entry.id == entry_id:
                    return entry
            raise BankError(
                f"bank {self.root}: method {method!r}, task {task!r} has no entry id {entry_id!r}; "
                f"ids: {', '.join(e.id for e in entries)}"
            )
        index = 0 if index is None else index
        if not 0 <= index < len(entries):
            raise BankError(
                f"bank {self.root}: method {method!r}, task {task!r} has {len(entries)} entries "
                f"(instruction_index 0..{len(entries) - 1}); got {index}"
            )
        return entries[index]


def check_bank_dir(root: Path | str, known: Iterable[str] | None = None) -> tuple[Bank | None, list[str]]:
    """Read and validate every ``*.yaml`` below ``root``, collecting all problems: ``(bank, errors)``.

    ``bank`` is ``None`` when nothing valid was found; when ``errors`` is non-empty, ``bank`` holds
    only the valid part and must not be used for runs.
    """
    root = Path(root).expanduser().resolve()
    if not root.is_dir():
        return None, [f"bank directory {root} does not exist"]
    known = tuple(known) if known is not None else known_tasks()
    errors: list[str] = []
    by_key: dict[tuple[str, str, str | None], list[BankEntry]] = {}
    origin: dict[tuple[str, str, str | None], str] = {}
    # harness/: banks for lm-eval's own tasks (harness_banks.py), which name harness tasks, not InstructEval's
    paths = [p for p in sorted(root.rglob("*.yaml")) if p.relative_to(root).parts[0] != "harness"]
    for path in paths:
        file_errors: list[str] = []
        data = read_yaml(path, file_errors)
        if file_errors:
            errors.extend(file_errors)
            continue
        if is_original_data(data):
            entries, file_errors = check_original_file(path, root, data, known)
        else:
            entries, file_errors = check_bank_file(path, known, data=data)
        errors.extend(file_errors)
        for entry in entries:
            key = (entry.method, entry.task, entry.model)
            if key in origin and origin[key] != entry.source_file:
                message = (
                    f"{path}: method {entry.method!r}, task {entry.task!r}"
                    + (f", model {entry.model!r}" if entry.model else "")
                    + f" is also defined in {origin[key]}; one file per (method, task, model)"
                )
                if message not in errors:
                    errors.append(message)
                continue
            origin[key] = entry.source_file
            by_key.setdefault(key, []).append(entry)
    harness_only = not paths and any((root / "harness").rglob("*.yaml"))  # banks for lm-eval's own tasks only
    if not paths and not harness_only:
        errors.append(f"bank directory {root} holds no *.yaml bank files")
    return (Bank(root, by_key) if by_key or harness_only else None), errors


def load_bank_dir(root: Path | str) -> Bank:
    """Read and validate every ``*.yaml`` below ``root`` (native or original layout).

    Raises :class:`BankError` listing every problem found.
    """
    bank, errors = check_bank_dir(root)
    if errors:
        raise BankError(errors)
    assert bank is not None
    return bank


@functools.cache
def _cached_bank(root: str) -> Bank:
    return load_bank_dir(root)


def load_bank(root: Path | str | None = None) -> Bank:
    """The bank at ``root`` (default: the banks shipped with the package), cached per process."""
    return _cached_bank(str(Path(root or BANKS_DIR).expanduser().resolve()))


def merge_banks(banks: Sequence[Bank]) -> Bank:
    """Layer ``banks`` bottom to top: a later bank's ``(method, task, model)`` bank replaces an earlier one's.

    Replacement is per key, never per entry: an upper layer's bank of (method, task, model) is used
    whole. Model-agnostic and per-model banks of one (method, task) are different keys, so both
    stay, and ``Bank.entries(method, task, model)`` prefers the model's own bank as usual.
    """
    if not banks:
        raise BankError("merge_banks: no banks to merge")
    by_key: dict[tuple[str, str, str | None], list[BankEntry]] = {}
    roots: dict[tuple[str, str, str | None], Path] = {}
    layers: list[Path] = []
    for bank in banks:
        layers.extend(bank.layers or (bank.root,))
        for key, entries in bank.entries_by_key.items():
            by_key[key] = entries
            roots[key] = bank.root_of(*key)
    return Bank(banks[-1].root, by_key, key_roots=roots, layers=tuple(layers))


def bank_dir_list(bank_dir: Path | str | Sequence[Path | str] | None) -> list[str]:
    """``bank_dir`` as a list of resolved directories: a list, or one string (several joined by ``os.pathsep``)."""
    if bank_dir is None:
        return []
    if isinstance(bank_dir, (str, Path)):
        parts = [p for p in str(bank_dir).split(os.pathsep) if p.strip()]
    else:
        parts = [str(p) for p in bank_dir if str(p).strip()]
    out: list[str] = []
    for part in parts:
        resolved = str(Path(part).expanduser().resolve())
        if resolved not in out:
            out.append(resolved)
    return out


def join_bank_dirs(bank_dir: Path | str | Sequence[Path | str] | None) -> str | None:
    """The resolved ``bank_dir`` as one metadata string (``os.pathsep``-joined), ``None`` when empty."""
    dirs = bank_dir_list(bank_dir)
    return os.pathsep.join(dirs) if dirs else None


@functools.cache
def _cached_layers(roots: tuple[str, ...]) -> Bank:
    banks = [_cached_bank(root) for root in roots]
    return banks[0] if len(banks) == 1 else merge_banks(banks)


def load_banks(roots: Sequence[Path | str | None]) -> Bank:
    """Several bank directories layered in order (``None`` = the shipped banks), cached per process."""
    resolved: list[str] = []
    for root in roots:
        path = str(Path(root or BANKS_DIR).expanduser().resolve())
        if path in resolved:  # keep the upper position: the later mention wins
            resolved.remove(path)
        resolved.append(path)
    if not resolved:
        raise BankError("load_banks: no bank directories given")
    return _cached_layers(tuple(resolved))


def load_layered_bank(bank_dir: Path | str | Sequence[Path | str] | None = None) -> Bank:
    """The shipped banks with the directories of ``bank_dir`` layered on top (later ones win).

    ``bank_dir`` is ``None`` (only the shipped banks), one directory, a list, or a string of
    directories joined by ``os.pathsep`` (the form task metadata carries).
    """
    return load_banks([None, *bank_dir_list(bank_dir)])
