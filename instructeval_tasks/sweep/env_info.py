"""The harness's environment record, collected once per process instead of once per harness call.

``lm_eval.simple_evaluate`` ends every call by recording ``git_hash`` (``get_git_commit_hash``:
``git describe --always`` in the working directory) and ``add_env_info(results)``, which runs
torch's ``collect_env`` (``pip list`` and more: about 4 s on a CPU machine). A sweep makes one
call per variant, and the environment a process runs in does not change between its calls, so
:func:`environment_info_once` runs the harness's own ``add_env_info`` on the first call and gives
every later call a copy of the same fields. The results files hold exactly what the harness would
have written.

Outside a git checkout, the harness's ``git describe`` prints git's ``fatal: not a git repository``
on the terminal on every call; here git's stderr is discarded and the same fallback runs (the
commit read from ``./.git``, else None), so ``git_hash`` is the same and the terminal quiet.

Example::

    with environment_info_once():
        for task in tasks:
            lm_eval.simple_evaluate(model=lm, tasks=[task])
"""

from __future__ import annotations

import copy
import os
import subprocess
from contextlib import contextmanager
from typing import Any, Iterator

_collected: dict[str, Any] = {}  # this process's environment fields, filled on first use


def git_commit_hash() -> str | None:
    """``lm_eval``'s ``git_hash`` of the working directory (``git describe --always``, else the commit
    ``./.git`` names, else None), without git's messages on stderr."""
    try:
        return subprocess.check_output(["git", "describe", "--always"], stderr=subprocess.DEVNULL).strip().decode()
    except (subprocess.CalledProcessError, OSError):  # no checkout here, or no git on the machine
        from lm_eval.loggers.utils import get_commit_from_path

        return get_commit_from_path(os.getcwd())


@contextmanager
def environment_info_once() -> Iterator[None]:
    """Inside the block, ``lm_eval.evaluator.add_env_info`` reuses this process's first record and
    ``get_git_commit_hash`` is :func:`git_commit_hash` (the same record, without git's messages)."""
    import lm_eval.evaluator as evaluator

    original, original_git = evaluator.add_env_info, evaluator.get_git_commit_hash

    def add_env_info(storage: dict[str, Any]) -> None:
        if not _collected:
            fields: dict[str, Any] = {}
            original(fields)
            _collected.update(fields)
        storage.update(copy.deepcopy(_collected))

    evaluator.add_env_info = add_env_info
    evaluator.get_git_commit_hash = git_commit_hash
    try:
        yield
    finally:
        evaluator.add_env_info = original
        evaluator.get_git_commit_hash = original_git
