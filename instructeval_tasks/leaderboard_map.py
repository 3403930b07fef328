"""The leaderboard map: which stock lm-eval task, metric and n-shot stand for each InstructEval task.

The shipped map is the ``stock:`` block of each task's ``task_spec.yaml`` (``instructeval_tasks/<task>/``);
``--leaderboard-map FILE`` replaces it with a YAML file of this layout::

    counterparts:            # InstructEval task id -> its stock lm-eval task
      hellaswag:
        stock_task: hellaswag    # the harness task name (as in `lm_eval --tasks`)
        metric: acc_norm         # the stock metric compared with the InstructEval accuracy (in [0, 1])
        num_fewshot: 10          # the stock few-shot setting
        fields: {}               # {stock field: InstructEval field} copied into each row before the
                                 # stock task's own process_docs (a bool becomes 0/1)
        source: Open LLM Leaderboard (v1), HellaSwag 10-shot acc_norm
    no_counterpart:          # optional: task -> why it has none (reported, never guessed)
      imdb: no imdb task

Every problem is an error naming the file and the field.

Example:
    >>> counterparts, missing = load_leaderboard_map()
    >>> counterparts["hellaswag"].stock_task, counterparts["hellaswag"].metric, counterparts["hellaswag"].num_fewshot
    ('hellaswag', 'acc_norm', 10)
    >>> "imdb" in missing
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import UserError
from .specs import TASK_SPECS



class LeaderboardError(UserError, ValueError):
    """A bad leaderboard map or ``--leaderboard-tasks`` value."""


@dataclass(frozen=True)
class Counterpart:
    """The stock task that stands for one InstructEval task."""

    task: str
    stock_task: str
    metric: str
    num_fewshot: int
    fields: dict[str, str] = field(default_factory=dict)
    source: str = ""
    map_file: str = ""

    def with_fewshot(self, num_fewshot: int | None) -> "Counterpart":
        if num_fewshot is None:
            return self
        return Counterpart(self.task, self.stock_task, self.metric, num_fewshot, dict(self.fields), self.source, self.map_file)

    def record(self) -> dict[str, Any]:
        return {
            "instructeval_task": self.task,
            "stock_task": self.stock_task,
            "metric": self.metric,
            "num_fewshot": self.num_fewshot,
            "fields": dict(self.fields),
            "source": self.source,
            "map_file": self.map_file,
        }


def load_leaderboard_map(path: str | Path | None = None) -> tuple[dict[str, Counterpart], dict[str, str]]:
    """``(counterparts by InstructEval task, {task: why it has none})``: from the task specs, or
    from the map file ``path`` (``--leaderboard-map``) instead."""
    if not path:
        counterparts = {
            name: _counterpart(name, dict(spec.stock), f"{spec.spec_file}: stock", spec.spec_file)
            for name, spec in TASK_SPECS.items() if spec.stock is not None
        }
        return counterparts, {name: spec.no_stock for name, spec in TASK_SPECS.items() if spec.no_stock}
    import yaml

    file = Path(path).expanduser()
    if not file.is_file():
        raise LeaderboardError(f"--leaderboard-map {file}: no such file")
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise LeaderboardError(f"{file}: not valid YAML ({err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("counterparts"), dict):
        raise LeaderboardError(f"{file}: needs a top-level 'counterparts' mapping of InstructEval task -> {{stock_task, metric, num_fewshot}}")
    counterparts = {
        task: _counterpart(task, entry, f"{file}: counterparts.{task}", str(file))
        for task, entry in data["counterparts"].items()
    }
    missing = data.get("no_counterpart") or {}
    if not isinstance(missing, dict):
        raise LeaderboardError(f"{file}: no_counterpart must be a mapping of task -> reason")
    return counterparts, {str(k): str(v) for k, v in missing.items()}


def _counterpart(task: str, entry: Any, where: str, map_file: str) -> Counterpart:
    if task not in TASK_SPECS:
        raise LeaderboardError(f"{where}: unknown InstructEval task; known: {', '.join(TASK_SPECS)}")
    if not isinstance(entry, dict):
        raise LeaderboardError(f"{where}: expected a mapping with stock_task, metric and num_fewshot")
    unknown = sorted(set(entry) - {"stock_task", "metric", "num_fewshot", "fields", "source"})
    if unknown:
        raise LeaderboardError(f"{where}: unknown key(s) {unknown}; allowed: stock_task, metric, num_fewshot, fields, source")
    for key in ("stock_task", "metric"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise LeaderboardError(f"{where}.{key}: missing or not a string")
    shots = entry.get("num_fewshot")
    if isinstance(shots, bool) or not isinstance(shots, int) or shots < 0:
        raise LeaderboardError(f"{where}.num_fewshot: {shots!r} is not a non-negative integer")
    fields = entry.get("fields") or {}
    if not isinstance(fields, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in fields.items()):
        raise LeaderboardError(f"{where}.fields: expected a mapping of stock field -> InstructEval field (strings)")
    return Counterpart(task, entry["stock_task"].strip(), entry["metric"].strip(), shots, dict(fields),
                       str(entry.get("source") or ""), map_file)


def parse_leaderboard_tasks(text: str | None) -> dict[str, int | None]:
    """``"hellaswag:25,boolq"`` -> ``{"hellaswag": 25, "boolq": None}``; ``""`` -> ``{}`` (all).

    A name is an InstructEval task id or its stock task's name; ``:N`` overrides the n-shot.

        >>> parse_leaderboard_tasks("hellaswag:25, boolq")
        {'hellaswag': 25, 'boolq': None}
    """
    out: dict[str, int | None] = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        name, _, shots = part.partition(":")
        name = name.strip()
        if shots.strip():
            if not shots.strip().isdigit():
                raise LeaderboardError(f"--leaderboard-tasks {part!r}: the n-shot after ':' must be a non-negative integer")
            out[name] = int(shots)
        else:
            out[name] = None
    return out


def select_counterparts(
    request: dict[str, int | None],
    tasks: list[str],
    counterparts: dict[str, Counterpart],
    no_counterpart: dict[str, str],
) -> tuple[list[Counterpart], list[str]]:
    """The counterparts to run for the sweep's ``tasks``: ``(counterparts, notes)``.

    An empty ``request`` takes every task that has a counterpart (the others are named in the
    notes); a named task must be one of the sweep's tasks and have a counterpart.
    """
    by_stock = {c.stock_task: c.task for c in counterparts.values()}
    if not request:
        chosen = [counterparts[t] for t in tasks if t in counterparts]
        notes = [
            f"leaderboard: no stock counterpart for {t} ({no_counterpart.get(t, 'not in the leaderboard map')})"
            for t in tasks
            if t not in counterparts
        ]
        return chosen, notes
    chosen = []
    for name, shots in request.items():
        task = name.removeprefix("instructeval_")
        task = task if task in TASK_SPECS else by_stock.get(name, task)
        if task not in TASK_SPECS:
            raise LeaderboardError(f"--leaderboard-tasks {name!r}: not an InstructEval task nor a mapped stock task; known: {', '.join(TASK_SPECS)}")
        if task not in tasks:
            raise LeaderboardError(f"--leaderboard-tasks {name!r}: {task} is not among --tasks ({', '.join(tasks)}); the stock task runs on the sweep's test items")
        if task not in counterparts:
            raise LeaderboardError(f"--leaderboard-tasks {name!r}: {task} has no stock counterpart ({no_counterpart.get(task, 'not in the leaderboard map')}); add one with --leaderboard-map FILE")
        chosen.append(counterparts[task].with_fewshot(shots))
    return chosen, []
