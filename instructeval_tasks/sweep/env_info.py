"""The harness's environment record, collected once per process instead of once per harness call.

``lm_eval.simple_evaluate`` ends every call with ``add_env_info(results)``, which runs torch's
``collect_env`` (``pip list`` and more: about 4 s on a CPU machine). A sweep makes one call per
variant, and the environment a process runs in does not change between its calls, so
:func:`environment_info_once` runs the harness's own ``add_env_info`` on the first call and gives
every later call a copy of the same fields. The results files hold exactly what the harness
would have written.

Example::

    with environment_info_once():
        for task in tasks:
            lm_eval.simple_evaluate(model=lm, tasks=[task])
"""

from __future__ import annotations

import copy
from contextlib import contextmanager
from typing import Any, Iterator

_collected: dict[str, Any] = {}  # this process's environment fields, filled on first use


@contextmanager
def environment_info_once() -> Iterator[None]:
    """Inside the block, ``lm_eval.evaluator.add_env_info`` reuses this process's first record."""
    import lm_eval.evaluator as evaluator

    original = evaluator.add_env_info

    def add_env_info(storage: dict[str, Any]) -> None:
        if not _collected:
            fields: dict[str, Any] = {}
            original(fields)
            _collected.update(fields)
        storage.update(copy.deepcopy(_collected))

    evaluator.add_env_info = add_env_info
    try:
        yield
    finally:
        evaluator.add_env_info = original
