"""Stock lm-eval tasks run beside a sweep (``instructeval run --leaderboard-tasks``).

Each stock counterpart (``leaderboard_map``) is built from the installed harness's own YAML -- its
prompt, ``process_docs``, metrics, filters and few-shot sampler -- with two changes:

- rows come from the InstructEval task's source: ``<data_dir>/<task>/{train,eval}.jsonl`` with a data
  directory, else the InstructEval YAML's HF dataset, and the map's ``fields`` are copied in first
  (e.g. BoolQ ``label`` from ``answer``); the stock ``process_docs`` then runs on them as usual;
- the items scored are the sweep's test items (the same ``select_indices(labels, n, test_sample,
  test_seed)`` draw as ``InstructEvalTask.download``), selected the way ``lm_eval --samples`` selects
  them: the task keeps the whole eval split and ``simple_evaluate`` gets ``samples={task: sorted test
  ids}``. The harness draws each item's few-shot demos from one seeded generator in the order it
  visits the items, so this -- and only this -- makes the recorded score reproducible with
  ``lm_eval --tasks <task> --num_fewshot K --seed 0,1234,1234,1234 --samples '<record.replay.samples>'``
  on the same rows (the record's ``replay``). The samples log's ``doc_id`` is therefore the item's
  row in the eval split (``record.doc_ids == "eval row"``), and ``record.test_ids`` maps it to the
  InstructEval item (position i of ``test_ids``). Truncation and perturbation are not applied (the
  stock prompt sees the full text).

The stock task keeps its harness name (``hellaswag``), so the aggregation reads these files like any
``lm_eval`` results file. ``configs[<name>].metadata.leaderboard`` records the counterpart, test ids
and data source, and ``variant_fingerprint`` lets a resumed sweep skip a finished stock task.

Example:
    >>> from instructeval_tasks.leaderboard_map import load_leaderboard_map
    >>> counterparts, _ = load_leaderboard_map()
    >>> run = plan_stock_run(counterparts["boolq"], test_sample=16, test_seed=0, data_dir=None, model_meta={})
    >>> run.name, run.counterpart.metric
    ('boolq', 'acc')
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import datasets
from lm_eval.api.task import ConfigurableTask

from ..data import load_splits
from ..options import resolve_data_dir
from ..sampling import select_indices
from ..specs import get_spec
from ..leaderboard_map import Counterpart, LeaderboardError
from .plan import fingerprint

FEWSHOT_SEED = 1234  # lm_eval.simple_evaluate's default fewshot_random_seed, recorded in the metadata
DOC_IDS = "eval row"  # record.doc_ids: a stock samples log's doc_id is the item's row in the eval split


@dataclass(frozen=True)
class StockRun:
    """One stock task to evaluate: its counterpart, the sweep's sample and its metadata."""

    counterpart: Counterpart
    metadata: dict[str, Any]

    @property
    def name(self) -> str:
        return self.counterpart.stock_task

    @property
    def fingerprint(self) -> str:
        return self.metadata["variant_fingerprint"]


def plan_stock_run(
    counterpart: Counterpart,
    *,
    test_sample: int | None,
    test_seed: int,
    data_dir: str | None,
    model_meta: dict[str, Any],
) -> StockRun:
    """The stock run of ``counterpart`` on the sweep's test sample; its fingerprint covers the protocol."""
    data_dir = resolve_data_dir(data_dir)
    record = {
        **counterpart.record(),
        "test_sample": test_sample,
        "test_seed": test_seed,
        "data_dir": data_dir,
        "fewshot_seed": FEWSHOT_SEED,
        "doc_ids": DOC_IDS,
    }
    identity = {k: v for k, v in record.items() if k not in ("source", "map_file")}
    meta = {"leaderboard": record, **model_meta, "variant_fingerprint": fingerprint({"leaderboard": identity})}
    return StockRun(counterpart, meta)


@functools.lru_cache(maxsize=1)
def _builtin_index() -> dict[str, Any]:
    """The installed harness's task index (built once per process; about 15 s)."""
    from lm_eval.tasks import TaskManager

    return dict(TaskManager().task_index)


