"""Benchmark: RLPrompt prompts against random, null and generic instructions on AG News (held-out train rows).

Trains RLPrompt with ``instructeval induce --method rlprompt`` (or reuses a finished bank in
``--output`` with the same settings: the training time then comes from its ``<task>.timing.json``),
then scores, on the bank's held-out slice of TRAIN rows and in one pass each:

(a) ``--random-prompts`` prompts of ``--prompt-tokens`` tokens drawn uniformly from the policy's
    action space (every non-special token), ``torch.Generator().manual_seed(--seed)``;
(b) the trained RLPrompt prompts (the bank);
(c) the null instruction and the five generic instructions of the shipped bank.

Each row: held-out accuracy (``acc_per_token``: the project's decision rule, zero-shot, the prompt as
the instruction) and RLPrompt's reward ``R(z)`` on the same scores; then the mean accuracy per group
and the training time.

    python benchmarks/rlprompt_agnews.py --model-dir /work/main/models/smollm2 --data-dir ../shared/data \\
        --output out/banks --steps 20 --exec-items 16 --finalists 6

Exits 0 with a "skip:" line when the model or the data is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import backend_common as bc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=str(bc.DEFAULT_MODEL))
    parser.add_argument("--data-dir", default=str(bc.DEFAULT_DATA))
    parser.add_argument("--model", default="instructeval-hf", help="harness backend of the target model")
    parser.add_argument("--output", default=None, help="bank folder (default: a temporary one, so training runs)")
    parser.add_argument("--task", default="agnews")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch-size", dest="prompt_batch", type=int, default=4)
    parser.add_argument("--inputs-per-step", type=int, default=4)
    parser.add_argument("--prompt-tokens", type=int, default=5)
    parser.add_argument("--exec-items", dest="n_exec", type=int, default=32)
    parser.add_argument("--finalists", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--random-prompts", type=int, default=5)
    parser.add_argument("--score-batch-size", type=int, default=8)
    bc.add_runtime_options(parser)
    args = parser.parse_args()
    if not bc.ready(args):
        return 0
    import torch
    import yaml

    from instructeval_banks import load_bank
    from instructeval_tasks.induce.common import load_train_rows, make_task, model_meta, write_rows_dir
    from instructeval_tasks.induce.rlprompt_reward import ChoiceScorer
    from instructeval_tasks.induce.run import run_induce
    from instructeval_tasks.specs import get_spec

    spec = get_spec(args.task)
    model_args = f"pretrained={args.model_dir},dtype={args.dtype}"
    lm = bc.load_lm(args.model, args.model_dir, args.score_batch_size, args.dtype)
    output = Path(args.output) if args.output else Path(tempfile.mkdtemp(prefix="rlprompt-bench-"))
    start = time.monotonic()
    report = run_induce(
        method="rlprompt", model=args.model, model_args=model_args, tasks=spec.name, output=output,
        data_dir=args.data_dir, lm=lm, steps=args.steps, prompt_batch=args.prompt_batch,
        inputs_per_step=args.inputs_per_step, prompt_tokens=args.prompt_tokens, n_exec=args.n_exec,
        finalists=args.finalists, seed=args.seed,
    )
    induce_seconds = time.monotonic() - start
    path = (report.written or report.skipped)[0]
    timing = json.loads(path.with_name(f"{path.stem}.timing.json").read_text())
    bank = yaml.safe_load(path.read_text())
    held_ids = bank["provenance"]["heldout_slice"]["train_indices"]

    rows, _source = load_train_rows(spec, args.data_dir)
    tok = lm.tokenizer
    special = set(tok.all_special_ids)
    allowed = torch.tensor([i for i in range(len(tok)) if i not in special])
    gen = torch.Generator().manual_seed(args.seed)
    random_texts = []
    for _ in range(args.random_prompts):
        ids = allowed[torch.randint(len(allowed), (args.prompt_tokens,), generator=gen)].tolist()
        random_texts.append(tok.convert_tokens_to_string(tok.convert_ids_to_tokens(ids)))
    groups = [("random", t) for t in random_texts]
    groups += [("rlprompt", e["text"]) for e in bank["entries"]]
    groups += [("null", "")] + [("generic", e.text) for e in load_bank().entries("generic", spec.name)]

    with tempfile.TemporaryDirectory(prefix="rlprompt-bench-") as tmp:
        view = make_task(spec, data_dir=write_rows_dir(Path(tmp), spec, [rows[i] for i in held_ids]),
                         name=f"{spec.task_name}__rlprompt_bench",
                         truncate_words=bank["provenance"]["settings"]["truncate_words"],
                         model_meta=model_meta({"pretrained": args.model_dir}))
        scorer = ChoiceScorer(lm, view, tok)
    start = time.monotonic()
    rewards = scorer.rewards([text for _g, text in groups], list(range(len(held_ids))))
    score_seconds = time.monotonic() - start

    print(f"task {spec.name}, model {args.model_dir} ({args.model}, {args.dtype}, {args.threads} thread(s)); "
          f"held-out slice: {len(held_ids)} train rows (bank {path})")
    print(f"{'group':<9} {'acc':>6} {'R(z)':>8}  prompt")
    for (group, text), r in zip(groups, rewards):
        print(f"{group:<9} {r.accuracy:>6.3f} {r.reward:>8.2f}  {text!r}")
    print()
    print(f"{'group':<9} {'n':>3} {'mean acc':>9} {'max acc':>8} {'mean R':>8}")
    for name in ("random", "rlprompt", "null", "generic"):
        sel = [r for (g, _t), r in zip(groups, rewards) if g == name]
        print(f"{name:<9} {len(sel):>3} {sum(r.accuracy for r in sel) / len(sel):>9.3f} "
              f"{max(r.accuracy for r in sel):>8.3f} {sum(r.reward for r in sel) / len(sel):>8.2f}")
    settings = bank["provenance"]["settings"]
    trained_here = bool(report.written)
    print()
    print(f"RLPrompt training: {settings['steps']} steps x {settings['prompt_batch']} prompts x "
          f"{settings['inputs_per_step']} inputs; train {timing['train_seconds']:.0f} s + held-out ranking "
          f"{timing['heldout_seconds']:.0f} s ({'measured in this run' if trained_here else 'recorded when the bank was trained'}"
          f"{'' if not timing['resumed_from_step'] else ', resumed from step ' + str(timing['resumed_from_step'])}); "
          f"induce call {induce_seconds:.0f} s; scoring the {len(groups)} prompts above {score_seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
