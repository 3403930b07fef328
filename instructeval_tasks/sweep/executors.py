"""Who evaluates a sweep's chunks: the sweep's own process (``local``) or a pool of Ray workers (``ray``).

Every executor runs the same step, ``chunk.evaluate_job``, on whole chunks (one task x instruction,
so a backend's prefix sharing still works inside a chunk; the local executor evaluates consecutive
budgeted chunks in one pooled harness call, ``chunk.evaluate_jobs``), and hands each evaluated chunk to the
``save`` callback in the sweep's process, which alone writes the output. Executors take their chunks
from a ``JobQueue`` and may put back a chunk whose worker died; the queue decides which chunk comes
next (a shard's queue also claims each chunk on disk, see ``shards``).

The executors by name, and the checks of their options, are ``executor_registry``'s.
"""

from __future__ import annotations

import json
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol

from ..errors import UserError, json_problem

if TYPE_CHECKING:
    from .interrupts import StopRequests
    from .plan import Variant
    from .profiles import Profile
    from .chunk import ChunkJob, ModelSpec

SaveChunk = Callable[["ChunkJob", dict, dict], None]  # (chunk, results, samples): writes them
VariantDone = Callable[["Variant", dict, float], None]  # (variant, chunk results, its seconds): progress


class ExecutorOptionError(UserError, ValueError):
    """An executor option the user gave is unknown or does not fit the executor."""


class JobQueue:
    """The chunks still to evaluate, in plan order; a chunk whose worker died goes back to the front."""

    def __init__(self, jobs: Iterable["ChunkJob"]) -> None:
        self._jobs: deque[ChunkJob] = deque(jobs)

    def __len__(self) -> int:
        return len(self._jobs)

    def take(self) -> "ChunkJob | None":
        """The next chunk to evaluate, or None when there is none."""
        return self._jobs.popleft() if self._jobs else None

    def retry(self, job: "ChunkJob") -> None:
        """Put back a chunk that was taken but not evaluated (its worker died)."""
        self._jobs.appendleft(job)

    def take_ready(self) -> "ChunkJob | None":
        """The next chunk if it can be handed out without waiting (to pool with one taken), else None."""
        return self.take()

    def release(self, job: "ChunkJob") -> None:
        """A taken chunk is saved, or will not be (the sweep stops): nothing to do for a plain queue."""

    def release_all(self, jobs: Iterable["ChunkJob"]) -> None:
        """``release`` each chunk of a pool."""
        for job in jobs:
            self.release(job)


class Executor(Protocol):
    name: str

    def run(self, queue: JobQueue, *, spec: "ModelSpec", profile: "Profile", log_samples: bool,
            save: SaveChunk, on_variant: VariantDone, stop: "StopRequests", echo: Callable[[str], None]) -> None:
        """Evaluate every chunk of ``queue`` and ``save`` each (``on_variant`` for each of its variants,
        with the variant's own time); ``stop.raise_if_requested()`` between chunks (``Terminated`` or ``KeyboardInterrupt``),
        after saving the chunks already in progress."""

    def close(self) -> None:
        """Release what ``run`` kept for a later run of the same sweep (called once, at its end)."""


class LocalExecutor:
    """One model in the sweep's process, chunks one after the other (budgeted ones pooled, ``chunk.take_pool``)."""

    name = "local"

    def __init__(self, lm: Any = None) -> None:
        self.lm = lm

    def run(self, queue: JobQueue, *, spec: "ModelSpec", profile: "Profile", log_samples: bool,
            save: SaveChunk, on_variant: VariantDone, stop: "StopRequests", echo: Callable[[str], None]) -> None:
        from .chunk import evaluate_jobs, take_pool

        lm = self.lm if self.lm is not None else spec.load()
        bases: dict[str, dict[str, Any]] = {}
        while jobs := take_pool(queue):
            try:
                for job, (results, samples) in zip(jobs, evaluate_jobs(lm, jobs, spec, profile, bases,
                                                                       log_samples=log_samples, on_variant=on_variant)):
                    save(job, results, samples)
            finally:
                queue.release_all(jobs)
            stop.raise_if_requested()

    def close(self) -> None:
        """Nothing to release: the model stays with the caller (``lm``) for the sweep's life."""


def parse_worker_resources(text: str | dict | None) -> dict[str, Any]:
    """``--worker-resources`` JSON: Ray actor options per worker, e.g. ``{"num_gpus": 1}``.

    ``num_cpus``, ``num_gpus`` and ``memory`` are Ray's own; any other key is a custom resource
    (``{"accelerator_type:A100": 0.01}`` or ``{"resources": {"big_node": 1}}``).

        >>> parse_worker_resources('{"num_gpus": 1}')
        {'num_gpus': 1}
    """
    if text is None or text == "":
        return {}
    if isinstance(text, dict):
        value = text
    else:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            raise ExecutorOptionError(
                f"--worker-resources is not JSON ({json_problem(err)}); "
                f"write e.g. '{{\"num_gpus\": 1}}'"
            ) from None
    if not isinstance(value, dict):
        raise ExecutorOptionError("--worker-resources must be a JSON object, e.g. '{\"num_gpus\": 1}'")
    for key, amount in value.items():
        if key == "resources":
            if not isinstance(amount, dict):
                raise ExecutorOptionError("--worker-resources: 'resources' must be an object of custom resources")
            continue
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount < 0:
            raise ExecutorOptionError(f"--worker-resources: {key!r} must be a number >= 0, got {amount!r}")
    return dict(value)
