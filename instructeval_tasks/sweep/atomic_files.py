"""Whole-or-nothing file writes: a reader (or a resumed run) never sees half a results file.

The text goes to a temporary file beside the target (``.<name>.<8 characters>``, mkstemp's name),
is flushed and fsynced, then renamed over the target; a write killed midway leaves only the
temporary file, which ``store.SweepStore`` removes when it next opens the folder.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        # mkstemp creates 0600 files; results are ordinary files, so apply the usual umask.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
