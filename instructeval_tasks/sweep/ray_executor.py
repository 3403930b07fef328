"""``--executor ray``: a sweep's chunks evaluated by a pool of Ray actors, one model load per actor.

Each worker is a Ray actor (``ChunkWorker``) that loads the model once and evaluates whole chunks
with ``chunk.evaluate_jobs``, the step the local executor runs: one chunk, or consecutive budgeted
chunks pooled into one harness call (``chunk.take_pool``; a pool takes at most an idle worker's share
of the chunks left, so that every idle worker gets some). The sweep's process (the Ray driver)
hands out chunks, receives each chunk's (results, samples) and writes them through the
``SweepStore``: it stays the only writer of the output, so resuming works exactly as for a local
sweep. A worker that dies (killed, out of memory -- Ray's memory monitor kills workers when the node
runs low, see ``RAY_memory_usage_threshold`` -- a lost node) has its chunks put back and evaluated
by another worker, and a fresh worker takes its place; a chunk whose worker dies
``MAX_ATTEMPTS`` times stops the sweep with an error, as does a worker that cannot load the model.
An error raised by the evaluation itself (bad data, a bug) is not retried: it stops the sweep, as
in a local run. Ctrl-C: the first press stops handing out chunks, saves those in progress and stops;
the second stops at once (the workers are killed).

Without ``--ray-address`` a local Ray instance is started for the sweep (and stopped at the end),
with at least as many CPUs as the workers ask for; ``--ray-address auto`` joins the cluster of this
node, ``--ray-address ray://head:10001`` a remote one. Each worker reserves ``num_cpus=1`` unless
``--worker-resources`` says otherwise (``{"num_gpus": 1}``, ``{"num_cpus": 4}``); Ray sets the
worker's thread count (``OMP_NUM_THREADS``) to its ``num_cpus``.

Example:
    >>> RayExecutor.actor_options({"num_gpus": 1})["num_cpus"]   # doctest: +SKIP
    1
"""

from __future__ import annotations

import logging
import math
import os
from typing import TYPE_CHECKING, Any, Callable

from ..errors import UserError
from .executors import ExecutorOptionError, JobQueue, SaveChunk, VariantDone

if TYPE_CHECKING:
    from .interrupts import StopRequests
    from .profiles import Profile
    from .chunk import ChunkJob, ModelSpec

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'instructeval-harness[ray]'"
# Environment variables a worker needs as the driver has them (offline switches, data folder, caches).
FORWARDED_ENV_PREFIXES = ("HF_", "TRANSFORMERS_", "INSTRUCTEVAL_")


class WorkerFailure(RuntimeError):
    """The Ray workers could not finish a chunk (model load failed, or a chunk kept killing workers)."""


