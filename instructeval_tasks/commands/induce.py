"""``instructeval induce``: compute Low Perplexity (SPELL) and APE banks, or execution accuracy, for one model.

Examples::

    instructeval induce --method low_perplexity --model hf --model_args pretrained=models/smollm2 \\
        --tasks agnews,hellaswag --data-dir ../shared/data --output out/induced
    instructeval induce --method ape --model hf --model_args pretrained=models/smollm2 \\
        --tasks agnews --data-dir ../shared/data --output out/induced --demo-sets 4 --samples 2 --exec-items 32
    instructeval induce --method execution_accuracy --candidates ape --bank-dir out/induced ... --output out/induced
    instructeval induce --method rlprompt --model instructeval-hf --model_args pretrained=models/smollm2 \\
        --tasks agnews,boolq --data-dir ../shared/data --output out/induced --steps 50 --batch-size 4 --seed 0
    instructeval run --model hf --model_args pretrained=models/smollm2 --tasks agnews \\
        --methods low_perplexity,ape,rlprompt --bank-dir out/induced --output out/sweep

Definitions: ``instructeval_tasks/induce/perplexity.py`` (perplexity), ``induce/ape.py`` (meta-prompt,
cleanup, selection) and ``induce/execution.py`` (execution accuracy).
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "induce",
        help="compute Low Perplexity (SPELL) / APE / RLPrompt instruction banks or execution accuracy for one model (resumable)",
        description=(
            "Compute automatic instructions for one model with one model load, from the TRAIN split only. "
            "Banks go to <output>/<method>/<model label>/<task>.yaml (execution accuracy: .json); a rerun "
            "skips finished tasks. Use them with: instructeval run --bank-dir <output> --methods low_perplexity,ape,rlprompt."
        ),
    )
    from instructeval_tasks.induce.registry import INDUCERS

    parser.add_argument("--method", required=True, choices=tuple(INDUCERS),
                        help="; ".join(f"{i.name}: {i.summary}" for i in INDUCERS.values()))
    parser.add_argument("--model", required=True, help="harness backend: hf, vllm, ...")
    parser.add_argument("--model_args", "--model-args", dest="model_args", default="", help="backend arguments, as for lm_eval")
    parser.add_argument("--tasks", required=True, help="comma list of task ids (agnews,hellaswag,..., ii_antonyms,...), 'all' (the nine) or 'instructeval_ii' (the 24)")
    parser.add_argument("--output", "--output_path", dest="output", required=True, help="output folder (e.g. out/induced)")
    parser.add_argument("--data-dir", "--data_dir", dest="data_dir", default=None,
                        help="local data <dir>/<task>/train.jsonl (default: $INSTRUCTEVAL_DATA_DIR, else the HF hub)")
    parser.add_argument("--bank-dir", dest="bank_dir", default=None,
                        help="bank folder(s) layered over the shipped banks for --candidates methods")
    parser.add_argument("--model-label", dest="model_label", default=None,
                        help="label of the model's banks (default: the pretrained folder name, as instructeval run)")
    parser.add_argument("--batch_size", "--batch-size", dest="batch_size", default=None,
                        help="harness batch size (default 8); with --method rlprompt: prompts sampled per training step "
                             "(RLPrompt's batch size, default 4), the harness batch size is then --score-batch-size")
    parser.add_argument("--score-batch-size", dest="score_batch_size", default=None,
                        help="rlprompt: harness batch size for scoring prompts (default 8)")
    parser.add_argument("--max_batch_size", "--max-batch-size", dest="max_batch_size", type=int, default=None)
    parser.add_argument("--device", default=None, help="device for local backends, e.g. cpu or cuda:0")
    parser.add_argument("--overwrite", action="store_true", help="recompute files written with other settings")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    knobs = parser.add_argument_group("method knobs (defaults in brackets)")
    knobs.add_argument("--k", type=int, help="instructions kept per task [5]")
    knobs.add_argument("--candidates", help="low_perplexity / execution_accuracy pool: METHOD[,METHOD] or bank dirs [adhoc,promptsource]")
    knobs.add_argument("--inputs", dest="n_inputs", type=int, help="low_perplexity: train inputs per candidate [16]")
    knobs.add_argument("--input-seed", dest="input_seed", type=int, help="low_perplexity: seed of the inputs [0]")
    knobs.add_argument("--truncate-words", dest="truncate_words", type=int, help="cut text fields to N words [100]; 0: no cut")
    knobs.add_argument("--demo-sets", dest="n_demo_sets", type=int, help="ape: demonstration sets [4]")
    knobs.add_argument("--demos", dest="n_demos", type=int, help="ape: input-output pairs per set [5]")
    knobs.add_argument("--demo-seed", dest="demo_seed", type=int, help="ape: seed of the demo sets [0]")
    knobs.add_argument("--samples", dest="n_samples", type=int, help="ape: sampled completions per set [2]")
    knobs.add_argument("--no-greedy", dest="greedy", action="store_const", const=False, help="ape: no greedy completion")
    knobs.add_argument("--temperature", type=float, help="ape: sampling temperature [0.7]")
    knobs.add_argument("--max-gen-toks", dest="max_gen_toks", type=int, help="ape: tokens per completion [50]")
    knobs.add_argument("--sample-seed", dest="sample_seed", type=int, help="ape: torch seed of the sampled batch [0]")
    knobs.add_argument("--max-chars", dest="max_chars", type=int, help="ape: drop longer candidates [300]")
    knobs.add_argument("--exec-items", dest="n_exec", type=int, help="ape / execution_accuracy: held-out train rows [32]")
    knobs.add_argument("--exec-seed", dest="exec_seed", type=int, help="ape / execution_accuracy / rlprompt: seed of that slice [0]")
    knobs.add_argument("--steps", type=int, help="rlprompt: training steps [50]")
    knobs.add_argument("--inputs-per-step", dest="inputs_per_step", type=int, help="rlprompt: train rows scored per step [4]")
    knobs.add_argument("--prompt-tokens", dest="prompt_tokens", type=int, help="rlprompt: tokens per prompt [5]")
    knobs.add_argument("--seed", type=int, help="rlprompt: seed of the MLP init, prompt sampling and input draws [0]")
    knobs.add_argument("--learning-rate", dest="learning_rate", type=float, help="rlprompt: Adam learning rate [5e-5]")
    knobs.add_argument("--top-k", dest="top_k", type=int, help="rlprompt: top-k sampling of prompt tokens [256]")
    knobs.add_argument("--finalists", type=int, help="rlprompt: best sampled prompts re-scored on the held-out slice [8]")
    knobs.add_argument("--policy-model", dest="policy_model", help="rlprompt: policy LM path (default: the evaluated model)")
    knobs.add_argument("--checkpoint-every", dest="checkpoint_every", type=int, help="rlprompt: steps between checkpoints [10]")
    parser.set_defaults(func=run)


KNOBS = (
    "k", "candidates", "n_inputs", "input_seed", "truncate_words", "n_demo_sets", "n_demos", "demo_seed",
    "n_samples", "greedy", "temperature", "max_gen_toks", "sample_seed", "max_chars", "n_exec", "exec_seed",
    "steps", "inputs_per_step", "prompt_tokens", "seed", "learning_rate", "top_k", "finalists", "policy_model",
    "checkpoint_every",
)


def run(args: argparse.Namespace) -> int:
    from instructeval_tasks.errors import UserError
    from instructeval_tasks.induce.run import InduceSettings, run_induce
    from instructeval_tasks.output_folder import check_output_folder

    knobs = {key: getattr(args, key) for key in KNOBS}
    harness_batch = args.batch_size
    if args.method == "rlprompt":
        knobs["prompt_batch"] = int(args.batch_size) if args.batch_size is not None else None
        harness_batch = args.score_batch_size
    harness_batch = "8" if harness_batch is None else harness_batch
    batch_size = int(harness_batch) if str(harness_batch).isdigit() else harness_batch
    if knobs["truncate_words"] == 0:
        knobs["truncate_words"] = None
        settings = InduceSettings(truncate_words=None)
    else:
        settings = InduceSettings()
    check_output_folder(args.output, "--output")  # before the model loads
    try:
        report = run_induce(
            method=args.method,
            model=args.model,
            model_args=args.model_args,
            tasks=args.tasks,
            output=args.output,
            data_dir=args.data_dir,
            bank_dir=args.bank_dir,
            model_label=args.model_label,
            settings=settings,
            batch_size=batch_size,
            max_batch_size=args.max_batch_size,
            device=args.device,
            overwrite=args.overwrite,
            progress=args.progress,
            **knobs,
        )
    except UserError:
        raise  # one line, exit 2 (instructeval_tasks.cli)
    except ValueError as err:  # an unknown task or a bad knob value, found before the model loads
        raise UserError(str(err)) from None
    for path in report.written:
        print(f"wrote {path}")
    for path in report.skipped:
        print(f"done  {path}")
    return 0
