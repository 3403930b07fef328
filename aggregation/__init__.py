"""Post-hoc aggregation of InstructEval results (import name ``instructeval_aggregation``).

Reads standard lm-eval results files (``results_*.json``, variant identity from
``configs[T].metadata``) and, when present, per-sample logs (``samples_<T>_<stamp>.jsonl``), and
computes the paper's tables (Ajith et al. 2024, Tables 3-8) plus bootstrap confidence intervals,
paired significance tests, wins, MaxP/AvgP and worst-case perturbation accuracy.

Python API::

    from instructeval_aggregation import collect, write_report
    result = collect(["runs/"], null_weight=5)    # Aggregates: every section, as instructeval aggregate
    result.table("gain_few_shot")                 # method x task, mean relative gain (%)
    write_report(result, "report/")               # tables/, data/, plots/, summary.json, report.html

``collect`` loads the results once per section (``sections``: the nine tasks via ``load_runs`` and
``aggregate``, then the leaderboard comparison, the harness tasks, the Natural Instructions tasks);
``aggregate(load_runs(paths))`` alone gives the nine tasks' tables only.

CLI: ``instructeval aggregate runs/ --out report/`` (see ``docs/aggregation.md``).

Formulas (details in the modules that implement them):

- per instruction (``per_instruction``): ZS = zero-shot accuracy; FS = mean over demo seeds of the
  few-shot accuracies; PA = mean of the perturbed variants' accuracies; selectional sensitivity =
  SD (ddof=1) of the few-shot accuracies; permutational sensitivity = mean over the ordering demo
  sets of the SD (ddof=1) over each set's orderings; an SD of fewer than 2 values is NaN + warning;
- relative gain (``relative_gain``): ``mu = sum w_i s_i / sum w_i`` over all instructions of a
  (model, task), ``w = 5`` for the null instruction; ``gain_i = 100 (s_i - mu) / mu``; cell = mean
  over models of the mean over the method's instructions; ``mu = 0`` gives NaN + warning;
- sensitivity cells: mean over models of the mean over instructions of ``100 * SD``;
- wins, task-type averages, variation range, family/scale splits (``summaries``);
- bootstrap CIs and the paired "A beats B" test over resampled test items (``bootstrap``).

Modules: ``catalog`` (names and orders), ``issues`` (``AggregationError``, warnings), ``records``
(``VariantResult``, ``RunSet``), ``loading`` (files -> variants), ``validation`` (duplicates, protocol
agreement), ``samples`` (per-item matrices, worst case), ``per_instruction``,
``relative_gain``, ``registry`` (+ ``model_registry.yaml``), ``bootstrap``, ``summaries``,
``tables`` (Markdown/CSV/LaTeX), ``plots`` (matplotlib), ``report`` (HTML and files),
``pipeline`` (``aggregate``), ``cli``, ``testing`` (synthetic results files for tests).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from instructeval_tasks.lazy import lazy_exports

from .issues import AggregationError, Issue

if TYPE_CHECKING:  # read on first use (``instructeval_tasks.lazy``): the package imports no pandas
    from .loading import load_runs
    from .pipeline import AggregateOptions, Aggregates, aggregate
    from .records import RunSet
    from .report import write_report
    from .sections import collect

__all__ = [
    "AggregateOptions",
    "Aggregates",
    "AggregationError",
    "Issue",
    "RunSet",
    "aggregate",
    "collect",
    "load_runs",
    "write_report",
]

__getattr__, __dir__ = lazy_exports(__name__)
