"""``--shard I/N``: the I-th of N deterministic parts of a sweep, for job arrays writing one ``--output``.

**The parts.** The plan's chunks (one task x instruction each, in plan order: tasks, then methods,
then instructions) are dealt round-robin: chunk ``j`` (counted from 0 over the whole plan, done or
not) belongs to shard ``j mod N``. Shard indices run from 0 to N-1, as ``SLURM_ARRAY_TASK_ID`` with
``--array=0-(N-1)`` and a Kubernetes indexed job's ``JOB_COMPLETION_INDEX``. Round-robin rather than
contiguous blocks, so that every shard gets a share of every task (tasks differ widely in cost).
The N parts are disjoint and cover the plan; they depend only on the command (tasks, methods,
profile, banks), so every shard of one command computes the same parts.

**No chunk evaluated twice.** Every run (sharded or not) claims a chunk before evaluating it:
an OS file lock (``filelock``) on ``<output>/<label>/.claims/<chunk>.lock``, held until the chunk's
results file is written. Under the claim it reads the results files again and evaluates only the
variants still missing. A chunk claimed by another process is put aside and taken last: by then
it is usually done; if its claimant died (the kernel drops the lock), this run evaluates it. So
shards started twice, shards of different N, or a plain run beside shards still never write a
variant twice, and a run that exits 0 leaves its whole part done.

**Rounds.** A budget's rounds (``--budget-design adaptive``, ``--budget-extend``) are chosen from
every shard's cells, so a shard that has run its part of the first slice then queues the other
shards' unsaved variants too (``runner._other_shards_cells``): those no process holds it evaluates,
those another shard holds it waits for. Every shard then derives the same round from the same saved
cells, and the round's chunks, all of them queued in every shard, go to whichever claims them first.

Example:
    >>> ShardSpec.parse("1/4")
    ShardSpec(index=1, count=4)
    >>> ShardSpec.parse("4/4")
    Traceback (most recent call last):
    ...
    instructeval_tasks.sweep.shards.ShardOptionError: --shard 4/4: the index must be 0..3 (shards are numbered from 0)
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from filelock import FileLock, Timeout

from ..errors import UserError
from .executors import JobQueue

if TYPE_CHECKING:
    from .plan import Variant
    from .chunk import ChunkJob

CLAIMS_DIR = ".claims"


class ShardOptionError(UserError, ValueError):
    """A malformed ``--shard`` value."""


@dataclass(frozen=True)
class ShardSpec:
    """Shard ``index`` (from 0) of ``count``."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: "str | ShardSpec | None") -> "ShardSpec | None":
        if text is None or isinstance(text, ShardSpec):
            return text
        match = re.fullmatch(r"\s*(-?\d+)\s*/\s*(-?\d+)\s*", str(text))
        if not match:
            raise ShardOptionError(f"--shard {text}: write I/N, e.g. 0/4 for the first of four shards")
        index, count = int(match.group(1)), int(match.group(2))
        if count < 1:
            raise ShardOptionError(f"--shard {text}: the number of shards must be at least 1")
        if not 0 <= index < count:
            raise ShardOptionError(f"--shard {text}: the index must be 0..{count - 1} (shards are numbered from 0)")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def select(self, plan: Iterable["Variant"]) -> list["Variant"]:
        """The variants of this shard's chunks, in plan order."""
        chunk_index: dict[str, int] = {}
        for variant in plan:
            chunk_index.setdefault(variant.chunk, len(chunk_index))
        return [v for v in plan if chunk_index[v.chunk] % self.count == self.index]


class ClaimingQueue(JobQueue):
    """A ``JobQueue`` that claims each chunk on disk before handing it out (see the module docstring).

    ``still_pending(job)`` re-reads the output and returns the job restricted to the variants not yet
    saved (None when none is left); ``skipped`` counts the variants another process saved meanwhile.
    """

    POLL_SECONDS = 0.5

    def __init__(self, jobs: Iterable["ChunkJob"], root: Path, *,
                 still_pending: Callable[["ChunkJob"], "ChunkJob | None"],
                 stopping: Callable[[], bool] = lambda: False,
                 echo: Callable[[str], None] = lambda line: None) -> None:
        super().__init__(jobs)
        self.claims = Path(root) / CLAIMS_DIR
        self.still_pending = still_pending
        self.stopping = stopping
        self.echo = echo
        self.skipped = 0
        self._busy: deque[ChunkJob] = deque()  # claimed by another process when first met
        self._held: dict[str, FileLock] = {}  # job key -> its claim
        self._waiting_said = False  # one line per spell of waiting, not one per chunk waited for

    def __len__(self) -> int:
        return len(self._jobs) + len(self._busy)

    def _lock(self, job: "ChunkJob") -> FileLock:
        self.claims.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.claims / f"{job.variants[0].chunk}.lock"))

    def _claimed(self, job: "ChunkJob", lock: FileLock) -> "ChunkJob | None":
        """With the claim held: the job's variants still missing, or None (claim released)."""
        fresh = self.still_pending(job)
        if fresh is None:
            self.skipped += len(job.variants)
            lock.release()
            return None
        self.skipped += len(job.variants) - len(fresh.variants)
        self._held[fresh.key] = lock
        return fresh

    def take(self) -> "ChunkJob | None":
        job = self.take_ready()
        return job if job is not None else self._take_busy()

    def take_ready(self) -> "ChunkJob | None":
        """The next chunk no other process holds (claimed now), or None: no waiting."""
        while self._jobs:
            job = self._jobs.popleft()
            if job.key in self._held:  # put back by retry(): still ours
                return job
            lock = self._lock(job)
            try:
                lock.acquire(timeout=0)
            except Timeout:
                self._busy.append(job)
                continue
            fresh = self._claimed(job, lock)
            if fresh is not None:
                self._waiting_said = False
                return fresh
        return None

    def _take_busy(self) -> "ChunkJob | None":
        """A chunk another process held when first met, once its claim is free (waits for it)."""
        while self._busy:
            job = self._busy.popleft()
            lock = self._lock(job)
            if not self._waiting_said:
                self._waiting_said = True
                others = f" and {len(self._busy)} more" if self._busy else ""
                self.echo(f"waiting for chunk {job.variants[0].chunk}{others}: another process is evaluating "
                          f"{'them' if self._busy else 'it'}")
            while True:
                if self.stopping():
                    self._busy.appendleft(job)
                    return None
                try:
                    lock.acquire(timeout=self.POLL_SECONDS)
                    break
                except Timeout:
                    continue
            fresh = self._claimed(job, lock)
            if fresh is not None:
                return fresh
        return None

    def retry(self, job: "ChunkJob") -> None:
        self._jobs.appendleft(job)  # the claim stays held

    def release(self, job: "ChunkJob") -> None:
        lock = self._held.pop(job.key, None)
        if lock is not None:
            lock.release()
