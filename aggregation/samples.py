"""Per-sample logs: per-item correctness of every variant of a (model, task), as one matrix.

A samples file (``samples_<T>_<stamp>.jsonl``, harness.md §14.3) has one JSON object per line with
``doc_id``, ``filter`` and the per-document metric values (``acc``, ``acc_per_token``,
``quasi_exact_match``, ...; ``true``/``false`` or numbers). Lines are sorted by ``doc_id`` here,
since data-parallel runs write them out of order.

:class:`ItemMatrix` stacks, for one (model, task), one row per variant (items in ``doc_id`` order)
plus derived *worst-case* rows (see :func:`build_item_matrix`), and records which rows make up
each instruction's zero-shot, few-shot, perturbation and worst-case accuracy. The bootstrap
(``bootstrap.py``) resamples its columns.

Checks (each leaves the (model, task) without item-level results, never a silently mixed matrix):
a samples file that is empty or cannot be parsed, or a ``doc_id`` twice, is input dropped (``error
bad-samples``: the command exits 3); a variant without a samples file, variants that cover different
``doc_id`` sets, and per-item values whose mean differs from the results file's number by more than
1e-6 (samples from another run) are warnings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from instructeval_tasks.estimation.choice_scores import ChoiceScores, choice_line, choice_pairs, finite_float, gold_choice
from instructeval_tasks.estimation.item_response import target_text

from .issues import AggregationError, IssueLog
from .json_input import BadJson, parse_json_line
from .records import VariantResult

MEAN_TOLERANCE = 1e-6


def read_sample_values(path: str, metric: str, *, filter_name: str = "none") -> tuple[np.ndarray, np.ndarray]:
    """``(doc_ids, values)`` of ``metric`` from a samples JSONL file, sorted by ``doc_id`` (see :func:`read_samples`)."""
    doc_ids, values, _ = read_samples(path, metric, filter_name=filter_name)
    return doc_ids, values


def gold_loglikelihood(record: dict) -> float:
    """The log-likelihood the model gave the gold answer of one samples line; NaN if it has none.

    For a log-likelihood (multiple-choice) request, ``filtered_resps`` holds one ``[ll, is_greedy]``
    pair per choice and ``target`` is the gold choice's index (an integer or its digits) or its
    text, matched against the requests' continuations (``arguments``), stripped. A generation
    line (a string response) has none.
    """
    pairs = choice_pairs(record)
    if pairs is None:
        return math.nan
    index = gold_choice(record, len(pairs))
    return math.nan if index is None else finite_float(pairs[index][0])


def read_choice_scores(path: str, *, filter_name: str = "none") -> ChoiceScores:
    """:class:`ChoiceScores` of a samples file (the checks of :func:`read_samples`, less the metric).

    Example (one AG News line, gold "1" of four labels):
        >>> import json, tempfile
        >>> line = {"doc_id": 0, "target": "1", "filtered_resps": [["-2.5", "False"], ["-0.5", "True"], ["-3", "False"],
        ...         ["-4", "False"]], "arguments": {f"gen_args_{k}": {"arg_0": "News: x\\nCategory:", "arg_1": f" {w}"}
        ...         for k, w in enumerate(["World", "Sports", "Business", "Sci/Tech"])}}
        >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        ...     _ = f.write(json.dumps(line) + "\\n")
        >>> scores = read_choice_scores(f.name)
        >>> scores.loglikelihoods[0].tolist(), scores.continuations[0][1], int(scores.gold[0])
        ([-2.5, -0.5, -3.0, -4.0], ' Sports', 1)
    """
    return _choice_scores(_sample_lines(path, None, filter_name, choices=True))


def read_targets_and_choices(path: str, metric: str, *,
                             filter_name: str = "none") -> tuple[np.ndarray, np.ndarray, list[str | None], ChoiceScores]:
    """:func:`read_sample_targets` and :func:`read_choice_scores` of one file, read once."""
    chosen = _sample_lines(path, metric, filter_name, choices=True)
    return (np.array([row[0] for row in chosen], dtype=np.int64), np.array([row[1] for row in chosen], dtype=np.float64),
            [row[3] for row in chosen], _choice_scores(chosen))


def _choice_scores(chosen: list) -> ChoiceScores:
    return ChoiceScores(np.array([row[0] for row in chosen], dtype=np.int64), [row[4][0] for row in chosen],
                        [row[4][1] for row in chosen], np.array([row[4][2] for row in chosen], dtype=np.int64))


def read_samples(path: str, metric: str, *, filter_name: str = "none") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(doc_ids, values, gold_ll)`` from a samples JSONL file, sorted by ``doc_id``.

    ``values`` are the per-item ``metric`` values; ``gold_ll`` the gold answer's log-likelihood
    per item (:func:`gold_loglikelihood`; NaN for generation tasks).

    Only lines of filter ``filter_name`` are read when the file has several filters.

    Raises:
        AggregationError: naming the file and line, for a line that is not JSON (truncated, not
        UTF-8, nested absurdly deep), a missing or non-integer ``doc_id``, a missing metric value,
        or a repeated ``doc_id``.
    """
    chosen = _sample_lines(path, metric, filter_name)
    doc_ids = np.array([row[0] for row in chosen], dtype=np.int64)
    return doc_ids, np.array([row[1] for row in chosen], dtype=np.float64), np.array([row[2] for row in chosen], dtype=np.float64)


