"""The report folder is replaced whole or not at all.

:func:`staged_report_dir` yields a temporary folder beside ``--out``
(``<parent>/.<name>.partial-<pid>``); the report is written there and, only when every file is
written, swapped in with two renames in the same parent: the old ``<name>`` becomes
``.<name>.previous-<pid>``, the new folder becomes ``<name>``, then the old one is deleted. A
failure while writing (a full disk, a crash) deletes the temporary folder and leaves the previous
report exactly as it was: a reader never sees an old ``report.html`` beside new CSVs.

A ``kill -9`` can leave a temporary folder behind, or (between the two renames) the previous
report under its ``.previous-<pid>`` name with no ``<name>``. :func:`check_out_dir`, called at
the start of every run, restores such a previous report to ``<name>`` and deletes the leftovers of
processes that are no longer running.

Since the whole folder is replaced, ``--out`` must be new, empty, or an earlier report (only
``tables/ data/ plots/ sensitivity/ summary.json report.html``): a folder holding anything else (``--out .``,
``--out runs/``) is refused rather than deleted.

Example::

    out = check_out_dir("report")
    with staged_report_dir(out) as tmp:
        (tmp / "report.html").write_text("...")
    # report/ now holds exactly what was written into tmp
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path
from typing import Iterator

from .issues import AggregationError

REPORT_ENTRIES = frozenset({"tables", "data", "plots", "sensitivity", "summary.json", "report.html"})
_LEFTOVER = re.compile(r"\.(?P<name>.+)\.(?P<kind>partial|previous)-(?P<pid>\d+)")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _leftovers(out: Path) -> list[tuple[str, int, Path]]:
    """``(kind, pid, path)`` of the temporary folders of ``out`` left in its parent."""
    found = []
    with contextlib.suppress(OSError):
        for entry in out.parent.iterdir():
            match = _LEFTOVER.fullmatch(entry.name)
            if match and match["name"] == out.name:
                found.append((match["kind"], int(match["pid"]), entry))
    return sorted(found, key=lambda x: (x[0], x[1]))


def clean_leftovers(out: Path) -> list[str]:
    """Undo what a killed run left: restore a previous report that lost its name, delete temp folders.

    Returns one line per action taken (for the log). Folders of running processes are left alone.
    """
    actions = []
    dead = [(kind, pid, path) for kind, pid, path in _leftovers(out) if not _alive(pid)]
    for kind, pid, path in dead:
        if kind == "previous" and not out.exists():
            os.rename(path, out)  # killed between the two renames: the old report comes back
            actions.append(f"restored {out} from {path.name} (an earlier run was stopped mid-swap)")
    for kind, pid, path in dead:
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)
            actions.append(f"removed {path} (left by a stopped run)")
    return actions


def check_out_dir(out_dir: str | os.PathLike) -> Path:
    """Validate ``--out`` before any work, clean leftovers of killed runs; the resolved folder.

    Raises:
        AggregationError (a user error): ``--out`` is a file, holds files that are not a report,
        or its parent cannot be created or written.
    """
    out = Path(os.path.realpath(os.path.expanduser(os.fspath(out_dir))))
    if out.exists() and not out.is_dir():
        raise AggregationError(f"--out {out_dir}: is a file, not a folder; give a folder for the report")
    blocker = next((p for p in out.parents if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise AggregationError(f"--out {out_dir}: {blocker} is a file, not a folder")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise AggregationError(f"--out {out_dir}: cannot create its parent folder ({err.strerror or err})") from None
    if not os.access(out.parent, os.W_OK | os.X_OK) or (out.is_dir() and not os.access(out, os.W_OK | os.X_OK)):
        raise AggregationError(f"--out {out_dir}: not writable (the report is written beside it, in {out.parent})")
    clean_leftovers(out)
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir() if p.name not in REPORT_ENTRIES)
        if foreign:
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise AggregationError(
                f"--out {out_dir}: holds files that are not part of a report ({shown}); the report replaces the "
                "whole folder, so give a new or empty folder, or an earlier report folder"
            )
    return out


@contextlib.contextmanager
def staged_report_dir(out: Path) -> Iterator[Path]:
    """A fresh temporary folder beside ``out``, swapped in as ``out`` when the block succeeds."""
    tmp = out.parent / f".{out.name}.partial-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        yield tmp
        _swap_in(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap_in(tmp: Path, out: Path) -> None:
    if not out.exists():
        os.rename(tmp, out)
        return
    previous = out.parent / f".{out.name}.previous-{os.getpid()}"
    if previous.exists():
        shutil.rmtree(previous)
    os.rename(out, previous)
    try:
        os.rename(tmp, out)
    except BaseException:
        os.rename(previous, out)
        raise
    shutil.rmtree(previous, ignore_errors=True)


__all__ = ["REPORT_ENTRIES", "check_out_dir", "clean_leftovers", "staged_report_dir"]
