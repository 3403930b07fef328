"""``InstructionInductionTask``: the harness task class of the ``instructeval_ii_*`` YAMLs.

An ``InstructEvalTask`` (same metadata keys: ``instruction``, ``method`` + ``instruction_index`` /
``instruction_id``, ``bank_dir``, ``data_dir``, ``demo_seed``, ``order_seed``, ``test_sample``)
with the Instruction Induction data, prompt and scoring:

- evaluation rows from ``raw/execute/<task>.json`` (``rows.build_rows``), demonstrations (only with
  ``--num_fewshot K``) from ``raw/induce/<task>.json``, read lazily: a zero-shot run never opens it;
- the prompt of ``prompt``; greedy generation of at most 30 tokens (the original's ``max_tokens``),
  stopping only at EOS, since the original's normalisation reads the first line itself;
- ``execution_accuracy``: the original's per-task metric over every correct answer (``metrics.score``).

``truncate_words`` and ``perturbation`` are InstructEval protocol knobs with no meaning here: setting
them is an error rather than a silent no-op.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import datasets

from ..options import OptionError
from ..task import InstructEvalTask
from .metrics import score
from .names import metric_of, source_name
from .prompt import description
from .examples import build_rows
from .source import REPOSITORY, SOURCE_COMMIT, raw_path, read_examples

METRIC = "execution_accuracy"


@functools.lru_cache(maxsize=64)
def _rows(path: str, mtime_ns: int, size: int, task: str) -> tuple[dict[str, Any], ...]:
    # Parsed once per process per file version: a sweep builds one task object per variant.
    return tuple(build_rows(task, read_examples(Path(path), task), path))


def load_rows(task: str, split: str, data_dir: str | None) -> tuple[list[dict[str, Any]], str]:
    """``(rows, path)`` of ``task`` (original name) for ``split`` (``execute`` or ``induce``)."""
    path = raw_path(split, task, data_dir)
    stat = path.stat()
    rows = _rows(str(path.resolve()), stat.st_mtime_ns, stat.st_size, task)
    return [dict(r) for r in rows], str(path.resolve())


class LazyRows:
    """The ``induce`` rows, read on first use (the demo sampler touches them only when K > 0)."""

    def __init__(self, task: str, data_dir: str | None) -> None:
        self.task, self.data_dir = task, data_dir
        self._rows: list[dict[str, Any]] | None = None
        self.path: str | None = None

    def _load(self) -> list[dict[str, Any]]:
        if self._rows is None:
            self._rows, self.path = load_rows(self.task, "induce", self.data_dir)
        return self._rows

    def __len__(self) -> int:
        return len(self._load())

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self._load()[index]


class InstructionInductionTask(InstructEvalTask):
    """One Instruction Induction task; see the module docstring."""

    def __init__(self, data_dir=None, cache_dir=None, download_mode=None, config: dict | None = None) -> None:
        metadata = dict((config or {}).get("metadata") or {})
        for key in ("truncate_words", "perturbation"):
            if metadata.get(key) is not None:
                raise OptionError(
                    f"{(config or {}).get('task')}: metadata {key} is not supported by the Instruction Induction "
                    f"tasks (execution accuracy on the raw inputs); leave it unset"
                )
        self._demo_rows: LazyRows | None = None
        super().__init__(data_dir=data_dir, cache_dir=cache_dir, download_mode=download_mode, config=config)

    @property
    def source_task(self) -> str:
        return source_name(self.spec.name)

    def describe(self, instruction) -> str:
        return description(instruction.text)

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        rows, self._data_source = load_rows(self.source_task, "execute", self.options.data_dir)
        if self.options.test_sample is not None:
            rows = [rows[i] for i in self.draw_test_ids(None, len(rows), f"{len(rows)} rows")]
        self.dataset = datasets.DatasetDict({self.config.test_split: datasets.Dataset.from_list(rows)})

    def demo_pool(self) -> LazyRows:
        if self._demo_rows is None:
            self._demo_rows = LazyRows(self.source_task, self.options.data_dir)
        return self._demo_rows

    def process_results(self, doc: dict, results: list) -> dict[str, float]:
        return {METRIC: float(score(metric_of(self.spec.name), results[0], doc["answers"]))}

    def protocol_record(self) -> dict[str, Any]:
        record = super().protocol_record()
        pool = self._demo_rows
        record.update(
            ii_task=self.source_task,
            ii_metric=metric_of(self.spec.name),
            ii_source=f"{REPOSITORY}@{SOURCE_COMMIT}",
            demo_source=pool.path if pool is not None and pool.path else None,
        )
        return record
