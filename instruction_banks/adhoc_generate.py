"""Generate an ad hoc instruction pool by paraphrasing seed instructions with any harness model.

The paper's "Ad hoc" instructions were ChatGPT paraphrases of PromptSource instructions; the
original code ships only 5 of them per task. This module rebuilds such a pool with a generation
model of lm-evaluation-harness (``lm.generate_until``)::

    python -m instructeval_banks.adhoc_generate --model hf --model_args pretrained=Qwen/Qwen2.5-7B-Instruct \\
        --task agnews --n 40 --out /tmp/adhoc_agnews.yaml

Procedure:

1. **Seeds**: the task's PromptSource bank (``--seed-method``, default ``promptsource``) or
   ``--seed`` strings.
2. **Requests**: one ``generate_until`` request per (seed, meta-prompt, sample) in that order; the
   meta-prompts (:data:`META_PROMPTS`, e.g. "Paraphrase the following instruction ...") differ, so a
   greedy model still yields several candidates per seed. ``gen_kwargs`` default to greedy
   decoding, ``until: ["\\n"]``, 64 new tokens.
3. **Cleaning**: the first non-empty line of the completion, without list markers ("1.", "-"),
   a leading "Paraphrase:"-style label and surrounding quotes; whitespace collapsed.
4. **Validation** (rejections are counted per reason and recorded): length within
   ``[min_chars, max_chars]``; no template placeholders (``{{``, ``{%``, ``{#``, ``{field}``,
   ``[field]``); not the same as a seed; not a duplicate of an accepted candidate (both compared
   case- and whitespace-insensitively).
5. **Output**: the first ``n`` accepted candidates, in request order, as a bank file with
   ``method`` (default ``adhoc``), ids ``<method>-<task>-NN`` and provenance naming the model, its
   arguments, the seeds, the meta-prompts, the generation parameters and the rejection counts.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .schema import TEMPLATE_SYNTAX, normalize_text
from .writer import dump_bank

META_PROMPTS: tuple[str, ...] = (
    "Paraphrase the following instruction. Keep its meaning and write it as one sentence.\n\n"
    "Instruction: {seed}\nParaphrase:",
    "Rewrite this instruction for a {task_title} task in your own words, as a single sentence.\n\n"
    "Original: {seed}\nRewritten:",
    "An annotator working on {task_title} was given this instruction: \"{seed}\"\n"
    "Write a different instruction that asks for exactly the same thing:",
    "Reword the following task instruction so that it uses different words but means the same.\n\n"
    "Instruction: {seed}\nNew instruction:",
)
DEFAULT_GEN_KWARGS: dict[str, Any] = {"until": ["\n"], "max_gen_toks": 64, "do_sample": False}
MIN_CHARS = 12
MAX_CHARS = 300

_LIST_MARKER = re.compile(r"^(?:[-*•]\s+|\d+[.)]\s+|\(\w\)\s+)")
_LABEL = re.compile(r"^(?:paraphrase|paraphrased instruction|rewritten|new instruction|instruction|answer)\s*:\s*", re.I)
_QUOTES = "\"'“”‘’`"
_PLACEHOLDER = re.compile(r"\{[A-Za-z_][\w.]*\}|\[[A-Z_]{2,}\]|<[a-z_]+>")


@dataclass
class Candidate:
    request: int
    seed: str
    meta_prompt: int
    raw: str
    text: str
    rejected: str | None = None


@dataclass
class GenerationResult:
    task: str
    accepted: list[str]
    candidates: list[Candidate]
    seeds: list[str]
    meta_prompts: list[str]
    gen_kwargs: dict[str, Any]
    requests: int

    @property
    def rejections(self) -> dict[str, int]:
        counts = Counter(c.rejected for c in self.candidates if c.rejected)
        return dict(sorted(counts.items()))


def clean_candidate(raw: str) -> str:
    """Step 3: the paraphrase inside a raw completion."""
    line = next((part.strip() for part in str(raw).splitlines() if part.strip()), "")
    line = _LIST_MARKER.sub("", line)
    line = _LABEL.sub("", line)
    line = line.strip()
    if len(line) >= 2 and line[0] in _QUOTES and line[-1] in _QUOTES:
        line = line[1:-1].strip()
    return " ".join(line.split())


def rejection_reason(
    text: str, seeds: Sequence[str], accepted: Sequence[str], min_chars: int = MIN_CHARS, max_chars: int = MAX_CHARS
) -> str | None:
    """Step 4: why ``text`` is not a usable paraphrase (``None``: it is)."""
    if len(text) < min_chars:
        return "too_short"
    if len(text) > max_chars:
        return "too_long"
    if any(token in text for token in TEMPLATE_SYNTAX) or _PLACEHOLDER.search(text):
        return "placeholder"
    key = normalize_text(text)
    if key in {normalize_text(s) for s in seeds}:
        return "same_as_seed"
    if key in {normalize_text(a) for a in accepted}:
        return "duplicate"
    return None


def build_requests(
    seeds: Sequence[str],
    task_title: str,
    meta_prompts: Sequence[str] = META_PROMPTS,
    samples_per_prompt: int = 1,
    gen_kwargs: Mapping[str, Any] | None = None,
) -> list[Any]:
    """Step 2: ``lm_eval`` generation requests, one per (seed, meta-prompt, sample)."""
    from lm_eval.api.instance import Instance

    kwargs = dict(DEFAULT_GEN_KWARGS if gen_kwargs is None else gen_kwargs)
    requests = []
    for seed in seeds:
        for m, meta in enumerate(meta_prompts):
            context = meta.format(seed=seed.strip(), task_title=task_title)
            for sample in range(samples_per_prompt):
                requests.append(
                    Instance(
                        request_type="generate_until",
                        doc={"seed": seed, "meta_prompt": m, "sample": sample},
                        arguments=(context, dict(kwargs)),
                        idx=len(requests),
                        metadata=("instructeval_adhoc_generate", len(requests), 1),
                    )
                )
    return requests


def generate_pool(
    lm: Any,
    seeds: Sequence[str],
    *,
    task: str,
    n: int = 40,
    task_title: str | None = None,
    meta_prompts: Sequence[str] = META_PROMPTS,
    samples_per_prompt: int = 1,
    gen_kwargs: Mapping[str, Any] | None = None,
    min_chars: int = MIN_CHARS,
    max_chars: int = MAX_CHARS,
) -> GenerationResult:
    """Paraphrase ``seeds`` with ``lm.generate_until`` and keep the first ``n`` valid candidates."""
    if not seeds:
        raise ValueError("generate_pool: no seed instructions")
    if task_title is None:
        from instructeval_tasks.specs import TASK_SPECS

        task_title = TASK_SPECS[task].title if task in TASK_SPECS else task
    kwargs = dict(DEFAULT_GEN_KWARGS if gen_kwargs is None else gen_kwargs)
    requests = build_requests(seeds, task_title, meta_prompts, samples_per_prompt, kwargs)
    outputs = lm.generate_until(requests)
    if len(outputs) != len(requests):
        raise RuntimeError(f"generate_until returned {len(outputs)} outputs for {len(requests)} requests")
    accepted: list[str] = []
    candidates: list[Candidate] = []
    for request, raw in zip(requests, outputs):
        text = clean_candidate(raw)
        reason = rejection_reason(text, seeds, accepted, min_chars, max_chars)
        if reason is None and len(accepted) >= n:
            reason = "over_n"
        candidates.append(Candidate(request.idx, request.doc["seed"], request.doc["meta_prompt"], str(raw), text, reason))
        if reason is None:
            accepted.append(text)
    return GenerationResult(task, accepted, candidates, list(seeds), list(meta_prompts), kwargs, len(requests))


def bank_file_text(
    result: GenerationResult,
    *,
    model: str,
    model_args: str = "",
    method: str = "adhoc",
    seed_source: str = "",
    command: str = "",
) -> str:
    """Step 5: the bank file of a generation run (raises ``ValueError`` when nothing was accepted)."""
    if not result.accepted:
        raise ValueError(
            f"no valid paraphrase for {result.task} out of {result.requests} requests "
            f"(rejections: {result.rejections}); try another model or more samples"
        )
    provenance = {
        "source": f"generated by instructeval_banks.adhoc_generate with model {model!r} paraphrasing seed instructions",
        "model": model,
        "model_args": model_args,
        "seed_source": seed_source,
        "seeds": result.seeds,
        "meta_prompts": result.meta_prompts,
        "gen_kwargs": result.gen_kwargs,
        "requests": result.requests,
        "accepted": len(result.accepted),
        "rejections": result.rejections,
    }
    entries = [{"id": f"{method}-{result.task}-{i:02d}", "text": text} for i, text in enumerate(result.accepted)]
    comment = f"{method} instructions for {result.task}, generated by paraphrasing seed instructions."
    if command:
        comment += f"\nCommand: {command}"
    return dump_bank(method=method, tasks=[result.task], provenance=provenance, entries=entries, comment=comment)


def _seeds(args: argparse.Namespace) -> tuple[list[str], str]:
    if args.seed:
        return list(args.seed), "--seed"
    from .loader import load_bank

    entries = load_bank(args.bank_dir).entries(args.seed_method, args.task)
    return [e.text for e in entries if e.text.strip()], f"bank method {args.seed_method!r} ({args.bank_dir or 'shipped banks'})"


def main(argv: list[str] | None = None) -> int:
    import json

    parser = argparse.ArgumentParser(
        prog="python -m instructeval_banks.adhoc_generate",
        description="Paraphrase seed instructions with a harness generation model into an ad hoc bank file.",
    )
    parser.add_argument("--model", required=True, help="harness model name, e.g. hf, vllm, dummy")
    parser.add_argument("--model_args", default="", help="harness model_args, e.g. pretrained=...")
    parser.add_argument("--task", required=True, help="task id, e.g. agnews")
    parser.add_argument("--n", type=int, default=40, help="instructions to keep (default 40)")
    parser.add_argument("--seed", action="append", help="a seed instruction (repeatable); default: the seed bank")
    parser.add_argument("--seed-method", default="promptsource", help="bank method giving the seeds (default promptsource)")
    parser.add_argument("--bank-dir", default=None, help="bank directory for the seeds (default: shipped banks)")
    parser.add_argument("--samples-per-prompt", type=int, default=1, help="requests per (seed, meta-prompt)")
    parser.add_argument("--gen-kwargs", default=None, help="generation kwargs as JSON (default: greedy, until newline, 64 tokens)")
    parser.add_argument("--method", default="adhoc", help="method name of the written bank (default adhoc)")
    parser.add_argument("--out", required=True, help="bank file to write")
    args = parser.parse_args(argv)

    from lm_eval.api.registry import get_model

    seeds, seed_source = _seeds(args)
    gen_kwargs = json.loads(args.gen_kwargs) if args.gen_kwargs else None
    lm = get_model(args.model).create_from_arg_string(args.model_args, {})
    result = generate_pool(
        lm, seeds, task=args.task, n=args.n, samples_per_prompt=args.samples_per_prompt, gen_kwargs=gen_kwargs
    )
    command = "python -m instructeval_banks.adhoc_generate " + " ".join(argv if argv is not None else sys.argv[1:])
    try:
        text = bank_file_text(
            result, model=args.model, model_args=args.model_args, method=args.method, seed_source=seed_source, command=command
        )
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    print(f"wrote {args.out}: {len(result.accepted)} of {args.n} wanted (rejections: {result.rejections})")
    return 0 if len(result.accepted) >= args.n else 2


if __name__ == "__main__":
    sys.exit(main())
