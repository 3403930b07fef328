"""The RLPrompt bank file of one (model, task): entries, settings, finalists and the reward curve."""

from __future__ import annotations

import json
from pathlib import Path

from .common import rounded
from .rlprompt_reward import REWARD_DEFINITION
from .rlprompt_train import RLPromptResult, curve_summary, train_rlprompt


def _number(value: float | None) -> float | None:
    return None if value is None or value != value else rounded(value)


def checkpoint_path(path: Path) -> Path:
    """``<task>.checkpoint.pt`` beside the bank ``<task>.yaml``."""
    return path.with_name(f"{path.stem}.checkpoint.pt")


def discard_checkpoint(path: Path) -> None:
    """Remove the checkpoint of a bank once the bank is written."""
    checkpoint_path(path).unlink(missing_ok=True)


def induce_rlprompt(lm, job) -> tuple[str, str]:
    """Train (or resume), rank, and return ``(bank text, one-line summary)``; see ``rlprompt_train``."""
    spec, rows, source, label, settings = job.spec, job.rows, job.source, job.label, job.settings
    settings_fp, model, args_dict, path = job.settings_fp, job.model, job.args_dict, job.path
    overwrite, progress, echo = job.overwrite, job.progress, job.echo
    from instructeval_banks.writer import dump_bank

    from .provenance import provenance_head

    checkpoint = checkpoint_path(path)
    result: RLPromptResult = train_rlprompt(
        lm, spec, rows, settings=settings, settings_fp=settings_fp, args_dict=args_dict, checkpoint=checkpoint,
        overwrite=overwrite, progress=progress, echo=echo,
    )
    entries = [
        {
            "id": f"rlprompt-{spec.name}-{label}-{r}",
            "text": c.text,
            "heldout_reward": rounded(c.heldout_reward),
            "heldout_accuracy": rounded(c.heldout_accuracy),
            "train_reward": _number(c.train_reward),
            "found": c.source if c.source == "greedy" else f"sampled at step {c.step}",
            "token_ids": list(c.token_ids),
        }
        for r, c in enumerate(result.entries)
    ]
    provenance = provenance_head(
        "rlprompt",
        "computed by `instructeval induce --method rlprompt`: RLPrompt (Deng et al. 2022, 'RLPrompt: Optimizing "
        "Discrete Text Prompts with Reinforcement Learning'), a frozen LM with a trainable MLP trained by soft "
        "Q-learning on this model's classification reward over train rows",
        {
            "reward": REWARD_DEFINITION,
            "selection": f"finalists = the {settings.finalists} distinct sampled prompts with the highest training "
                         f"reward plus the final greedy prompt; the {settings.k} finalists with the highest "
                         f"held-out reward R(z) are kept, best first (ties: finalist order); heldout_accuracy is "
                         f"acc_per_token on the same scores",
        },
        model=model, args_dict=args_dict, label=label, source=source, rows=rows, settings=settings, settings_fp=settings_fp,
    )
    provenance["policy"] = result.policy
    provenance["checkpoint_every"] = settings.checkpoint_every
    provenance["heldout_slice"] = {
        "rng": f"random.Random('instructeval-induce:exec-slice:{spec.name}:{settings.exec_seed}')"
               + (", class-balanced" if spec.balanced else ", uniform"),
        "train_indices": result.heldout_ids,
    }
    provenance["training_inputs"] = (
        f"per step s: {settings.inputs_per_step} rows of the other train rows, "
        f"random.Random('instructeval-induce:rlprompt-inputs:{spec.name}:{settings.seed}:<s>')"
        + (", class-balanced" if spec.balanced else ", uniform")
    )
    provenance["reward_curve"] = curve_summary(result.curve)
    provenance["finalists"] = [
        {"text": c.text, "found": c.source if c.source == "greedy" else f"step {c.step}",
         "train_reward": _number(c.train_reward), "heldout_reward": _number(c.heldout_reward),
         "heldout_accuracy": _number(c.heldout_accuracy)}
        for c in result.finalists
    ]
    text = dump_bank(
        method="rlprompt", tasks=[spec.name], model=label, provenance=provenance, entries=entries,
        description=f"The {len(entries)} RLPrompt prompts with the highest held-out reward for {spec.title} under "
                    f"{label}, best first.",
        comment=f"RLPrompt prompts for {spec.name}, model {label}. Written by `instructeval induce`; regenerate rather "
                f"than edit.",
    )
    timing = {
        "task": spec.name, "model_label": label, "settings_fingerprint": settings_fp,
        "train_seconds": round(result.train_seconds, 1), "heldout_seconds": round(result.heldout_seconds, 1),
        "resumed_from_step": result.resumed_from, "steps": settings.steps,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_name(f"{path.stem}.timing.json").write_text(json.dumps(timing, indent=2) + "\n", encoding="utf-8")
    top = result.entries[0]
    summary = (f"{settings.steps} steps ({result.train_seconds:.0f} s), {len(result.finalists)} finalists; best held-out "
               f"R={top.heldout_reward:.1f} acc={top.heldout_accuracy:.3f}: {top.text!r}")
    return text, summary
