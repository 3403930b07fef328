"""The executors by name: the one place ``--executor`` reads its choices from.

A new executor is a class with ``name`` and ``run(queue, ...)`` (see ``executors.Executor``) and one
entry in ``EXECUTORS`` below: its option check and constructor. Imports stay lazy, so the ``ray``
package is imported only when the Ray executor is chosen.

Example:
    >>> make_executor("local").name
    'local'
    >>> make_executor("local", workers=2)
    Traceback (most recent call last):
    ...
    instructeval_tasks.sweep.executors.ExecutorOptionError: --workers 2 needs --executor ray (the local executor is one process)
"""

from __future__ import annotations

from typing import Any, Callable

from .executors import Executor, ExecutorOptionError, LocalExecutor, parse_worker_resources


def _local(*, workers: int | None, ray_address: str | None, worker_resources: str | dict | None, lm: Any) -> Executor:
    if workers not in (None, 1):
        raise ExecutorOptionError(f"--workers {workers} needs --executor ray (the local executor is one process)")
    for option, value in (("--ray-address", ray_address), ("--worker-resources", worker_resources)):
        if value:
            raise ExecutorOptionError(f"{option} needs --executor ray")
    return LocalExecutor(lm)


def _ray(*, workers: int | None, ray_address: str | None, worker_resources: str | dict | None, lm: Any) -> Executor:
    if lm is not None:
        raise ExecutorOptionError("a preloaded model (lm=...) runs only with the local executor")
    from .ray_executor import RayExecutor, check_reachable

    if ray_address:
        # Before the output folder and the model load, also for --dry-run: else Ray retries for
        # minutes, printing its C++ warnings.
        check_reachable(ray_address)
    return RayExecutor(workers=workers or 1, address=ray_address, resources=parse_worker_resources(worker_resources))


EXECUTORS: dict[str, Callable[..., Executor]] = {"local": _local, "ray": _ray}


def make_executor(
    name: str = "local",
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    worker_resources: str | dict | None = None,
    lm: Any = None,
) -> Executor:
    """The executor called ``name``, with its options checked (before any model loads)."""
    if name not in EXECUTORS:
        raise ExecutorOptionError(f"unknown executor {name!r}; known: {', '.join(EXECUTORS)}")
    if workers is not None and workers < 1:
        raise ExecutorOptionError(f"--workers must be at least 1, got {workers}")
    return EXECUTORS[name](workers=workers, ray_address=ray_address, worker_resources=worker_resources, lm=lm)