def stock_yaml(stock_task: str) -> Path:
    """The YAML file of a built-in stock task; a clear error when the harness has no such task."""
    entry = _builtin_index().get(stock_task)
    kind = getattr(getattr(entry, "kind", None), "name", None)
    if entry is None or kind != "TASK" or not getattr(entry, "yaml_path", None):
        what = "no task" if entry is None else f"a {kind or 'non-task'} entry, not a YAML task"
        raise LeaderboardError(
            f"leaderboard map: the installed lm-eval has {what} named {stock_task!r}; fix stock_task in the map (--leaderboard-map FILE)"
        )
    return Path(entry.yaml_path)


def stock_config(run: StockRun) -> dict[str, Any]:
    """The stock task's config (includes and ``!function`` resolved) with the run's n-shot and metadata."""
    from lm_eval.tasks._yaml_loader import load_yaml

    cfg = dict(load_yaml(stock_yaml(run.name), resolve_func=True))
    cfg.pop("tag", None)
    cfg.pop("group", None)
    metric_names = [m.get("metric") for m in cfg.get("metric_list") or []]
    if run.counterpart.metric not in metric_names:
        raise LeaderboardError(
            f"leaderboard map ({run.counterpart.map_file}): {run.name} reports {metric_names}, not {run.counterpart.metric!r}; fix metric"
        )
    cfg["num_fewshot"] = run.counterpart.num_fewshot
    cfg["metadata"] = {**(cfg.get("metadata") or {}), **run.metadata}
    return cfg


def copy_fields(row: dict[str, Any], fields: dict[str, str]) -> dict[str, Any]:
    """The stock fields named by the map, copied from the InstructEval fields (bools as 0/1).

        >>> copy_fields({"answer": True}, {"label": "answer"})
        {'label': 1}
    """
    out = {}
    for stock, ours in fields.items():
        value = row[ours]
        out[stock] = int(value) if isinstance(value, bool) else value
    return out


class LeaderboardStockTask(ConfigurableTask):
    """A stock ``ConfigurableTask`` reading the InstructEval task's rows (see the module docstring)."""

    def __init__(self, run: StockRun, config: dict[str, Any]) -> None:
        self.run = run
        self.spec = get_spec(run.counterpart.task)
        self._test_ids: list[int] | None = None
        self._data_source = ""
        super().__init__(config=config)

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        from ..task import base_task_config

        record = self.run.metadata["leaderboard"]
        ours = base_task_config(self.spec.name)
        train, evaluation, self._data_source = load_splits(
            self.spec,
            data_dir=record["data_dir"],
            dataset_path=ours.get("dataset_path"),
            dataset_name=ours.get("dataset_name"),
            train_split=ours.get("fewshot_split") or ours.get("training_split"),
            eval_split=ours.get("test_split") or ours.get("validation_split"),
            dataset_kwargs=ours.get("dataset_kwargs"),
        )
        if record["test_sample"] is not None:  # scored through ``samples`` (see the module docstring)
            labels = evaluation[self.spec.label_field] if self.spec.balanced else None
            self._test_ids = select_indices(labels, len(evaluation), record["test_sample"], record["test_seed"],
                                            classes=self.spec.classes)
        fields = self.run.counterpart.fields
        if fields:
            for split_rows in (train, evaluation):
                absent = [f for f in fields.values() if f not in split_rows.column_names]
                if absent:
                    raise LeaderboardError(f"{self.spec.task_name}: leaderboard map fields need {absent}, not in the rows ({split_rows.column_names})")
            train = train.map(lambda row: copy_fields(row, fields), load_from_cache_file=False)
            evaluation = evaluation.map(lambda row: copy_fields(row, fields), load_from_cache_file=False)
        cfg = self.config
        # The stock YAML names its own splits: the eval rows go under the split it evaluates
        # (test if it has one, as the harness chooses), the demonstration pool under its training split.
        eval_split = cfg.test_split or cfg.validation_split
        if cfg.test_split and cfg.validation_split:
            cfg.validation_split = None
        train_split = cfg.training_split or "train"
        cfg.training_split = train_split
        splits = {train_split: train, eval_split: evaluation}
        fewshot_split = getattr(self.fewshot_cfg, "split", None) if hasattr(self, "fewshot_cfg") else cfg.fewshot_split
        if fewshot_split and fewshot_split not in splits:
            splits[fewshot_split] = train  # demonstrations always come from the InstructEval train rows
        self.dataset = datasets.DatasetDict(splits)

    @property
    def scored_rows(self) -> list[int] | None:
        """The eval rows scored, as ``lm_eval --samples`` takes them (ascending; None: every row)."""
        return None if self._test_ids is None else sorted(self._test_ids)

    def dump_config(self) -> dict:
        cfg = super().dump_config()
        meta = dict(cfg.get("metadata") or {})
        split = self.config.test_split or self.config.validation_split
        record = meta.get("leaderboard", {})
        replay = {"samples": {self.run.name: self.scored_rows} if self._test_ids is not None else None,
                  "num_fewshot": self.run.counterpart.num_fewshot, "fewshot_random_seed": record.get("fewshot_seed", FEWSHOT_SEED)}
        meta["leaderboard"] = {
            **record,
            "test_ids": self._test_ids,
            "eval_size": len(self.dataset[split]),
            "data_source": self._data_source,
            "replay": {**replay, "command": replay_command(self.run.name, replay)},
        }
        cfg["metadata"] = meta
        return cfg


