"""``run_induce``: compute automatic-instruction banks for one model, one model load, resumable.

Methods (the inducers of ``induce.registry``; each module defines its method and writes its file):

- ``low_perplexity`` (``induce.perplexity``, SPELL): the ``k`` candidates of a pool with the lowest
  perplexity on train inputs -> ``<output>/low_perplexity/<model_label>/<task>.yaml``;
- ``ape`` (``induce.ape``, APE with the Instruction Induction prompt): generated candidates, the
  ``k`` best by execution accuracy on a held-out train slice -> ``<output>/ape/<model_label>/<task>.yaml``;
- ``execution_accuracy`` (``induce.execution``): the execution accuracy of every entry of a candidate
  pool (any bank method) -> ``<output>/execution_accuracy/<model_label>/<task>.json``;
- ``rlprompt`` (``induce.rlprompt_train``, RLPrompt): a policy trained on this model's gap reward over
  train rows, the ``k`` best prompts on a held-out train slice -> ``<output>/rlprompt/<model_label>/<task>.yaml``
  (classification and multiple choice only; resumable from ``<task>.checkpoint.pt``).

Resuming: each task's file is written atomically (``sweep.atomic_files.atomic_write_text``) once the task
is finished; a rerun skips tasks whose file is valid and was computed with the same settings
(``provenance.settings_fingerprint``), recomputes missing or invalid ones, and refuses a file
computed with other settings unless ``overwrite``. Files hold no date: a rerun of the same
computation (same model, device and batch size) writes the same bytes.

The banks are used like any other: ``instructeval run --bank-dir <output> --methods
low_perplexity,ape`` layers ``<output>`` over the shipped banks and picks the bank of its
``--model-label`` (default: the ``pretrained`` folder name, the same default as here).

Example:
    >>> run_induce(method="low_perplexity", model="hf", model_args="pretrained=models/smollm2",
    ...            tasks="agnews", data_dir="../shared/data", output="out/induced")   # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from ..options import resolve_data_dir
from ..specs import get_spec, resolve_task_names
from .common import INDUCE_VERSION, InduceError, bank_path, candidate_pool, check_bank_text, finished_state, fingerprint, load_train_rows
from .registry import INDUCERS, get_inducer
from .settings import InduceJob, InduceSettings

__all__ = ["INDUCERS", "InduceReport", "InduceSettings", "run_induce"]


@dataclass
class InduceReport:
    """What a run did: the files written and the tasks skipped as already done."""

    method: str
    model_label: str
    written: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)
    seconds: float = 0.0


def run_induce(
    *,
    method: str,
    model: str,
    model_args: str | dict | None,
    tasks: list[str] | str,
    output: str | Path,
    data_dir: str | None = None,
    bank_dir: str | list[str] | None = None,
    model_label: str | None = None,
    settings: InduceSettings | None = None,
    batch_size: int | str = 8,
    max_batch_size: int | None = None,
    device: str | None = None,
    lm: Any = None,
    overwrite: bool = False,
    progress: bool = True,
    echo: Callable[[str], None] | None = None,
    **knobs: Any,
) -> InduceReport:
    """Compute (or resume) ``method`` for every task; see the module docstring."""
    from tqdm.auto import tqdm

    from ..sweep.chunk import load_model, parse_model_args
    from ..sweep.atomic_files import atomic_write_text
    from ..sweep.store import model_label_from_args
    from ..sweep.validate import check_pretrained

    start = time.monotonic()
    inducer = get_inducer(method)
    echo = echo or (lambda line: print(line, file=sys.stderr))
    settings = (settings or InduceSettings()).override(**knobs)
    task_names = resolve_task_names(tasks)  # the nine, ii_<task> ids, or the groups all / instructeval_ii
    header_tasks = [t for t in task_names if get_spec(t).kind == "ni"]
    if header_tasks:  # their instruction is the task file's own header (instruction_encoding)
        raise InduceError(f"--tasks {','.join(header_tasks)}: instructeval induce does not take the Natural Instructions "
                          f"tasks; drop them from --tasks")
    refused = [t for t in task_names if get_spec(t).kind not in inducer.kinds]
    if refused:
        raise InduceError(
            f"--method {method} needs a classification or multiple-choice task; {', '.join(refused)} "
            f"{'is' if len(refused) == 1 else 'are'} generative ({inducer.kinds_reason}): "
            f"drop {'it' if len(refused) == 1 else 'them'} from --tasks"
        )
    args_dict = parse_model_args(model_args)
    if lm is None:
        check_pretrained(args_dict)  # a typo'd model folder, before the output folder and the model load
    label = model_label or model_label_from_args(model, args_dict)
    data_dir = resolve_data_dir(data_dir)
    data_dir = str(Path(data_dir).expanduser().resolve()) if data_dir else None
    report = InduceReport(method, label)
    suffix = inducer.suffix
    common = {
        "method": method,
        "model": model,
        "model_args": args_dict,
        "model_label": label,
        "settings": settings.for_method(method),
        "induce_version": INDUCE_VERSION,
    }

    state: dict[str, Any] = {"lm": lm}

    def get_lm():
        if state["lm"] is None:
            echo(f"loading model {model} ({args_dict}) ...")
            state["lm"] = load_model(model, args_dict, batch_size=batch_size, max_batch_size=max_batch_size, device=device)
        return state["lm"]

    bar = tqdm(total=len(task_names), unit="task", desc=f"induce {method}", disable=not progress, file=sys.stderr)
    try:
        for task in task_names:
            spec = get_spec(task)
            # Instruction Induction inputs are short and their tasks refuse truncate_words: never cut.
            task_settings = replace(settings, truncate_words=None) if spec.kind == "ii" else settings
            rows, source = load_train_rows(spec, data_dir)
            pool = None
            identity = {**common, "settings": task_settings.for_method(method), "task": spec.name,
                        "data_source": source, "train_rows": len(rows)}
            if inducer.uses_pool:
                pool = candidate_pool(spec.name, settings.candidates, bank_dir=bank_dir, model_label=label)
                identity["candidate_pool"] = [(e.method, e.id, e.record()["sha"]) for e in pool]
            settings_fp = fingerprint(identity)
            path = bank_path(output, method, label, spec.name, suffix)
            status = finished_state(path, settings_fp)
            if status == "done":
                report.skipped.append(path)
                bar.write(f"skip {spec.name}: {path} is done", file=sys.stderr)
                bar.update(1)
                continue
            if status == "stale" and not overwrite:
                raise InduceError(
                    f"{path} was computed with other settings (model, data, candidates or knobs); use another "
                    f"--output, delete the file, or pass --overwrite"
                )
            task_start = time.monotonic()
            job = InduceJob(spec=spec, rows=rows, source=source, label=label, settings=task_settings,
                            settings_fp=settings_fp, model=model, args_dict=args_dict, pool=pool, path=path,
                            overwrite=overwrite, progress=progress, echo=lambda line: bar.write(line, file=sys.stderr))
            text, summary = inducer.run(get_lm(), job)
            if suffix == ".yaml":
                problems = check_bank_text(path, text)
                if problems:
                    raise InduceError("the induced bank does not validate:\n" + "\n".join(problems))
            atomic_write_text(path, text)
            _readable(path)
            inducer.finished(path)
            report.written.append(path)
            bar.write(f"done {spec.name}: {summary} ({time.monotonic() - task_start:.0f} s) -> {path}", file=sys.stderr)
            bar.update(1)
    finally:
        bar.close()
    report.seconds = time.monotonic() - start
    echo(f"induce {method}: {len(report.written)} written, {len(report.skipped)} skipped (done) in {report.seconds:.0f} s")
    return report


def _readable(path: Path) -> None:
    """Give a written bank the permissions of an ordinary file (``mkstemp`` creates it 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(path, 0o666 & ~umask)
    except OSError:
        pass
