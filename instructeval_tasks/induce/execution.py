"""Execution accuracy of an instruction (Honovich et al. 2022; APE's score, Zhou et al. 2022).

Definition (Instruction Induction, Sec. 4): an instruction is executed by giving it, **without
demonstrations**, to a model together with held-out inputs; its execution accuracy is the fraction
of those inputs for which the model's output is correct. Here:

- the held-out inputs are a seeded slice of ``n`` rows of the task's **train** split
  (``induce.common.exec_slice_ids``; never the evaluation split, and disjoint from the
  demonstration sets that APE generates from);
- the prompt is the task's own zero-shot prompt with the instruction as its description
  (``instruction.lstrip() + "\\n\\n" + test block``), text fields truncated as configured;
- "correct" is the task's own scoring through the harness: for classification and multiple
  choice the original InstructEval rule (lowest mean per-token NLL, ``acc_per_token``; ``acc``,
  the summed log-likelihood rule, when no tokenizer is reachable), for generative QA HELM
  quasi-exact match (``quasi_exact_match``)::

      exec_acc(c) = (1/n) * sum_{x in slice} [prediction(c, x) == gold(x)]

Evaluation goes through ``lm_eval.simple_evaluate(model=lm, tasks=[...])``: one in-memory
``InstructEvalTask`` per instruction, each reading a temporary data directory whose ``train.jsonl``
and ``eval.jsonl`` hold only the slice's train rows.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import object_task_manager
from .common import InduceError, make_task, write_rows_dir
from ..specs import TaskSpec

EXEC_DEFINITION = (
    "execution accuracy (Honovich et al. 2022): the fraction of a held-out slice of TRAIN rows "
    "(seeded, class-balanced for classification, disjoint from any APE demonstration set) that the "
    "model answers correctly given the instruction alone, zero-shot, in the task's own prompt "
    "(instruction.lstrip() + '\\n\\n' + test block) and scored by the task's own rule "
    "(acc_per_token = lowest mean per-token NLL for classification and multiple choice, acc when no "
    "tokenizer is reachable; quasi_exact_match for generative QA; for the Instruction Induction tasks "
    "execution_accuracy, the original's per-task metric over every correct answer, on raw/induce rows)"
)
METRIC_ORDER = ("acc_per_token", "acc", "quasi_exact_match", "execution_accuracy")


def execution_accuracy(
    lm: Any,
    spec: TaskSpec,
    instructions: Sequence[tuple[str, str]],
    rows: Sequence[Mapping[str, Any]],
    *,
    truncate_words: int | None,
    model_meta: Mapping[str, Any] | None = None,
    workdir: str | Path | None = None,
) -> tuple[list[float], str]:
    """Execution accuracy of each ``(method, text)`` of ``instructions`` on the train ``rows``.

    Returns ``(scores, metric)``: scores in the order of ``instructions`` and the metric used.
    """
    import datasets
    import lm_eval

    if not instructions:
        return [], ""
    if not rows:
        raise InduceError(f"{spec.task_name}: execution accuracy needs at least one held-out row")
    datasets.disable_progress_bars()
    with tempfile.TemporaryDirectory(prefix="instructeval-exec-", dir=workdir) as tmp:
        data_dir = write_rows_dir(Path(tmp), spec, rows)
        names = [f"{spec.task_name}__induce_exec_{i:04d}" for i in range(len(instructions))]
        task_objs = [
            make_task(
                spec,
                data_dir=data_dir,
                name=name,
                instruction=text,
                method=method,
                truncate_words=truncate_words,
                model_meta=model_meta,
            )
            for name, (method, text) in zip(names, instructions)
        ]
        results = lm_eval.simple_evaluate(
            model=lm, tasks=task_objs, log_samples=False, bootstrap_iters=0, verbosity="ERROR",
            task_manager=object_task_manager(),
        )
    table = results["results"]
    scores: list[float] = []
    metric = ""
    for name in names:
        found = table.get(name, {})
        key = next((m for m in METRIC_ORDER if f"{m},none" in found), None)
        if key is None:
            raise InduceError(f"{name}: no accuracy metric in the results ({sorted(found)})")
        if metric and key != metric:
            raise InduceError(f"{spec.task_name}: instructions were scored with different metrics ({metric}, {key})")
        metric = key
        scores.append(float(found[f"{key},none"]))
    return scores, metric


# ------------------------------------------------------------------------------ bank writer

def induce_execution_accuracy(lm, job) -> tuple[str, str]:
    """The execution accuracy of every entry of ``job``'s pool: ``(JSON text, one-line summary)``."""
    import json

    from .common import exec_slice_ids, model_meta, rounded
    from .provenance import provenance_head

    spec, rows, source, label, settings = job.spec, job.rows, job.source, job.label, job.settings
    settings_fp, model, args_dict, pool = job.settings_fp, job.model, job.args_dict, job.pool

    exec_ids = exec_slice_ids(spec, rows, settings.n_exec, settings.exec_seed)
    scores, metric = execution_accuracy(
        lm, spec, [(e.method, e.text) for e in pool], [rows[i] for i in exec_ids],
        truncate_words=settings.truncate_words, model_meta=model_meta(args_dict),
    )
    data = provenance_head(
        "execution_accuracy", "computed by `instructeval induce --method execution_accuracy`", EXEC_DEFINITION,
        model=model, args_dict=args_dict, label=label, source=source, rows=rows, settings=settings, settings_fp=settings_fp,
    )
    data["task"] = spec.name
    data["metric"] = metric
    data["exec_slice"] = {
        "rng": f"random.Random('instructeval-induce:exec-slice:{spec.name}:{settings.exec_seed}')"
               + (", class-balanced" if spec.balanced else ", uniform"),
        "train_indices": exec_ids,
    }
    data["entries"] = [
        {**entry.record(), "execution_accuracy": rounded(score)} for entry, score in zip(pool, scores)
    ]
    best = max(zip(pool, scores), key=lambda pair: pair[1])
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n", f"{len(pool)} instructions; best {metric}={best[1]:.3f}: {best[0].text[:60]!r}"