def replay_command(name: str, replay: Mapping[str, Any]) -> str:
    """The ``lm_eval`` arguments that score the same items with the same demos (model and data flags aside).

        >>> print(replay_command("hellaswag", {"samples": {"hellaswag": [3, 7]}, "num_fewshot": 10, "fewshot_random_seed": 1234}))
        lm_eval --tasks hellaswag --num_fewshot 10 --seed 0,1234,1234,1234 --samples '{"hellaswag": [3, 7]}'
    """
    import json

    # --seed's four slots: python, numpy, torch (the harness's defaults, as the sweep uses) and few-shot.
    command = f"lm_eval --tasks {name} --num_fewshot {replay['num_fewshot']} --seed 0,1234,1234,{replay['fewshot_random_seed']}"
    if replay.get("samples"):
        command += f" --samples '{json.dumps(replay['samples'])}'"
    return command


def evaluate_stock(lm: Any, run: StockRun, *, log_samples: bool) -> tuple[dict[str, Any], dict[str, list[dict]]]:
    """Evaluate one stock run with the sweep's model: ``(results, samples)`` as ``evaluate_chunk``."""
    import lm_eval

    from .. import object_task_manager

    task = LeaderboardStockTask(run, stock_config(run))
    samples = {run.name: task.scored_rows} if task.scored_rows is not None else None
    check_stock_window(task, lm, run, samples=task.scored_rows)
    results = lm_eval.simple_evaluate(model=lm, tasks=[task], log_samples=log_samples, verbosity="ERROR",
                                      task_manager=object_task_manager(), fewshot_random_seed=FEWSHOT_SEED,
                                      samples=samples)
    samples = results.pop("samples", {}) if log_samples else {}
    results.pop("samples", None)
    return results, samples


def check_stock_window(task: Any, lm: Any, run: StockRun, *, samples: list[int] | None) -> None:
    """Measure the stock task's requests against ``lm``'s window as the sweep's variants are
    (``harness_window``): refuse a cut prompt unless the sweep runs with ``--allow-truncation``
    (``allow_truncation`` in the run's metadata; then the cuts are recorded under ``truncation`` in
    its results' metadata), and a request no window can evaluate in any case."""
    from ..truncation import ALLOW_TRUNCATION_KEY, TruncationError, cut_summary, mark_checked, unfit_error
    from .harness_window import measure_built, record_truncation

    record, unfit = measure_built(task, lm, instruction="", samples=samples, chat={}, seed=FEWSHOT_SEED)
    if unfit is not None:
        raise unfit_error(f"stock {run.name}", unfit, lm.max_length, item="eval row",
                          leave_out="it out of --leaderboard-tasks")
    if record is not None and not run.metadata.get(ALLOW_TRUNCATION_KEY):
        raise TruncationError(
            f"stock {run.name} ({run.counterpart.num_fewshot}-shot): {cut_summary(record, item='eval row')}; the "
            f"harness would cut them from the left and the stock score would not be the leaderboard's. Use fewer "
            f"shots (--leaderboard-tasks {run.counterpart.task}:K), raise the window (max_length= in --model_args) if "
            f"the model allows it, or pass --allow-truncation to run anyway and record what was cut")
    record_truncation(task, record)
    mark_checked(task, lm)


