"""The results-file formats the aggregation reads, told apart by their top-level keys.

- ``lm-eval``: what ``lm_eval --output_path`` and ``instructeval run`` write (``results_<stamp>.json``
  with top-level ``results`` and ``configs`` objects; metric keys ``"<metric>,<filter>"``). The
  Open LLM Leaderboard **v2** results dataset stores this format too (tasks ``leaderboard_bbh_*``,
  ``leaderboard_gpqa_*``, ``leaderboard_ifeval``, ``leaderboard_math_*``, ``leaderboard_mmlu_pro``,
  ``leaderboard_musr_*``); none of its tasks has an InstructEval counterpart in the shipped
  leaderboard map, which the aggregation says for each such file.
- ``open-llm-leaderboard-v1``: the Open LLM Leaderboard **v1** results dataset (2023-24; the files
  with HellaSwag 10-shot): ``results`` keyed ``"harness|<task>|<n-shot>"`` with plain metric keys
  (``{"acc_norm": 0.78, "acc_norm_stderr": ...}``), the model in ``config_general.model_name`` (older
  files: ``config.model_name``), no ``configs``; item counts in ``summary_tasks``. Its task names are
  read as the harness tasks they ran (``hellaswag``, ``arc:challenge`` -> ``arc_challenge``,
  ``truthfulqa:mc`` -> ``truthfulqa_mc2``, ``hendrycksTest-<subject>`` -> ``mmlu_<subject>``, ...).

Not a results file but recognised: ``sweep.json``, the plan ``instructeval run`` writes in each run
folder (``instructeval_tasks/sweep/store.py``: ``profile``, ``tasks``, ``variants``, ... and no
``results``), so that ``aggregate runs/*/*.json`` skips it with a note (:func:`is_sweep_plan`).

Anything else is refused by name (``not-results``), never guessed.

Example:
    >>> results_format({"results": {"harness|hellaswag|10": {"acc_norm": 0.5}}, "config_general": {"model_name": "m"}})
    'open-llm-leaderboard-v1'
    >>> v1_task("harness|hellaswag|10"), v1_task("harness|hendrycksTest-virology|5"), v1_task("all")
    (('hellaswag', 10), ('mmlu_virology', 5), None)
"""

from __future__ import annotations

import re
from typing import Any, Mapping

LM_EVAL = "lm-eval"
OPEN_LLM_V1 = "open-llm-leaderboard-v1"
FORMATS_READ = (
    "lm-eval results_*.json (top-level 'results' and 'configs'; also the Open LLM Leaderboard v2 results) "
    "or Open LLM Leaderboard v1 results ('results' keyed 'harness|<task>|<n-shot>' with 'config_general')"
)

# Open LLM Leaderboard v1 task names -> the lm-eval task names of today (the rest keep their name).
_V1_RENAMES = {"arc:challenge": "arc_challenge", "truthfulqa:mc": "truthfulqa_mc2"}
_V1_KEY = re.compile(r"harness\|([^|]+)\|(\d+)")


def v1_task(key: str) -> tuple[str, int] | None:
    """``(harness task, n-shot)`` of a v1 results key ``harness|<task>|<n>``; None for ``all`` and other keys."""
    match = _V1_KEY.fullmatch(key)
    if not match:
        return None
    name, shots = match.group(1), int(match.group(2))
    if name.startswith("hendrycksTest-"):
        return "mmlu_" + name[len("hendrycksTest-"):].replace("-", "_"), shots
    return _V1_RENAMES.get(name, name), shots


def v1_model(data: Mapping[str, Any]) -> str | None:
    """The model of a v1 file (``config_general.model_name``, older files ``config.model_name``)."""
    for key in ("config_general", "config"):
        block = data.get(key)
        if isinstance(block, Mapping) and isinstance(block.get("model_name"), str) and block["model_name"].strip():
            return block["model_name"].strip()
    return None


def v1_items(data: Mapping[str, Any], key: str) -> int | None:
    """Items scored for a v1 task (``summary_tasks[key]``: truncated + non_truncated), when recorded."""
    summary = (data.get("summary_tasks") or {}).get(key) if isinstance(data.get("summary_tasks"), Mapping) else None
    if not isinstance(summary, Mapping):
        return None
    counts = [summary.get("truncated"), summary.get("non_truncated")]
    if all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
        return int(counts[0]) + int(counts[1])
    return None


def is_sweep_plan(data: Any) -> bool:
    """Whether ``data`` is the ``sweep.json`` plan of an ``instructeval run`` folder (not results).

        >>> is_sweep_plan({"profile": {"name": "quick"}, "tasks": ["agnews"], "variants": ["instructeval_agnews__null__zs"]})
        True
        >>> is_sweep_plan({"results": {}, "configs": {}})
        False
    """
    return (isinstance(data, Mapping) and "results" not in data and isinstance(data.get("profile"), Mapping)
            and isinstance(data.get("tasks"), list) and isinstance(data.get("variants"), list))


def results_format(data: Any) -> str | None:
    """``LM_EVAL``, ``OPEN_LLM_V1``, or None (a JSON object this does not read).

    A v1 file is recognised by its ``harness|<task>|<n-shot>`` keys even without its model name
    (:func:`v1_model` None): the loader then says that the name is what is missing.
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("results"), Mapping):
        return None
    if isinstance(data.get("configs"), Mapping):
        return LM_EVAL
    if any(v1_task(str(key)) for key in data["results"]):  # without a model name: refused by loading, named
        return OPEN_LLM_V1
    return None


def is_open_llm_v2(task_names: list[str]) -> bool:
    """Whether an lm-eval file's tasks are the Open LLM Leaderboard v2's (``leaderboard_*``)."""
    return bool(task_names) and any(name == "leaderboard" or name.startswith("leaderboard_") for name in task_names)


# Stock-task results: what the leaderboard comparison reads.


def stock_tasks(leaderboard_map: str | None = None) -> dict[str, tuple[str, str]]:
    """``{stock task: (InstructEval task, metric)}`` from the leaderboard map."""
    from instructeval_tasks.leaderboard_map import load_leaderboard_map

    counterparts, _ = load_leaderboard_map(leaderboard_map)
    return {c.stock_task: (c.task, c.metric) for c in counterparts.values()}


def is_stock_results(data: Mapping[str, Any]) -> bool:
    """True when a results file holds a stock result (read by the leaderboard comparison, not an 'empty' file)."""
    if results_format(data) == OPEN_LLM_V1:
        return True
    try:
        known = stock_tasks()
    except Exception:  # a broken shipped map is reported by the leaderboard section itself
        known = {}
    configs = data.get("configs") or {}
    for name in data.get("results") or {}:
        meta = (configs.get(name) or {}).get("metadata") or {}
        if name in known or (isinstance(meta, Mapping) and isinstance(meta.get("leaderboard"), Mapping)):
            return True
    return False
