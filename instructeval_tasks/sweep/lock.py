"""One writer per sweep folder: OS file locks (``filelock``) on ``<output>/<model label>/``.

Files, all inside the label folder:

- ``.instructeval.lock``: the **run lock**, held (``flock``) for a whole ``instructeval run`` by
  the one process that evaluates into the folder. A second ``instructeval run`` on the same label
  refuses at once with one line naming the lock file and its holder, or waits (``--wait-lock``).
  The kernel drops the lock when its holder exits, however it exits (``kill -9`` included), so a
  stale lock never blocks a re-run.
- ``.instructeval.lock.owner``: ``{"pid", "host", "started", "command"}`` of the current holder,
  written after the lock is taken and removed before it is released; only read to say who holds
  the lock (it can be a killed holder's leftover, so it never decides anything).
- ``.instructeval.store.lock``: the **store lock**, held only for the moment of an update of the
  folder (the resume check and ``sweep.json``; each chunk's files; the clean-up of temporary files).

Why per label, not per ``--output``: a label folder is one model's results and nothing is written
outside it, so sweeps of different models into one ``--output`` (one per GPU) are independent and
may run at once; two writers of one label are what duplicated samples files and mixed protocols.

Extension point (shards of one sweep, ``--shard I/N``): shards write one label folder at once, so
they cannot all hold the run lock. A shard takes ``RunLock(folder, name=shard_lock_name(i, n))``
(one lock per shard: a shard started twice is still refused) instead of the plain run lock, and
every read-check-write of shared state (``sweep.json``, the resume check, each results file) goes
through ``SweepStore.updating()`` (the short store lock), as the unsharded runner already does.
The clean-up of temporary files must then run only while no shard is live: under the store lock
and after taking every shard lock non-blocking, or by temp names that carry the writer's pid.

Example:
    >>> import tempfile
    >>> with RunLock(Path(tempfile.mkdtemp())) as lock:
    ...     lock.path.name
    '.instructeval.lock'
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import sys
from pathlib import Path
from typing import Callable

from filelock import FileLock, Timeout

from ..errors import UserError
from .atomic_files import atomic_write_text

RUN_LOCK = ".instructeval.lock"
STORE_LOCK = ".instructeval.store.lock"
OWNER_SUFFIX = ".owner"


class OutputLocked(UserError):
    """Another process holds the lock of the sweep folder."""


def shard_lock_name(index: int, count: int) -> str:
    """The run lock name of shard ``index`` of ``count`` (the extension point for ``--shard I/N``)."""
    return f".instructeval.shard-{index}-of-{count}.lock"


def describe_holder(lock_path: Path) -> str:
    """``"pid 123 on host h since <time>"`` from the owner file, or ``"holder unknown"``."""
    try:
        owner = json.loads(lock_path.with_name(lock_path.name + OWNER_SUFFIX).read_text(encoding="utf-8"))
        return f"pid {owner['pid']} on host {owner['host']} since {owner['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"


class RunLock:
    """The run lock of a sweep folder (see the module docstring).

    ``wait``: None or 0 refuses at once when the lock is held; a positive number waits up to that
    many seconds; a negative number waits as long as it takes. ``echo`` gets one line when waiting.
    """

    def __init__(self, folder: Path, *, wait: float | None = None, name: str = RUN_LOCK,
                 echo: Callable[[str], None] | None = None) -> None:
        self.folder = Path(folder)
        self.path = self.folder / name
        self.owner_path = self.path.with_name(self.path.name + OWNER_SUFFIX)
        self.wait = wait or 0
        self.echo = echo or (lambda line: print(line, file=sys.stderr))
        self._lock = FileLock(str(self.path))

    def acquire(self) -> "RunLock":
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            if self.wait == 0:
                raise OutputLocked(
                    f"{self.folder} is being written by another instructeval run (lock {self.path}, "
                    f"{describe_holder(self.path)}); wait for it to finish or re-run with --wait-lock, "
                    f"or use another --output or --model-label"
                ) from None
            limit = "" if self.wait < 0 else f" (up to {self.wait:g} s)"
            self.echo(f"waiting for {self.path}{limit}: {describe_holder(self.path)}")
            try:
                self._lock.acquire(timeout=self.wait)
            except Timeout:
                raise OutputLocked(
                    f"{self.folder} is still being written by another instructeval run after {self.wait:g} s "
                    f"(lock {self.path}, {describe_holder(self.path)}); use another --output or --model-label"
                ) from None
        self._write_owner()
        return self

    def _write_owner(self) -> None:

        owner = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": " ".join(sys.argv),
        }
        atomic_write_text(self.owner_path, json.dumps(owner))

    def release(self) -> None:
        if not self._lock.is_locked:
            return
        try:
            self.owner_path.unlink(missing_ok=True)
        finally:
            self._lock.release()

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def store_lock(folder: Path) -> FileLock:
    """The short-held store lock of a sweep folder (blocking; see the module docstring)."""
    return FileLock(str(Path(folder) / STORE_LOCK))
