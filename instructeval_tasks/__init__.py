"""InstructEval tasks for lm-evaluation-harness (import name ``instructeval_tasks``).

This folder is both the ``--include_path`` root (one sub-folder per task, each with its YAML and
README) and the Python package that the YAMLs reference with ``!function``.

Example:
    >>> import instructeval_tasks
    >>> tm = instructeval_tasks.task_manager()          # only the InstructEval tasks, indexed fast
    >>> "instructeval_agnews" in tm.all_tasks
    True
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

__version__ = "0.1.0"

TASKS_DIR = Path(__file__).resolve().parent


def task_manager(metadata: dict | None = None, include_defaults: bool = False):
    """A harness ``TaskManager`` over the InstructEval tasks (without the 14 s built-in index by default)."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASKS_DIR), include_defaults=include_defaults, metadata=metadata)


@lru_cache(maxsize=1)
def object_task_manager():
    """One ``TaskManager`` for ``lm_eval.simple_evaluate(tasks=[<Task objects>])`` calls.

    Given no manager, ``simple_evaluate`` builds one that indexes every built-in harness task (14 to
    30 s of YAML parsing) on each call, although ready-made task objects need no index; a sweep that
    evaluates chunk by chunk would pay that per chunk. This one indexes only the InstructEval folder,
    once per process.
    """
    return task_manager()
