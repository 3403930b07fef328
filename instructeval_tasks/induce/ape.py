"""APE instructions (Zhou et al. 2022) with the Instruction Induction prompt (Honovich et al. 2022).

InstructEval (Ajith et al.) ships only the APE bank it obtained (completions of APE's "The
instruction was to ..." frame); this module recomputes such a bank with any harness generation
model.

1. **Demonstrations**: ``n_sets`` sets (default 4) of ``n_demos`` (default 5) input -> output pairs
   from the **train** split, each set drawn with its own seed and disjoint from the held-out
   execution-accuracy slice (``induce.common.demo_set_ids``). An input is the task's test block
   without the answer cue (``induce.common.input_text``), the output the gold answer as a
   demonstration shows it (``induce.common.answer_text``).
2. **Meta-prompt** (Honovich et al., the instruction-induction input; APE's forward-generation
   template, Zhou et al. Fig. 2)::

       I gave a friend an instruction and five inputs. The friend read the instruction and wrote an
       output for every one of the inputs. Here are the input-output pairs:

       Input: <x1>
       Output: <y1>

       ...

       Input: <x5>
       Output: <y5>

       The instruction was

   (one line before the pairs in the prompt; ``five`` is the number word of ``n_demos``.)
3. **Generation**: ``lm.generate_until`` with ``until: ["\\n\\n", "Input:"]`` and
   ``max_gen_toks`` (default 50): one greedy completion per set plus ``n_samples`` sampled ones
   (``do_sample=True``, ``temperature``; the torch RNG is seeded with ``sample_seed`` before the
   sampled batch, so a rerun on the same device and batch size draws the same samples).
4. **Cleanup** (:func:`clean_candidate`), after Honovich et al.'s
   ``normalize_predicted_instruction``: drop a leading ``":"``; keep the first non-empty line; strip
   the frame words ``probably``/``most likely`` and the ``to`` of "The instruction was to ..."
   (whole word only), keeping the rest verbatim -- lower-case start included, as APE's banks are
   stored; take the first quoted span when it has more than three words (a whole quoted instruction); strip
   surrounding quotes and whitespace and collapse runs of whitespace. Dropped (reason recorded):
   ``empty`` (no letter or digit left), ``template_syntax`` (``{{``, ``{%`` or ``{#``),
   ``too_long`` (over ``max_chars``, default 300) and ``duplicate`` (same text as an earlier
   candidate, ignoring case, whitespace and a final ``.``).
5. **Selection**: every kept candidate is scored by execution accuracy (``induce.execution``) on the
   held-out train slice (default 32 rows); the top ``k`` (default 5) become the bank, best first
   (ties: generation order). The bank file (``<output>/ape/<model_label>/<task>.yaml``) records every
   candidate -- raw completion, cleaned text, origin (demo set, greedy or sampled), drop reason or
   execution accuracy -- and the demo-set and slice row indices.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from instructeval_banks import normalize_text
from instructeval_banks.schema import TEMPLATE_SYNTAX

META_PROMPT_HEAD = (
    "I gave a friend an instruction and {n} inputs. The friend read the instruction and wrote an output "
    "for every one of the inputs. Here are the input-output pairs:"
)
META_PROMPT_TAIL = "The instruction was"
PAIR_TEMPLATE = "Input: {input}\nOutput: {output}"
STOP_SEQUENCES = ("\n\n", "Input:")
MAX_CHARS = 300
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_PREFIXES = re.compile(r"^(?:(?:probably|most likely)\b\s*:?\s*)+", re.I)
_TO = re.compile(r"^to\b\s*", re.I)
_QUOTED = re.compile(r"[\"“]([^\"“”]+)[\"”]")
_QUOTES = "\"'“”‘’`"


def meta_prompt_head(n: int) -> str:
    """The meta-prompt's first line for ``n`` pairs (``five`` for the paper's 5)."""
    return META_PROMPT_HEAD.format(n=_NUMBER_WORDS[n] if 0 <= n < len(_NUMBER_WORDS) else str(n))


def render_meta_prompt(pairs: Sequence[tuple[str, str]]) -> str:
    """The Instruction Induction meta-prompt for ``(input, output)`` pairs (see the module doc).

    Example:
        >>> render_meta_prompt([("cat", "c"), ("dog", "d")])[-60:]
        'pairs:\\n\\nInput: cat\\nOutput: c\\n\\nInput: dog\\nOutput: d\\n\\nThe instruction was'
    """
    head = meta_prompt_head(len(pairs))
    body = "\n\n".join(PAIR_TEMPLATE.format(input=i, output=o) for i, o in pairs)
    return f"{head}\n\n{body}\n\n{META_PROMPT_TAIL}"


def clean_candidate(raw: str) -> str:
    """Step 4's cleanup of one completion of "The instruction was" (before the drop rules).

    Example:
        >>> clean_candidate(' to classify the news article by topic.\\nmore')
        'classify the news article by topic.'
        >>> clean_candidate(': "Write the opposite of the given word."')
        'Write the opposite of the given word.'
    """
    text = str(raw).lstrip()
    if text.startswith(":"):
        text = text[1:]
    text = next((line.strip() for line in text.splitlines() if line.strip()), "")
    text = _PREFIXES.sub("", text)
    text = _TO.sub("", text, count=1)
    quoted = _QUOTED.findall(text)
    if quoted and len(quoted[0].split()) > 3:  # Honovich et al.: an instruction quoted whole
        text = quoted[0]
    text = text.strip().strip(_QUOTES).strip()
    return " ".join(text.split())


def _dedupe_key(text: str) -> str:
    return normalize_text(text).rstrip(".").rstrip()


def drop_reason(text: str, kept: Sequence[str], max_chars: int = MAX_CHARS) -> str | None:
    """Why a cleaned candidate is dropped (``None``: it is kept). ``kept``: texts kept so far."""
    if not any(ch.isalnum() for ch in text):
        return "empty"
    if any(token in text for token in TEMPLATE_SYNTAX):
        return "template_syntax"
    if len(text) > max_chars:
        return "too_long"
    key = _dedupe_key(text)
    if any(_dedupe_key(k) == key for k in kept):
        return "duplicate"
    return None


@dataclass
class ApeCandidate:
    """One generated candidate: origin, raw completion, cleaned text, and its fate."""

    demo_set: int
    decoding: str  # "greedy" or "sampled"
    sample: int | None
    raw: str
    text: str
    dropped: str | None = None
    execution_accuracy: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        from .common import rounded

        return {
            "demo_set": self.demo_set,
            "decoding": self.decoding,
            "sample": self.sample,
            "raw": self.raw,
            "text": self.text,
            "dropped": self.dropped,
            "execution_accuracy": None if self.execution_accuracy is None else rounded(self.execution_accuracy),
        }


def gen_kwargs(*, sampled: bool, temperature: float, max_gen_toks: int) -> dict[str, Any]:
    """The generation kwargs of a greedy or sampled request."""
    kwargs: dict[str, Any] = {"until": list(STOP_SEQUENCES), "max_gen_toks": int(max_gen_toks)}
    if sampled:
        kwargs.update(do_sample=True, temperature=float(temperature))
    else:
        kwargs.update(do_sample=False, temperature=0.0)
    return kwargs


def generate_candidates(
    lm: Any,
    prompts: Sequence[str],
    *,
    n_samples: int,
    temperature: float,
    max_gen_toks: int,
    sample_seed: int,
    greedy: bool = True,
) -> list[ApeCandidate]:
    """Completions of each meta-prompt: one greedy (when ``greedy``) then ``n_samples`` sampled, per prompt.

    Candidates come back in the order (prompt, greedy, sample 0, sample 1, ...), raw and cleaned;
    drop rules are applied later (:func:`apply_drops`).
    """
    from lm_eval.api.instance import Instance

    def run(kind: str, kwargs: dict[str, Any], repeats: int) -> dict[tuple[int, int], str]:
        requests = []
        keys = []
        for p, prompt in enumerate(prompts):
            for j in range(repeats):
                requests.append(
                    Instance(
                        request_type="generate_until",
                        doc={"demo_set": p, "decoding": kind, "sample": j},
                        arguments=(prompt, dict(kwargs)),
                        idx=len(requests),
                        metadata=("instructeval_induce_ape", len(requests), 1),
                    )
                )
                keys.append((p, j))
        if not requests:
            return {}
        outputs = lm.generate_until(requests)
        if len(outputs) != len(requests):
            raise RuntimeError(f"generate_until returned {len(outputs)} outputs for {len(requests)} requests")
        return dict(zip(keys, (str(o) for o in outputs)))

    greedy_out = run("greedy", gen_kwargs(sampled=False, temperature=0.0, max_gen_toks=max_gen_toks), 1) if greedy else {}
    sampled_out: dict[tuple[int, int], str] = {}
    if n_samples > 0:
        try:
            import torch

            torch.manual_seed(int(sample_seed))
        except ImportError:  # a backend without torch samples with its own RNG
            pass
        sampled_out = run("sampled", gen_kwargs(sampled=True, temperature=temperature, max_gen_toks=max_gen_toks), n_samples)
    candidates = []
    for p in range(len(prompts)):
        if greedy:
            raw = greedy_out[(p, 0)]
            candidates.append(ApeCandidate(p, "greedy", None, raw, clean_candidate(raw)))
        for j in range(n_samples):
            raw = sampled_out[(p, j)]
            candidates.append(ApeCandidate(p, "sampled", j, raw, clean_candidate(raw)))
    return candidates


def apply_drops(candidates: Sequence[ApeCandidate], max_chars: int = MAX_CHARS) -> list[ApeCandidate]:
    """Set ``dropped`` on each candidate in order; return the kept ones."""
    kept: list[ApeCandidate] = []
    for cand in candidates:
        cand.dropped = drop_reason(cand.text, [k.text for k in kept], max_chars)
        if cand.dropped is None:
            kept.append(cand)
    return kept


def select_top(kept: Sequence[ApeCandidate], k: int) -> list[ApeCandidate]:
    """The ``k`` kept candidates with the highest execution accuracy (stable: ties keep generation order)."""
    return sorted(kept, key=lambda c: -(c.execution_accuracy or 0.0))[:k]


# ------------------------------------------------------------------------------ bank writer

def induce_ape(lm, job) -> tuple[str, str]:
    """The APE bank of ``job``'s task: ``(bank text, one-line summary)``."""
    import tempfile
    from collections import Counter

    from instructeval_banks.writer import dump_bank

    from ..sampling import truncate_fields
    from .common import (
        InduceError, answer_text, demo_set_ids, exec_slice_ids, input_text, make_task, model_meta, rounded, write_rows_dir,
    )
    from .execution import EXEC_DEFINITION, execution_accuracy
    from .provenance import provenance_head

    spec, rows, source, label, settings = job.spec, job.rows, job.source, job.label, job.settings
    settings_fp, model, args_dict = job.settings_fp, job.model, job.args_dict

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