def import_ray():
    try:
        import ray
    except ImportError:
        raise ExecutorOptionError(f"--executor ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def json_leaves(value: Any) -> Any:
    """``value`` with every leaf that JSON cannot encode replaced by what the store writes for it.

    A chunk's results hold objects that cannot be pickled back to the driver (the task config's
    template callables); the store writes such a leaf as ``handle_non_serializable(leaf)`` (its
    ``str``), so replacing it here first leaves the written files byte for byte the same. Tuples
    stay tuples (the sample rows' ``str(target)`` sees them).

        >>> json_leaves({"a": (1, {2}), "b": [None, 1.5, object]})
        {'a': (1, [2]), 'b': [None, 1.5, "<class 'object'>"]}
    """
    if isinstance(value, dict):
        return {key: json_leaves(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        items = [json_leaves(item) for item in value]
        return tuple(items) if isinstance(value, tuple) else items
    if value is None or isinstance(value, (str, int, float)):
        return value
    from lm_eval.utils import handle_non_serializable

    return json_leaves(handle_non_serializable(value))


class ChunkWorker:
    """A Ray actor: the model, loaded once, and the task bases it has built (one per task)."""

    def __init__(self, spec: "ModelSpec", profile: "Profile", log_samples: bool) -> None:
        import datasets

        datasets.disable_progress_bars()
        self.spec, self.profile, self.log_samples = spec, profile, log_samples
        self.lm = spec.load()
        self.bases: dict[str, dict[str, Any]] = {}

    def pid(self) -> int:
        return os.getpid()

    def evaluate(self, jobs: list["ChunkJob"]) -> list[tuple[dict, dict, list[tuple[str, float]]]]:
        """(results, samples, [(variant name, seconds)]) of each chunk of ``jobs`` (one, or a pool of
        budgeted chunks evaluated in one harness call); the times are each variant's own (a pool's
        shared evenly)."""
        from .chunk import evaluate_jobs

        seconds: dict[str, float] = {}
        done = evaluate_jobs(self.lm, jobs, self.spec, self.profile, self.bases, log_samples=self.log_samples,
                             on_variant=lambda variant, _, took: seconds.__setitem__(variant.name, took))
        return [(json_leaves(results), json_leaves(samples), [(name, seconds[name]) for name in job.names])
                for job, (results, samples) in zip(jobs, done)]


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """A ``host:port`` or ``ray://host:port`` address must accept a TCP connection within ``timeout``
    seconds; ``auto`` (this node's cluster) is left to Ray.

    Raises:
        UserError: nothing answers there, or ``ray://`` without the Ray client installed.

        >>> check_reachable("auto") is None
        True
    """
    import importlib.util
    import socket

    if address == "auto":
        return
    if address.startswith("ray://") and importlib.util.find_spec("grpc") is None:
        raise UserError(f"--ray-address {address}: a ray:// address needs the Ray client: pip install 'ray[client]' "
                        f"(the [ray] extra of this package includes it)")
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        raise UserError(f"--ray-address {address}: expected host:port, ray://host:port or auto")
    host = host.strip("[]")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise UserError(f"--ray-address {address}: nothing answers at {host}:{port} within {timeout:g} s ({reason}); "
                        f"start the cluster there (ray start --head) or fix the address") from None


class RayExecutor:
    """A pool of ``workers`` ``ChunkWorker`` actors fed chunk by chunk from the sweep's process."""

    name = "ray"
    MAX_ATTEMPTS = 3  # a chunk whose worker died this many times is not tried again
    POLL_SECONDS = 0.25  # how often the driver looks at a Ctrl-C while waiting for workers
    # Ray gives a starting node a fixed 30 s to register; on a machine busy with other jobs that
    # can pass, and a second start usually succeeds.
    LOCAL_START_ATTEMPTS = 3

    lm = None  # the model lives in the workers, not in the sweep's process (the runner reads lm of any executor)

    def __init__(self, *, workers: int = 1, address: str | None = None, resources: dict[str, Any] | None = None) -> None:
        self.ray = import_ray()
        self.workers = workers
        self.address = address
        self.options = self.actor_options(resources or {})
        # Kept from one ``run`` to the next (an adaptive design's rounds), so that the workers load
        # the model once and keep its prompt prefixes; ``close`` ends them.
        self._started_here: bool | None = None  # None: not connected yet
        self._idle: list[Any] = []
        self._made_for: tuple | None = None  # the (spec, profile, log_samples) the kept workers load

    @staticmethod
    def actor_options(resources: dict[str, Any]) -> dict[str, Any]:
        """Ray actor options of one worker: its resources, and no restarts by Ray (the driver retries)."""
        options = dict(resources)
        options.setdefault("num_cpus", 1)
        options.update(max_restarts=0, max_task_retries=0)
        return options

    def _connect(self) -> bool:
        """Join or start Ray; True when this sweep started it (and so stops it)."""
        ray = self.ray
        if ray.is_initialized():
            return False
        env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV_PREFIXES)}
        kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
        if self.address:
            # Workers on other machines do not inherit this environment.
            kwargs["runtime_env"] = {"env_vars": env} if env else None
            try:
                ray.init(address=self.address, **kwargs)
            except (ConnectionError, ValueError, RuntimeError) as err:
                raise UserError(f"--ray-address {self.address}: cannot join the Ray cluster ({err})") from None
        else:
            # A local instance for this sweep; its workers inherit this process's environment.
            per_worker = self.options.get("num_cpus", 1)
            cpus = max(os.cpu_count() or 1, math.ceil(self.workers * per_worker))
            for attempt in range(1, self.LOCAL_START_ATTEMPTS + 1):
                try:
                    ray.init(num_cpus=cpus, include_dashboard=False, **kwargs)
                    break
                except Exception as err:  # Ray raises a bare Exception when its node misses a start-up deadline
                    ray.shutdown()
                    if "timed out during startup" not in str(err) or attempt == self.LOCAL_START_ATTEMPTS:
                        raise
                    log.warning("the local Ray instance did not start in time (a busy machine?); trying again")
        return True

    def run(self, queue: JobQueue, *, spec: "ModelSpec", profile: "Profile", log_samples: bool,
            save: SaveChunk, on_variant: VariantDone, stop: "StopRequests", echo: Callable[[str], None]) -> None:
        if self._started_here is None:
            self._started_here = self._connect()
        if self._made_for != (spec, profile, log_samples):
            self._kill(self._idle)
            self._made_for = (spec, profile, log_samples)
        pool = WorkerPool(self, queue, (spec, profile, log_samples), kept=self._idle, stop=stop, echo=echo)
        self._idle = []
        pool.start_missing()
        completed = False
        try:
            pool.drain(save, on_variant)
            stop.raise_if_requested()
            completed = True
        finally:
            pool.release_in_flight()
            if completed:  # kept for the next run (the next round); close() ends them
                self._idle = pool.actors
            else:
                self._kill(pool.actors)
                self.close()

    def _kill(self, actors: list[Any]) -> None:
        for actor in actors:
            self.ray.kill(actor)
        actors.clear()

    def close(self) -> None:
        """End the kept workers, and the Ray instance this executor started."""
        self._kill(self._idle)
        if self._started_here:
            self.ray.shutdown()
        self._started_here = None


class WorkerPool:
    """One ``RayExecutor.run``: its workers (those kept from the last run first), the chunks in
    flight on them, and how often each chunk's worker died (``RayExecutor.MAX_ATTEMPTS``)."""

    def __init__(self, executor: RayExecutor, queue: JobQueue, worker_args: tuple, *, kept: list[Any],
                 stop: "StopRequests", echo: Callable[[str], None]) -> None:
        self.executor, self.ray, self.queue, self.stop, self.echo = executor, executor.ray, queue, stop, echo
        self.remote_worker = executor.ray.remote(ChunkWorker).options(**executor.options)
        self.worker_args = worker_args  # (spec, profile, log_samples)
        self.actors: list[Any] = list(kept)
        self.idle: list[Any] = list(self.actors)
        self.in_flight: dict[Any, tuple[Any, list[ChunkJob]]] = {}  # object ref -> (actor, its chunks)
        self.attempts: dict[str, int] = {}
        self.replacements_left = executor.MAX_ATTEMPTS * executor.workers

    def start_worker(self) -> Any:
        actor = self.remote_worker.remote(*self.worker_args)
        self.actors.append(actor)
        return actor

    def start_missing(self) -> None:
        """Start the workers the pool lacks (no more than there are chunks), and say so."""
        wanted = min(self.executor.workers, len(self.queue))
        if len(self.idle) < wanted:
            self.idle += [self.start_worker() for _ in range(wanted - len(self.idle))]
            shown = ', '.join(f'{k}={v}' for k, v in self.executor.options.items()
                              if k not in ('max_restarts', 'max_task_retries'))
            self.echo(f"ray: {len(self.idle)} worker(s) on {self.ray.get_runtime_context().gcs_address}, each {shown}")

    def next_pool(self) -> list[ChunkJob]:
        """At most an idle worker's share of the chunks left, so that one pool does not leave the other
        idle workers without chunks."""
        from .chunk import take_pool

        return take_pool(self.queue, max_jobs=max(1, math.ceil(len(self.queue) / max(len(self.idle), 1))))

    def drain(self, save: SaveChunk, on_variant: VariantDone) -> None:
        """Hand out chunks to the idle workers and take their results until the queue is empty (or a
        stop is requested) and nothing is in flight."""
        while True:
            while self.idle and not self.stop.requested and (jobs := self.next_pool()):
                actor = self.idle.pop()
                self.in_flight[actor.evaluate.remote(jobs)] = (actor, jobs)
            if not self.in_flight:
                break
            ready, _ = self.ray.wait(list(self.in_flight), num_returns=1, timeout=self.executor.POLL_SECONDS)
            for ref in ready:
                self.collect(ref, save, on_variant)

    def collect(self, ref: Any, save: SaveChunk, on_variant: VariantDone) -> None:
        """Save the chunks a worker sent back (its worker is idle again), or handle its death."""
        ray = self.ray
        actor, jobs = self.in_flight.pop(ref)
        try:
            evaluated = ray.get(ref)
        except (ray.exceptions.RayActorError, ray.exceptions.OutOfMemoryError) as err:
            # Ray's memory monitor kills a worker when the node runs low on memory: a
            # death like any other (the chunk may fit beside fewer neighbours).
            self.worker_died(actor, jobs, err)
            return
        except BaseException:
            self.queue.release_all(jobs)
            raise
        try:
            for job, (results, samples, seconds) in zip(jobs, evaluated):
                by_name = {v.name: v for v in job.variants}
                for name, took in seconds:  # the bar advances when the chunk comes back
                    on_variant(by_name[name], results, took)
                save(job, results, samples)
        finally:
            self.queue.release_all(jobs)
        self.idle.append(actor)

    def worker_died(self, actor: Any, jobs: list[ChunkJob], err: BaseException) -> None:
        """A dead worker's chunks go back to the front of the queue for a fresh worker; a worker that
        could not load the model, or a chunk that killed ``MAX_ATTEMPTS`` workers, stops the sweep."""
        self.ray.kill(actor)
        self.actors.remove(actor)
        if getattr(err, "actor_init_failed", False):
            raise WorkerFailure(f"a Ray worker could not load the model: {err}") from None
        for job in jobs:
            self.attempts[job.key] = self.attempts.get(job.key, 0) + 1
        if self.stop.requested:
            self.queue.release_all(jobs)  # not retried: the sweep is stopping; a re-run does it
            return
        worst = max(jobs, key=lambda job: self.attempts[job.key])
        if self.attempts[worst.key] >= self.executor.MAX_ATTEMPTS or self.replacements_left == 0:
            self.queue.release_all(jobs)
            raise WorkerFailure(
                f"chunk {worst.key}: its Ray worker died {self.attempts[worst.key]} time(s); "
                f"last error: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
            ) from None
        why = "out of memory" if isinstance(err, self.ray.exceptions.OutOfMemoryError) else "died"
        what = (f"{jobs[0].key}; the chunk goes" if len(jobs) == 1
                else f"{len(jobs)} pooled chunks from {jobs[0].key}; they go")
        self.echo(f"ray: a worker {why} while evaluating {what} to another worker")
        for job in reversed(jobs):  # back to the front of the queue, in their order
            self.queue.retry(job)
        self.replacements_left -= 1
        self.idle.append(self.start_worker())

    def release_in_flight(self) -> None:
        """Give back the claims of the chunks still in flight (the run is ending)."""
        for _, jobs in self.in_flight.values():
            self.queue.release_all(jobs)