def plan_leaderboard(
    leaderboard_tasks: str,
    leaderboard_map: str | None,
    tasks: list[str],
    *,
    test_sample: int | None,
    test_seed: int,
    data_dir: str | None,
    model_meta: dict[str, Any],
) -> tuple[list[StockRun], list[str]]:
    """The stock runs asked for by ``--leaderboard-tasks`` (``""``: every task with a counterpart) and
    notes naming the sweep's tasks that have none. Checks each stock task and metric against the
    installed harness before any model is loaded."""
    from ..leaderboard_map import load_leaderboard_map, parse_leaderboard_tasks, select_counterparts

    counterparts, no_counterpart = load_leaderboard_map(leaderboard_map)
    chosen, notes = select_counterparts(parse_leaderboard_tasks(leaderboard_tasks), tasks, counterparts, no_counterpart)
    runs = [plan_stock_run(c, test_sample=test_sample, test_seed=test_seed, data_dir=data_dir, model_meta=model_meta) for c in chosen]
    for run in runs:
        stock_config(run)  # unknown stock task or metric: fail now, not after the sweep
    return runs, notes


class StockSchedule:
    """Runs each pending stock task as soon as the sweep's variants of its task are all saved, so an
    interrupted sweep keeps complete comparisons for the tasks it finished."""

    def __init__(self, runs: list[StockRun], pending_variants: list[Any], **evaluation: Any) -> None:
        from collections import Counter

        self.pending = list(runs)
        self.remaining = Counter(v.task for v in pending_variants)
        self.evaluation = evaluation

    def run_ready(self, finished_variants: list[Any] = ()) -> list[Path]:
        """Count ``finished_variants`` as saved, then evaluate and save the stock runs now ready."""
        self.remaining.subtract(v.task for v in finished_variants)
        ready = stock_ready(self.pending, self.remaining)
        if not ready:
            return []
        kwargs = dict(self.evaluation)
        return run_leaderboard(kwargs.pop("lm"), ready, kwargs.pop("store"), **kwargs)


def stock_ready(pending: list[StockRun], remaining: Mapping[str, int]) -> list[StockRun]:
    """Remove and return the pending stock runs whose InstructEval task has no variant left to run.

        >>> from instructeval_tasks.leaderboard_map import load_leaderboard_map
        >>> counterparts = load_leaderboard_map()[0]
        >>> runs = [plan_stock_run(counterparts[t], test_sample=4, test_seed=0, data_dir=None, model_meta={})
        ...         for t in ("hellaswag", "boolq")]
        >>> [r.name for r in stock_ready(runs, {"hellaswag": 1, "boolq": 0})], [r.name for r in runs]
        (['boolq'], ['hellaswag'])
    """
    ready = [run for run in pending if not remaining.get(run.counterpart.task)]
    for run in ready:
        pending.remove(run)
    return ready


def run_leaderboard(lm: Any, runs: list[StockRun], store: Any, *, model: str, args_dict: dict[str, Any], label: str,
                    batch_size: Any, device: str | None, log_samples: bool, write: Any) -> list[Path]:
    """Evaluate and save each stock run (one results file each, committed like a sweep chunk)."""
    import datetime as _dt

    paths = []
    for run in runs:
        results, samples = evaluate_stock(lm, run, log_samples=log_samples)
        results["config"].update(model=model, model_args=args_dict, batch_size=batch_size, device=device)
        results["model_name"] = label
        stamp = _dt.datetime.now().strftime("%Y-%m-%dT%H-%M-%S.%f")
        key = f"leaderboard__{run.name}__{run.fingerprint[:8]}"
        paths.append(store.write_chunk(key, results, samples, stamp))
        result = results["results"].get(run.name) or {}
        value = next((v for k, v in result.items() if k.split(",")[0] == run.counterpart.metric), None)
        shown = "n/a" if value is None else f"{value:.3f}"
        write(f"done {run.name} (stock, {run.counterpart.num_fewshot}-shot): {run.counterpart.metric}={shown}")
    return paths
