"""``run_induce``: compute automatic-instruction banks for one model, one model load, resumable.

Methods (see each module for the definition):

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

import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable

from .common import (
    DEFAULT_CANDIDATES,
    DEFAULT_TRUNCATE_WORDS,
    INDUCE_VERSION,
    InduceError,
    bank_path,
    candidate_pool,
    check_bank_text,
    demo_set_ids,
    exec_slice_ids,
    finished_state,
    fingerprint,
    answer_text,
    input_text,
    load_train_rows,
    make_task,
    model_meta,
    perplexity_input_ids,
    rounded,
    write_rows_dir,
)
from ..options import resolve_data_dir
from .provenance import provenance_head
from ..specs import TaskSpec, get_spec, resolve_task_names

METHODS = ("low_perplexity", "ape", "execution_accuracy", "rlprompt")


@dataclass(frozen=True)
class InduceSettings:
    """The knobs of the induce methods (each method reads its own; all are recorded)."""

    k: int = 5                       # instructions kept per (model, task)
    candidates: tuple[str, ...] = DEFAULT_CANDIDATES  # low_perplexity / execution_accuracy pool
    n_inputs: int = 16               # low_perplexity: train inputs per candidate
    input_seed: int = 0
    truncate_words: int | None = DEFAULT_TRUNCATE_WORDS  # text fields cut to N words + "..." (None: no cut)
    n_demo_sets: int = 4             # ape: demonstration sets
    n_demos: int = 5                 # ape: pairs per set (the meta-prompt's "five")
    demo_seed: int = 0
    greedy: bool = True              # ape: one greedy completion per set
    n_samples: int = 2               # ape: sampled completions per set
    temperature: float = 0.7
    max_gen_toks: int = 50
    sample_seed: int = 0
    max_chars: int = 300             # ape: longer cleaned candidates are dropped
    n_exec: int = 32                 # ape / execution_accuracy: held-out train rows
    exec_seed: int = 0
    steps: int = 50                  # rlprompt: training steps (RLPrompt: 12000; CPU scale here)
    prompt_batch: int = 4            # rlprompt: prompts sampled per step (--batch-size)
    inputs_per_step: int = 4         # rlprompt: train rows every prompt of a step is scored on
    prompt_tokens: int = 5           # rlprompt: tokens per prompt
    seed: int = 0                    # rlprompt: MLP init, sampling and input draws
    learning_rate: float = 5e-5      # rlprompt: Adam (RLPrompt's few-shot classification config)
    top_k: int = 256                 # rlprompt: top-k sampling of prompt tokens
    finalists: int = 8               # rlprompt: best sampled prompts re-scored on the held-out slice
    policy_model: str | None = None  # rlprompt: policy LM (default: the evaluated model)
    checkpoint_every: int = 10       # rlprompt: steps between checkpoints (not a result setting)

    def override(self, **changes: Any) -> "InduceSettings":
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise ValueError(f"unknown induce setting(s) {sorted(unknown)}; known: {sorted(known)}")
        changes = {key: value for key, value in changes.items() if value is not None}
        if isinstance(changes.get("candidates"), str):
            changes["candidates"] = tuple(c.strip() for c in changes["candidates"].split(",") if c.strip())
        elif "candidates" in changes:
            changes["candidates"] = tuple(changes["candidates"])
        out = replace(self, **changes)
        for name in ("k", "n_inputs", "n_demo_sets", "n_demos", "max_gen_toks", "n_exec", "max_chars", "steps",
                     "prompt_batch", "inputs_per_step", "prompt_tokens", "top_k", "finalists", "checkpoint_every"):
            if getattr(out, name) < 1:
                raise ValueError(f"induce setting {name} must be >= 1, got {getattr(out, name)}")
        if out.n_samples < 0 or (out.n_samples == 0 and not out.greedy):
            raise ValueError("ape needs a greedy completion or n_samples >= 1")
        if out.n_samples and out.temperature <= 0:
            raise ValueError("sampled completions need temperature > 0")
        return out

    def for_method(self, method: str) -> dict[str, Any]:
        """The settings that ``method`` reads (they enter its fingerprint)."""
        names = {
            "low_perplexity": ("k", "candidates", "n_inputs", "input_seed", "truncate_words"),
            "ape": ("k", "truncate_words", "n_demo_sets", "n_demos", "demo_seed", "greedy", "n_samples",
                    "temperature", "max_gen_toks", "sample_seed", "max_chars", "n_exec", "exec_seed"),
            "execution_accuracy": ("candidates", "truncate_words", "n_exec", "exec_seed"),
            "rlprompt": ("k", "truncate_words", "n_exec", "exec_seed", "steps", "prompt_batch", "inputs_per_step",
                         "prompt_tokens", "seed", "learning_rate", "top_k", "finalists", "policy_model"),
        }[method]
        values = asdict(self)
        return {name: list(values[name]) if isinstance(values[name], tuple) else values[name] for name in names}


@dataclass
class InduceReport:
    """What a run did: the files written and the tasks skipped as already done."""

    method: str
    model_label: str
    written: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)
    seconds: float = 0.0


def _json_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


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

    start = time.monotonic()
    if method not in METHODS:
        raise ValueError(f"unknown induce method {method!r}; known: {', '.join(METHODS)}")
    echo = echo or (lambda line: print(line, file=sys.stderr))
    settings = (settings or InduceSettings()).override(**knobs)
    task_names = resolve_task_names(tasks)  # the nine, ii_<task> ids, or the groups all / instructeval_ii
    if method == "rlprompt":
        generative = [t for t in task_names if get_spec(t).kind in ("gqa", "ii")]
        if generative:
            raise InduceError(
                f"--method rlprompt needs a classification or multiple-choice task; {', '.join(generative)} "
                f"{'is' if len(generative) == 1 else 'are'} generative (the RLPrompt reward scores fixed choices, and the "
                f"paper has no RLPrompt instructions for NQ-Open/TriviaQA): drop {'it' if len(generative) == 1 else 'them'} from --tasks"
            )
    args_dict = parse_model_args(model_args)
    label = model_label or model_label_from_args(model, args_dict)
    data_dir = resolve_data_dir(data_dir)
    data_dir = str(Path(data_dir).expanduser().resolve()) if data_dir else None
    report = InduceReport(method, label)
    suffix = ".json" if method == "execution_accuracy" else ".yaml"
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
            if method in ("low_perplexity", "execution_accuracy"):
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
            ctx = dict(
                spec=spec, rows=rows, source=source, label=label, settings=task_settings, settings_fp=settings_fp,
                model=model, args_dict=args_dict, pool=pool,
            )
            if method == "low_perplexity":
                text, summary = _low_perplexity(get_lm(), **ctx)
            elif method == "ape":
                text, summary = _ape(get_lm(), **ctx)
            elif method == "rlprompt":
                from .rlprompt_bank import induce_rlprompt

                text, summary = induce_rlprompt(get_lm(), **ctx, path=path, overwrite=overwrite, progress=progress,
                                                echo=lambda line: bar.write(line, file=sys.stderr))
            else:
                text, summary = _exec_accuracy(get_lm(), **ctx)
            if suffix == ".yaml":
                problems = check_bank_text(path, text)
                if problems:
                    raise InduceError("the induced bank does not validate:\n" + "\n".join(problems))
            atomic_write_text(path, text)
            _readable(path)
            if method == "rlprompt":
                from .rlprompt_bank import discard_checkpoint

                discard_checkpoint(path)
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


# ------------------------------------------------------------------------------------------ methods

def _low_perplexity(lm, *, spec: TaskSpec, rows, source, label, settings: InduceSettings, settings_fp, model, args_dict, pool):
    from instructeval_banks.writer import dump_bank

    from .perplexity import PPL_DEFINITION, score_perplexity, select_lowest

    ids = perplexity_input_ids(spec, rows, settings.n_inputs, settings.input_seed)
    with tempfile.TemporaryDirectory(prefix="instructeval-ppl-") as tmp:
        data = write_rows_dir(Path(tmp), spec, [rows[i] for i in ids])
        view = make_task(spec, data_dir=data, name=f"{spec.task_name}__induce_ppl_view",
                         truncate_words=settings.truncate_words, model_meta=model_meta(args_dict))
        blocks = [view.doc_to_text(doc) for doc in view.eval_docs]
    scores = score_perplexity(lm, pool, blocks)
    best = select_lowest(scores, settings.k)
    rank = {id(s): r for r, s in enumerate(best)}
    entries = [
        {
            "id": f"low_perplexity-{spec.name}-{label}-{r}",
            "text": s.entry.text,
            "perplexity": rounded(s.perplexity),
            "log_perplexity": rounded(s.log_perplexity),
            "source_method": s.entry.method,
            "source_id": s.entry.id,
        }
        for r, s in enumerate(best)
    ]
    provenance = provenance_head(
        "low_perplexity",
        "computed by `instructeval induce --method low_perplexity`: SPELL (Gonen et al. 2022, 'Demystifying "
        "Prompts in Language Models via Perplexity Estimation'), the lowest-perplexity candidates for this model",
        PPL_DEFINITION, model=model, args_dict=args_dict, label=label, source=source, rows=rows,
        settings=settings, settings_fp=settings_fp,
    )
    provenance["inputs"] = {
        "rng": f"random.Random('instructeval-induce:ppl-inputs:{spec.name}:{settings.input_seed}')"
               + (", class-balanced" if spec.balanced else ", uniform"),
        "train_indices": ids,
        "tokens_per_text": {"min": min(min(s.tokens) for s in scores), "max": max(max(s.tokens) for s in scores)},
    }
    provenance["candidate_pool"] = [
        {**s.entry.record(), "perplexity": rounded(s.perplexity), "log_perplexity": rounded(s.log_perplexity),
         "selected_rank": rank.get(id(s))}
        for s in scores
    ]
    text = dump_bank(
        method="low_perplexity", tasks=[spec.name], model=label, provenance=provenance, entries=entries,
        description=f"The {len(entries)} lowest-perplexity instructions for {spec.title} under {label}, lowest first.",
        comment=f"Low Perplexity (SPELL) instructions for {spec.name}, model {label}. Written by `instructeval induce`;"
                f" regenerate rather than edit.",
    )
    top = best[0]
    return text, f"{len(pool)} candidates x {len(ids)} inputs; lowest ppl {top.perplexity:.2f}: {top.entry.text[:60]!r}"


def _ape(lm, *, spec: TaskSpec, rows, source, label, settings: InduceSettings, settings_fp, model, args_dict, pool):
    from collections import Counter

    from instructeval_banks.writer import dump_bank

    from .ape import (
        META_PROMPT_TAIL, PAIR_TEMPLATE, apply_drops, gen_kwargs, generate_candidates, meta_prompt_head,
        render_meta_prompt, select_top,
    )
    from .execution import EXEC_DEFINITION, execution_accuracy
    from ..sampling import truncate_fields

    exec_ids = exec_slice_ids(spec, rows, settings.n_exec, settings.exec_seed)
    sets = demo_set_ids(spec, rows, n_sets=settings.n_demo_sets, n_demos=settings.n_demos,
                        seed=settings.demo_seed, exclude=exec_ids)
    demo_rows = sorted({i for s in sets for i in s})
    with tempfile.TemporaryDirectory(prefix="instructeval-ape-") as tmp:
        data = write_rows_dir(Path(tmp), spec, [rows[i] for i in demo_rows])
        view = make_task(spec, data_dir=data, name=f"{spec.task_name}__induce_ape_view", model_meta=model_meta(args_dict))
        prompts = []
        for ids in sets:
            pairs = []
            for i in ids:
                doc = truncate_fields(rows[i], spec.text_fields, settings.truncate_words)
                pairs.append((input_text(view, spec, doc), answer_text(view, doc)))
            prompts.append(render_meta_prompt(pairs))
    candidates = generate_candidates(
        lm, prompts, n_samples=settings.n_samples, temperature=settings.temperature,
        max_gen_toks=settings.max_gen_toks, sample_seed=settings.sample_seed, greedy=settings.greedy,
    )
    kept = apply_drops(candidates, settings.max_chars)
    if not kept:
        raise InduceError(
            f"{spec.task_name}: all {len(candidates)} APE candidates were dropped "
            f"({dict(Counter(c.dropped for c in candidates))}); try more samples or another model"
        )
    scores, metric = execution_accuracy(
        lm, spec, [("ape", c.text) for c in kept], [rows[i] for i in exec_ids],
        truncate_words=settings.truncate_words, model_meta=model_meta(args_dict),
    )
    for cand, score in zip(kept, scores):
        cand.execution_accuracy = score
    best = select_top(kept, settings.k)
    entries = [
        {
            "id": f"ape-{spec.name}-{label}-{r}",
            "text": c.text,
            "execution_accuracy": rounded(c.execution_accuracy),
            "demo_set": c.demo_set,
            "decoding": c.decoding,
            "sample": c.sample,
        }
        for r, c in enumerate(best)
    ]
    provenance = provenance_head(
        "ape",
        "computed by `instructeval induce --method ape`: APE (Zhou et al. 2022) with the Instruction Induction "
        "meta-prompt (Honovich et al. 2022); candidates generated by this model from train demonstrations and "
        "ranked by execution accuracy on held-out train rows",
        {
            "meta_prompt": (f"{meta_prompt_head(settings.n_demos)}\n\n{PAIR_TEMPLATE.format(input='<x_1>', output='<y_1>')}"
                            f"\n\n...\n\n{META_PROMPT_TAIL}"),
            "pair": "input = the task's test block without its answer-cue line (one text field: without its label); "
                    "output = the gold answer as a demonstration shows it",
            "cleanup": "see instructeval_tasks/induce/ape.py (Honovich et al.'s normalisation: leading ':', first "
                       "line, frame words 'probably'/'most likely'/'to' stripped, whole quoted instruction, quotes "
                       "and whitespace); dropped: empty, template_syntax, too_long, duplicate",
            "execution_accuracy": EXEC_DEFINITION,
            "selection": f"the {settings.k} kept candidates with the highest execution accuracy (ties: generation order)",
        },
        model=model, args_dict=args_dict, label=label, source=source, rows=rows, settings=settings, settings_fp=settings_fp,
    )
    provenance["gen_kwargs"] = {
        "greedy": gen_kwargs(sampled=False, temperature=0.0, max_gen_toks=settings.max_gen_toks),
        "sampled": gen_kwargs(sampled=True, temperature=settings.temperature, max_gen_toks=settings.max_gen_toks),
        "sample_rng": f"torch.manual_seed({settings.sample_seed}) before the sampled batch",
    }
    provenance["demo_sets"] = [
        {"demo_set": s, "rng": f"random.Random('instructeval-induce:ape-demos:{spec.name}:{settings.demo_seed}:{s}')",
         "train_indices": ids}
        for s, ids in enumerate(sets)
    ]
    provenance["exec_slice"] = {
        "rng": f"random.Random('instructeval-induce:exec-slice:{spec.name}:{settings.exec_seed}')"
               + (", class-balanced" if spec.balanced else ", uniform"),
        "train_indices": exec_ids,
        "metric": metric,
    }
    provenance["dropped"] = dict(sorted(Counter(c.dropped for c in candidates if c.dropped).items()))
    provenance["candidates"] = [c.record() for c in candidates]
    text = dump_bank(
        method="ape", tasks=[spec.name], model=label, provenance=provenance, entries=entries,
        description=f"The {len(entries)} APE instructions with the highest execution accuracy for {spec.title} "
                    f"under {label}, best first.",
        comment=f"APE instructions for {spec.name}, model {label}. Written by `instructeval induce`; regenerate rather than edit.",
    )
    top = best[0]
    return text, (f"{len(candidates)} generated, {len(kept)} kept; best {metric}={top.execution_accuracy:.3f}: "
                  f"{top.text[:60]!r}")


def _exec_accuracy(lm, *, spec: TaskSpec, rows, source, label, settings: InduceSettings, settings_fp, model, args_dict, pool):
    from .execution import EXEC_DEFINITION, execution_accuracy

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
    return _json_text(data), f"{len(pool)} instructions; best {metric}={best[1]:.3f}: {best[0].text[:60]!r}"
