"""Evaluate and save a sweep's pending chunks (``Evaluation``) and the report of what a sweep did
(``SweepReport``).

An executor (``executors``) evaluates the chunks; ``Evaluation`` hands it the queue of pending
chunks (``shards.ClaimingQueue``), draws the progress bar with one line per variant (its primary
score and time), saves each chunk as one results file through the ``SweepStore`` (this process
alone writes the output) and runs the stock counterparts of the tasks whose variants are all saved.
After Ctrl-C or SIGTERM (``interrupts``) one line says what was evaluated, that the finished chunks
are saved and that the same command resumes.
"""

from __future__ import annotations

import datetime as _dt
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .adaptive import SAMPLE_METRICS
from .chunk import PATH_KEY, ModelSpec, merge_path_counts, stock_path_note
from .env_info import environment_info_once
from .interrupts import StopRequests, Terminated
from .plan import Variant
from .profiles import Profile
from .shards import ClaimingQueue
from .store import SweepStore

PRIMARY_METRICS = tuple(f"{name},none" for name in SAMPLE_METRICS)  # results keys, first present wins


@dataclass
class SweepReport:
    """What a sweep did: where, how many variants were planned, skipped as done, and evaluated."""

    output_dir: Path
    planned: int
    skipped: int
    evaluated: int = 0
    result_files: list[Path] = field(default_factory=list)
    seconds: float = 0.0
    plan: dict[str, Any] = field(default_factory=dict)  # sweep.json's content (also for a dry run, which writes none)


class Evaluation:
    """Evaluate and save pending chunks with an executor, with the progress bar and Ctrl-C handling;
    this process alone writes the results (``save``)."""

    def __init__(self, store: SweepStore, report: SweepReport, *, planned: dict[str, str], log_samples: bool,
                 progress: bool, echo: Callable[[str], None]) -> None:
        self.store, self.report, self.planned = store, report, planned
        self.log_samples, self.progress, self.echo = log_samples, progress, echo
        self.paths: list[dict[str, Any]] = []  # instructeval-hf path records of variants with stock-path requests
        self.stock: Any = None

    def write(self, line: str) -> None:
        """A line above the progress bar."""
        self.bar.write(line, file=sys.stderr)

    def run(self, runner: Any, jobs: list, spec: ModelSpec, prof: Profile, *, stock: Any = None) -> None:
        from tqdm.auto import tqdm

        # Redrawn on every variant (a variant takes seconds), not at tqdm's default 0.1 s rate limit.
        self.bar = tqdm(total=sum(len(job.variants) for job in jobs), unit="variant", desc="sweep",
                        disable=not self.progress, file=sys.stderr, mininterval=0, miniters=1)
        stop = StopRequests(self.write)
        queue = ClaimingQueue(jobs, self.store.root, still_pending=self.still_pending, stopping=lambda: stop.requested,
                              echo=self.write)
        self.stock = stock
        if stock is not None:
            stock.evaluation["write"] = self.write
        try:
            with stop, environment_info_once():  # the stock runs' harness calls too: one environment record, quiet git
                if stock is not None:  # tasks whose variants were all saved by an earlier run
                    self.report.result_files.extend(stock.run_ready())
                runner.run(queue, spec=spec, profile=prof, log_samples=self.log_samples, save=self.save,
                           on_variant=self.variant_done, stop=stop, echo=self.write)
                stop.raise_if_requested()
        except KeyboardInterrupt as stop_now:
            self.bar.close()
            how = "terminated (SIGTERM)" if isinstance(stop_now, Terminated) else "interrupted"
            self.echo(f"{how} after {self.report.evaluated} variants; finished chunks are saved in {self.store.root}. "
                      f"Run the same command again to resume.")
            raise
        except BaseException:  # an error ends on its own line, after the bar
            self.bar.close()
            raise
        self.bar.close()
        self.summarise_paths()
        self.report.skipped += queue.skipped  # saved by another process (a shard) while this one ran

    def variant_done(self, variant: Any, results: dict[str, Any], seconds: float) -> None:
        """A variant's progress line: its primary score (on its cells, when budgeted) and its time."""
        metric, value = _primary(results["results"].get(variant.name, {}))
        shown = "n/a" if value is None else f"{value:.3f}"
        counts = (results.get("n-samples") or {}).get(variant.name) or {}
        if counts.get("effective") != counts.get("original"):  # a budgeted variant: its own cells only
            shown += f" on {counts.get('effective')} of {counts.get('original')} items"
        note = stock_path_note(results)
        if note:
            self.paths.append(results["config"][PATH_KEY])
        self.write(f"done {variant.name}: {metric}={shown} ({seconds:.1f} s){note}")
        self.bar.update(1)

    def save(self, job: Any, results: dict[str, Any], samples: dict[str, list[dict]]) -> None:
        stamp = _dt.datetime.now().strftime("%Y-%m-%dT%H-%M-%S.%f")
        self.report.result_files.append(self.store.write_chunk(job.key, results, samples, stamp))
        self.report.evaluated += len(job.variants)
        if self.stock is not None:  # the stock counterpart of a task whose variants are now all saved (not a harness job's)
            self.report.result_files.extend(self.stock.run_ready([v for v in job.variants if isinstance(v, Variant)]))

    def still_pending(self, job: Any) -> Any:
        """The job's variants not saved yet (another shard may have saved some); conflicts refused."""
        store = self.store
        saved = store.finished(job.variants[0].chunk)
        store.check_conflicts({name: self.planned[name] for name in job.names}, saved)
        if self.log_samples:  # a variant saved without its samples file is evaluated again (``_logged_only``)
            saved = store.finished(job.variants[0].chunk, logged=True)
        left = [v for v in job.variants if v.name not in saved]
        return None if not left else job if len(left) == len(job.variants) else job.restricted(left)

    def summarise_paths(self) -> None:
        """The instructeval-hf stock-path summary: it repeats what scrolled by in the progress lines."""
        if self.paths:
            merged = merge_path_counts(self.paths)
            self.echo(f"instructeval-hf: {len(self.paths)} variant(s) ran requests on the stock hf path"
                      f"{stock_path_note({'config': {PATH_KEY: merged}})} -- same scores, about the speed of --model hf; "
                      f"require_prefix=true in --model_args makes this an error")


def _primary(result: dict[str, Any]) -> tuple[str, float | None]:
    for key in PRIMARY_METRICS:
        if key in result:
            return key.split(",")[0], result[key]
    for key, value in result.items():  # a harness task's own metric, e.g. exact_match,strict-match
        if "," in key and "_stderr" not in key and isinstance(value, (int, float)) and not isinstance(value, bool):
            return key, value
    return "?", None