def read_sample_targets(path: str, metric: str, *, filter_name: str = "none") -> tuple[np.ndarray, np.ndarray, list[str | None]]:
    """``(doc_ids, values, targets)``: :func:`read_samples`' items and values with each item's gold
    ``target`` as text (``None`` where a line has none), e.g. a classification item's label."""
    chosen = _sample_lines(path, metric, filter_name)
    return (np.array([row[0] for row in chosen], dtype=np.int64), np.array([row[1] for row in chosen], dtype=np.float64),
            [row[3] for row in chosen])


def merge_targets(targets: dict[int, str | None], items: Sequence[int],
                  gold: Sequence[str | None]) -> tuple[int, str | None, str | None] | None:
    """Record each item's gold answer in ``targets``; the first item whose answer differs from the one
    already recorded, as ``(item, this answer, recorded answer)`` (samples of different data), else None.

        >>> seen = {}
        >>> merge_targets(seen, [0, 1], ["a", "b"]), merge_targets(seen, [1], ["c"])
        (None, (1, 'c', 'b'))
    """
    for item, target in zip(items, gold):
        if targets.setdefault(item, target) != target:
            return item, target, targets[item]
    return None


def _sample_lines(path: str, metric: str | None, filter_name: str, *,
                  choices: bool = False) -> list[tuple[int, float, float, str | None, tuple | None]]:
    """``(doc_id, value, gold_ll, target, choice)`` per line of ``filter_name``, sorted by ``doc_id``
    (checks of :func:`read_samples`; with ``metric`` None no value is read: NaN; ``choice`` is
    :func:`_choice_line`'s with ``choices``, else None)."""
    rows: dict[str, list[tuple[int, float, float, str | None, tuple | None]]] = {}
    try:
        with open(path, "rb") as handle:
            lines = handle.read().split(b"\n")
    except OSError as err:
        raise AggregationError(f"samples file {path}: cannot read ({err.strerror or err})") from None
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        where = f"samples file {path} line {lineno}"
        try:
            record = parse_json_line(raw)
        except BadJson as err:
            raise AggregationError(f"{where}: {err}") from None
        if not isinstance(record, dict) or "doc_id" not in record:
            raise AggregationError(f"{where}: no doc_id")
        doc_id = record["doc_id"]
        if isinstance(doc_id, bool) or not isinstance(doc_id, int):
            raise AggregationError(f"{where}: doc_id {doc_id!r} is not an integer")
        number = math.nan
        if metric is not None:
            value = record.get(metric)
            try:
                number = float(value) if not isinstance(value, (list, dict, str)) else math.nan
            except (TypeError, OverflowError):
                number = math.nan
            if not math.isfinite(number):
                raise AggregationError(f"{where}: no numeric {metric!r} value")
        rows.setdefault(str(record.get("filter", "none")), []).append(
            (doc_id, number, gold_loglikelihood(record), target_text(record.get("target")),
             choice_line(record) if choices else None))
    if not rows:
        raise AggregationError(f"samples file {path}: empty (no per-item line); rerun that variant to write it again")
    if filter_name in rows:
        chosen = rows[filter_name]
    elif len(rows) == 1:
        chosen = next(iter(rows.values()))
    else:
        raise AggregationError(f"samples file {path}: filters {sorted(rows)} and none is {filter_name!r}")
    chosen.sort(key=lambda row: row[0])
    if len({row[0] for row in chosen}) != len(chosen):
        raise AggregationError(f"samples file {path}: a doc_id appears more than once")
    return chosen


InstructionKey = tuple[str, str]  # (method, instruction)


@dataclass
class ItemMatrix:
    """Per-item values of every variant of one (model, task).

    Attributes:
        doc_ids: the test items (columns), sorted.
        values: ``rows x items`` array of per-item correctness.
        metric_rows: ``{metric: {(method, instruction): [row, ...]}}``; an instruction's metric is
            the mean over its rows of the row means (zero_shot: 1 row; few_shot / perturbed: one
            row per variant; worst_case: one derived row per demo seed).
        gold_ll: ``rows x items`` log-likelihoods of the gold answer (the variants' rows; NaN in
            derived rows), or ``None`` when some variant's samples have none (generation tasks).
    """

    model: str
    task: str
    doc_ids: np.ndarray
    values: np.ndarray
    metric_rows: dict[str, dict[InstructionKey, list[int]]] = field(default_factory=dict)
    gold_ll: np.ndarray | None = None

    def point(self, metric: str) -> dict[InstructionKey, float]:
        """Each instruction's value of ``metric`` on all items."""
        means = self.values.mean(axis=1)
        return {key: float(np.mean(means[rows])) for key, rows in self.metric_rows.get(metric, {}).items()}


