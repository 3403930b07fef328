"""Low Perplexity instructions (SPELL, Gonen et al. 2022), computed with any harness model.

Gonen et al., "Demystifying Prompts in Language Models via Perplexity Estimation" (2022): among
paraphrases of a task prompt, those with lower perplexity under the model tend to work better;
SPELL keeps the lowest-perplexity prompts. InstructEval (Ajith et al.) ships only the resulting
per-model banks; this module recomputes them.

Procedure for one task and one model:

1. **Candidates**: a pool of instructions (default: the shipped ``adhoc`` and ``promptsource``
   banks of the task; see ``induce.common.candidate_pool``).
2. **Inputs**: a seeded sample of ``N`` rows (default 16) of the **train** split
   (``induce.common.perplexity_input_ids``), text fields truncated to ``truncate_words``.
3. **Texts**: for instruction ``c`` and input row ``x`` the zero-shot prompt the task itself
   builds, without an answer: ``t(c, x) = c.lstrip() + "\\n\\n" + block(x)``, where ``block(x)`` is
   the test block ending at the answer cue (``"News: ...\\nCategory:"``).
4. **Scoring**: one ``lm.loglikelihood_rolling`` request per (instruction, input) pair. The harness
   scores *every* token of ``t(c, x)`` -- the instruction's own tokens included -- each conditioned
   on all earlier ones (the first on the model's prefix token, BOS or EOS). With ``LL(c, x)`` that
   summed log-likelihood (natural log) and ``T(c, x) = len(lm.tok_encode(t(c, x)))`` the number of
   scored tokens::

       ppl(c, x) = exp(-LL(c, x) / T(c, x))          # per-input token perplexity
       PPL(c)    = (1/N) * sum_x ppl(c, x)          # the score: mean over the N inputs

   SPELL's estimate is likewise the average over task inputs of the perplexity of the prompt
   instantiated with that input. The file also records ``log_perplexity(c) = (1/N) sum_x
   -LL(c, x)/T(c, x)`` (the mean per-input log-perplexity).
5. **Selection**: the ``k`` candidates with the lowest ``PPL(c)`` (default 5); ties keep pool order.

The bank file (``<output>/low_perplexity/<model_label>/<task>.yaml``) has ``model: <label>``, the
``k`` entries best first with their ``perplexity``, and a provenance block with the model, data
source, seeds, N, the candidate pool and every candidate's score. It holds no date, so a rerun
of the same computation gives the same bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from .common import InduceError, PoolEntry

PPL_DEFINITION = (
    "ppl(c, x) = exp(-LL(c, x) / T(c, x)), where LL is the summed natural-log likelihood that "
    "lm.loglikelihood_rolling gives the whole text t(c, x) = c.lstrip() + '\\n\\n' + block(x) (every "
    "token, the instruction's own tokens included, each conditioned on all earlier tokens, the first on "
    "the model's prefix token) and T = len(lm.tok_encode(t(c, x))) the number of scored tokens; "
    "block(x) is the task's zero-shot test block of train row x ending at the answer cue. "
    "perplexity(c) = mean over the N inputs of ppl(c, x); log_perplexity(c) = mean of -LL/T. "
    "The k candidates with the lowest perplexity are kept (ties: pool order)."
)


@dataclass
class PerplexityScore:
    """The perplexity of one candidate over the inputs."""

    entry: PoolEntry
    perplexity: float
    log_perplexity: float
    per_input: list[float]
    tokens: list[int]


def token_counter(lm: Any) -> Callable[[str], int]:
    """The number of tokens ``lm.loglikelihood_rolling`` scores for a text: ``len(lm.tok_encode(text))``."""
    encode = getattr(lm, "tok_encode", None)
    if encode is None:
        raise InduceError(
            f"{type(lm).__name__} has no tok_encode, so per-token perplexity cannot be computed; "
            f"use a local backend (hf, vllm) for --method low_perplexity"
        )
    return lambda text: len(encode(text))


def prompt_text(instruction: str, block: str) -> str:
    """``t(c, x)``: the instruction as the task's description (``lstrip() + "\\n\\n"``) then the block."""
    from ..instruction import Instruction

    return Instruction(instruction, "candidate", "candidate", None, "induce").description + block


def score_perplexity(lm: Any, pool: Sequence[PoolEntry], blocks: Sequence[str]) -> list[PerplexityScore]:
    """Score every candidate of ``pool`` on the input ``blocks`` with one ``loglikelihood_rolling`` call."""
    from lm_eval.api.instance import Instance

    if not pool or not blocks:
        raise InduceError("perplexity needs at least one candidate and one input")
    count = token_counter(lm)
    texts = [prompt_text(entry.text, block) for entry in pool for block in blocks]
    requests = [
        Instance(
            request_type="loglikelihood_rolling",
            doc={"candidate": i // len(blocks), "input": i % len(blocks)},
            arguments=(text,),
            idx=i,
            metadata=("instructeval_induce_perplexity", i, 1),
        )
        for i, text in enumerate(texts)
    ]
    lls = lm.loglikelihood_rolling(requests)
    if len(lls) != len(requests):
        raise InduceError(f"loglikelihood_rolling returned {len(lls)} values for {len(requests)} requests")
    scores = []
    for c, entry in enumerate(pool):
        per_input, logs, tokens = [], [], []
        for x in range(len(blocks)):
            i = c * len(blocks) + x
            ll = lls[i][0] if isinstance(lls[i], (tuple, list)) else lls[i]
            n = count(texts[i])
            if n <= 0:
                raise InduceError(f"empty tokenization for candidate {entry.id!r}")
            logs.append(-float(ll) / n)
            per_input.append(math.exp(-float(ll) / n))
            tokens.append(n)
        scores.append(
            PerplexityScore(entry, sum(per_input) / len(per_input), sum(logs) / len(logs), per_input, tokens)
        )
    return scores


def select_lowest(scores: Sequence[PerplexityScore], k: int) -> list[PerplexityScore]:
    """The ``k`` lowest-perplexity candidates, lowest first (a stable sort: ties keep pool order)."""
    return sorted(scores, key=lambda s: s.perplexity)[:k]


# ------------------------------------------------------------------------------ bank writer

def induce_low_perplexity(lm, job) -> tuple[str, str]:
    """The low-perplexity bank of ``job``'s task: ``(bank text, one-line summary)``."""
    import tempfile

    from instructeval_banks.writer import dump_bank

    from .common import make_task, model_meta, perplexity_input_ids, rounded, write_rows_dir
    from .provenance import provenance_head

    spec, rows, source, label, settings = job.spec, job.rows, job.source, job.label, job.settings
    settings_fp, model, args_dict, pool = job.settings_fp, job.model, job.args_dict, job.pool

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
