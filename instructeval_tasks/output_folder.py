"""Checking an output folder option (``--out``, ``--output``) before any work starts.

A command that writes into a folder should refuse a bad one at once, not after loading a model or
converting weights: :func:`check_output_folder` raises a :class:`~instructeval_tasks.errors.UserError`
when the path is a file, lies under a file, or cannot be written. It creates nothing.

Example::

    check_output_folder(args.out, "--out")   # instructeval: error: --out model.bin: is a file, ...
"""

from __future__ import annotations

import os
from pathlib import Path

from instructeval_tasks.errors import UserError


class OutputFolderError(UserError):
    """An output folder option that names a file, or a folder that cannot be written."""


def check_output_folder(path: str | os.PathLike, option: str) -> Path:
    """The resolved folder ``path``; :class:`OutputFolderError` naming ``option`` if it cannot be used."""
    folder = Path(os.path.expanduser(os.fspath(path))).resolve()
    if folder.exists() and not folder.is_dir():
        raise OutputFolderError(f"{option} {path}: is a file, not a folder")
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise OutputFolderError(f"{option} {path}: {existing} is a file, not a folder")
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise OutputFolderError(f"{option} {path}: {existing} is not writable")
    return folder


__all__ = ["OutputFolderError", "check_output_folder"]