def build_item_matrix(
    model: str,
    task: str,
    variants: Sequence[VariantResult],
    metric: str,
    issues: IssueLog,
    cache: dict | None = None,
) -> ItemMatrix | None:
    """Stack the per-item values of ``variants`` (one (model, task)); ``None`` with a warning if incomplete.

    Worst-case rows (HELM-style robustness, our definition): for each instruction and each demo
    seed ``s`` that has a clean ``few_shot`` variant and at least one ``perturbed`` variant with
    demo seed ``s`` (and no order seed), the derived per-item value is the minimum over the clean
    variant and all those perturbed variants -- an item counts as correct only if it is correct
    both clean and under every perturbation with the same demonstrations. The instruction's
    worst-case accuracy is the mean of these rows' accuracies over its demo seeds.
    """
    used = [v for v in variants if v.setting in ("zero_shot", "few_shot", "perturbed")]
    if not used:
        return None
    where = f"{model}/{task}"
    missing = [v for v in used if not v.samples_path]
    if missing:
        issues.warn(
            "no-samples",
            f"{where}: {len(missing)} of {len(used)} variants have no samples file (e.g. {missing[0].name}); "
            "no confidence intervals, significance tests or worst-case accuracy for this (model, task)",
            missing[0].file,
        )
        return None
    cache = {} if cache is None else cache
    rows: list[np.ndarray] = []
    lls: list[np.ndarray] = []
    ref: np.ndarray | None = None
    index: dict[tuple, int] = {}
    for v in used:
        try:
            key = (v.samples_path, metric)
            if key not in cache:
                cache[key] = read_samples(v.samples_path, metric)
            doc_ids, values, gold = cache[key]
        except AggregationError as err:
            issues.error("bad-samples", f"{where}: {err}; no item-level results for this (model, task)", v.file, v.name)
            return None
        expected = v.metrics.get(metric)
        if expected is not None and abs(float(values.mean()) - expected) > MEAN_TOLERANCE:
            issues.warn(
                "samples-mismatch",
                f"{where}: samples mean {values.mean():.6f} != results {metric} {expected:.6f} "
                f"({v.samples_path}: from another run?); no item-level results for this (model, task)",
                v.file,
                v.name,
            )
            return None
        if ref is None:
            ref = doc_ids
        elif len(doc_ids) != len(ref) or not np.array_equal(doc_ids, ref):
            issues.warn(
                "samples-docs",
                f"{where}: variants cover different doc_id sets ({len(ref)} vs {len(doc_ids)} items); "
                "no item-level results for this (model, task)",
                v.file,
                v.name,
            )
            return None
        index[v.identity()] = len(rows)
        rows.append(values)
        lls.append(gold)
    gold_ll = np.vstack(lls)
    matrix = ItemMatrix(model, task, ref, np.vstack(rows), gold_ll=gold_ll if np.isfinite(gold_ll).all() else None)
    metric_rows: dict[str, dict[InstructionKey, list[int]]] = {m: {} for m in ("zero_shot", "few_shot", "perturbed", "worst_case")}
    for v in used:
        metric_rows[v.setting].setdefault((v.method, v.instruction), []).append(index[v.identity()])
    # Derived worst-case rows.
    extra: list[np.ndarray] = []
    clean = {(v.method, v.instruction, v.demo_seed): v for v in used if v.setting == "few_shot"}
    perturbed: dict[tuple, list[VariantResult]] = {}
    for v in used:
        if v.setting == "perturbed" and v.order_seed is None:
            perturbed.setdefault((v.method, v.instruction, v.demo_seed), []).append(v)
    for key in sorted(perturbed, key=lambda k: (k[0], k[1], k[2] if k[2] is not None else -1)):
        if key not in clean:
            continue
        stack = [matrix.values[index[clean[key].identity()]]] + [matrix.values[index[p.identity()]] for p in perturbed[key]]
        metric_rows["worst_case"].setdefault(key[:2], []).append(len(rows) + len(extra))
        extra.append(np.min(np.vstack(stack), axis=0))
    if extra:
        matrix.values = np.vstack([matrix.values] + extra)
        if matrix.gold_ll is not None:
            matrix.gold_ll = np.vstack([matrix.gold_ll, np.full((len(extra), matrix.values.shape[1]), np.nan)])
    matrix.metric_rows = {m: r for m, r in metric_rows.items() if r}
    return matrix
