"""RLPrompt training for one (model, task), resumable, and the bank of its best prompts.

Procedure (Deng et al. 2022; module ``rlprompt_policy`` for the policy, ``rlprompt_reward`` for
the reward, ``rlprompt_sql`` for the loss):

1. **Rows.** The held-out slice is ``induce.common.exec_slice_ids`` (``n_exec`` TRAIN rows, the
   same seeded slice APE and ``execution_accuracy`` use); training inputs come from the other
   train rows. The evaluation split is never read.
2. **One step** ``s`` (``steps`` of them): polyak-update the target MLP (rate 0.001, every step,
   as ``SQLModule``); sample ``prompt_batch`` prompts of ``prompt_tokens`` tokens (top-k, seeded
   ``torch.Generator``); draw ``inputs_per_step`` training rows (class-balanced for
   classification) with ``random.Random("instructeval-induce:rlprompt-inputs:<task>:<seed>:<s>")``;
   score every prompt on those rows (gap reward), z-score across the prompts, shape, and take one
   Adam step (learning rate 5e-5, gradient norm clipped at 5, RLPrompt's trainer defaults) on the
   soft Q-learning loss.
3. **Finalists.** The ``finalists`` distinct sampled prompts with the highest training reward
   (each scored on its own step's inputs) plus the final policy's greedy prompt (RLPrompt's
   inference output). Blank prompts (they would be the null instruction) and prompts with
   template syntax are never finalists.
4. **Bank.** Every finalist is scored on the held-out slice; the ``k`` with the highest held-out
   reward ``R(z)`` (ties: finalist order) are the bank, best first, each with its held-out reward
   and accuracy (``acc_per_token``: the project's decision rule on the same scores).

Checkpoints (``<output>/rlprompt/<label>/<task>.checkpoint.pt``, every ``checkpoint_every``
steps, written atomically) hold the MLPs, the optimizer, the generator state, the reward curve
and the candidates; a rerun with the same settings resumes from the last one and ends with the
bank an uninterrupted run writes. The checkpoint is removed once the bank is written.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from .common import InduceError, draw_rows, exec_slice_ids, induce_rng, make_task, model_meta, rounded, write_rows_dir
from ..specs import TaskSpec

GRAD_CLIP = 5.0        # TrainerConfig.gradient_clip_norm
POLYAK_RATE = 1e-3     # SQLModuleConfig.target_learning_rate (target_update_method: polyak)
CURVE_SEGMENTS = 10


@dataclass
class Candidate:
    """A distinct sampled prompt: its best training reward and where it was found."""

    text: str
    token_ids: list[int]
    step: int
    train_reward: float
    train_accuracy: float
    source: str = "sampled"
    heldout_reward: float | None = None
    heldout_accuracy: float | None = None


@dataclass
class TrainState:
    step: int = 0
    curve: list[dict[str, float]] = field(default_factory=list)
    candidates: dict[str, Candidate] = field(default_factory=dict)


def valid_prompt(text: str) -> bool:
    """A prompt can be a bank entry: not blank (that is the null instruction), no template syntax."""
    from instructeval_banks.schema import TEMPLATE_SYNTAX

    return bool(text.strip()) and not any(token in text for token in TEMPLATE_SYNTAX)


def curve_summary(curve: Sequence[dict[str, float]], segments: int = CURVE_SEGMENTS) -> dict[str, Any]:
    """The reward curve in ``segments`` equal runs of steps: mean raw reward and accuracy of each.

    Example:
        >>> s = curve_summary([{"mean_reward": float(i), "mean_accuracy": 0.5, "max_reward": float(i)} for i in range(4)], 2)
        >>> s["segments"][1]
        {'steps': [3, 4], 'mean_reward': 2.5, 'mean_accuracy': 0.5, 'max_reward': 3.0}
    """
    n = len(curve)
    out = []
    for k in range(min(segments, n)):
        lo, hi = k * n // min(segments, n), (k + 1) * n // min(segments, n)
        part = curve[lo:hi]
        out.append({
            "steps": [lo + 1, hi],
            "mean_reward": rounded(sum(c["mean_reward"] for c in part) / len(part)),
            "mean_accuracy": rounded(sum(c["mean_accuracy"] for c in part) / len(part)),
            "max_reward": rounded(max(c["max_reward"] for c in part)),
        })
    return {
        "what": "per step: the raw reward R(z) (before z-score) of each sampled prompt on that step's inputs; "
                "segments of consecutive steps: the mean over steps of the mean over prompts, and the maximum",
        "steps": n,
        "segments": out,
    }


def _policy_backbone(lm: Any, policy_model: str | None, args_dict: dict[str, Any]):
    """The frozen policy LM and its tokenizer: ``policy_model``, else the evaluated model itself."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if policy_model is None and getattr(lm, "model", None) is not None and getattr(lm, "tokenizer", None) is not None:
        return lm.model, lm.tokenizer
    name = policy_model or args_dict.get("pretrained")
    if not name:
        raise InduceError("RLPrompt needs a policy LM: pass --policy-model PATH (a transformers causal LM)")
    try:
        tok = AutoTokenizer.from_pretrained(str(name))
        model = AutoModelForCausalLM.from_pretrained(str(name), dtype=torch.float32).eval()
    except (OSError, ValueError) as err:
        raise InduceError(f"cannot load the policy model {name!r} ({err}); pass --policy-model PATH") from None
    return model, tok


def _save_checkpoint(path: Path, payload: dict[str, Any]) -> None:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        torch.save(payload, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@dataclass
class RLPromptResult:
    entries: list[Candidate]
    finalists: list[Candidate]
    curve: list[dict[str, float]]
    greedy: Candidate
    heldout_ids: list[int]
    metric: str
    train_seconds: float
    heldout_seconds: float
    resumed_from: int
    policy: dict[str, Any]


def train_rlprompt(
    lm: Any,
    spec: TaskSpec,
    rows: Sequence[dict[str, Any]],
    *,
    settings: Any,
    settings_fp: str,
    args_dict: dict[str, Any],
    checkpoint: Path,
    overwrite: bool = False,
    progress: bool = True,
    echo: Callable[[str], None] = print,
) -> RLPromptResult:
    """Train the policy for ``settings.steps`` steps (resuming ``checkpoint``) and rank the finalists."""
    import torch
    from tqdm.auto import tqdm

    from .rlprompt_policy import PromptPolicy
    from .rlprompt_reward import ChoiceScorer, shape, zscore
    from .rlprompt_sql import soft_q_loss

    if spec.kind == "gqa":
        raise InduceError(
            f"{spec.name} is a generative task: RLPrompt's reward needs fixed choices (classification or multiple "
            f"choice), and the paper has no RLPrompt instructions for NQ-Open/TriviaQA; drop it from --tasks"
        )
    heldout = exec_slice_ids(spec, rows, settings.n_exec, settings.exec_seed)
    excluded = set(heldout)
    pool = [i for i in range(len(rows)) if i not in excluded]
    if len(pool) < settings.inputs_per_step:
        raise InduceError(f"{spec.task_name}: {len(pool)} train rows outside the held-out slice, fewer than "
                          f"--inputs-per-step {settings.inputs_per_step}")
    model, tokenizer = _policy_backbone(lm, settings.policy_model, args_dict)
    score_tok = getattr(lm, "tokenizer", None) or tokenizer
    init_gen = torch.Generator().manual_seed(int(settings.seed))
    policy = PromptPolicy(model, tokenizer, prompt_tokens=settings.prompt_tokens, top_k=settings.top_k,
                          generator=init_gen)
    device = next(model.parameters()).device
    policy.to(device)
    optimizer = torch.optim.Adam(policy.mlp.parameters(), lr=settings.learning_rate)
    sample_gen = torch.Generator(device=device).manual_seed(int(settings.seed))
    state = TrainState()
    if checkpoint.is_file():
        saved = torch.load(checkpoint, map_location="cpu", weights_only=False)
        if saved.get("settings_fingerprint") != settings_fp:
            if not overwrite:
                raise InduceError(f"{checkpoint} is a checkpoint of other settings; delete it, use another --output, "
                                  f"or pass --overwrite")
        else:
            policy.load_trainable_state(saved["policy"])
            optimizer.load_state_dict(saved["optimizer"])
            sample_gen.set_state(saved["generator"])
            state = TrainState(saved["step"], saved["curve"], {c.text: c for c in (Candidate(**d) for d in saved["candidates"])})
            echo(f"{spec.name}: resuming RLPrompt from step {state.step} ({checkpoint})")
    resumed_from = state.step

    with tempfile.TemporaryDirectory(prefix="instructeval-rlprompt-") as tmp:
        meta = model_meta(args_dict)
        train_view = make_task(spec, data_dir=write_rows_dir(Path(tmp) / "train", spec, [rows[i] for i in pool]),
                               name=f"{spec.task_name}__induce_rlprompt_train", truncate_words=settings.truncate_words,
                               model_meta=meta)
        held_view = make_task(spec, data_dir=write_rows_dir(Path(tmp) / "held", spec, [rows[i] for i in heldout]),
                              name=f"{spec.task_name}__induce_rlprompt_heldout", truncate_words=settings.truncate_words,
                              model_meta=meta)
        train_scorer = ChoiceScorer(lm, train_view, score_tok)
        held_scorer = ChoiceScorer(lm, held_view, score_tok)
    position = {row: k for k, row in enumerate(pool)}

    start = time.monotonic()
    bar = tqdm(total=settings.steps, initial=state.step, unit="step", desc=f"rlprompt {spec.name}",
               disable=not progress, dynamic_ncols=True)
    try:
        while state.step < settings.steps:
            step = state.step
            policy.sync_target(POLYAK_RATE)
            sample = policy.sample(settings.prompt_batch, sample_gen)
            rng = induce_rng("rlprompt-inputs", spec.name, settings.seed, step)
            inputs = draw_rows(spec, rows, pool, settings.inputs_per_step, rng, f"RLPrompt step {step} inputs")
            rewards = train_scorer.rewards(sample.texts, [position[i] for i in inputs])
            raw = [r.reward for r in rewards]
            shaped = torch.tensor([shape(z) for z in zscore(raw)], dtype=torch.float32, device=device)
            target_logits = policy.teacher_forcing(sample.ids, target=True)
            loss = soft_q_loss(sample.logits, target_logits, sample.ids, shaped)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.mlp.parameters(), GRAD_CLIP)
            optimizer.step()
            for text, ids, r in zip(sample.texts, sample.ids.tolist(), rewards):
                seen = state.candidates.get(text)
                if seen is None or r.reward > seen.train_reward:
                    state.candidates[text] = Candidate(text, ids, step + 1, r.reward, r.accuracy)
            state.curve.append({"mean_reward": sum(raw) / len(raw), "max_reward": max(raw),
                                "mean_accuracy": sum(r.accuracy for r in rewards) / len(rewards),
                                "loss": float(loss.detach())})
            state.step += 1
            recent = state.curve[-10:]
            bar.set_postfix(reward=f"{sum(c['mean_reward'] for c in recent) / len(recent):.1f}",
                            best=f"{max(c.train_reward for c in state.candidates.values()):.1f}")
            bar.update(1)
            if state.step % settings.checkpoint_every == 0 or state.step == settings.steps:
                _save_checkpoint(checkpoint, {
                    "settings_fingerprint": settings_fp, "step": state.step, "policy": policy.trainable_state(),
                    "optimizer": optimizer.state_dict(), "generator": sample_gen.get_state(), "curve": state.curve,
                    "candidates": [vars(c) for c in state.candidates.values()],
                })
    finally:
        bar.close()
    train_seconds = time.monotonic() - start

    greedy_ids, greedy_text = policy.greedy()
    greedy = Candidate(greedy_text, greedy_ids.tolist(), settings.steps, math.nan, math.nan, source="greedy")
    ranked = sorted((c for c in state.candidates.values() if valid_prompt(c.text)), key=lambda c: -c.train_reward)
    finalists = ranked[: settings.finalists]
    if valid_prompt(greedy_text) and greedy_text not in {c.text for c in finalists}:
        finalists.append(greedy)
    if len(finalists) < settings.k:
        raise InduceError(f"{spec.task_name}: only {len(finalists)} distinct usable prompts were sampled, fewer than "
                          f"--k {settings.k}; train longer or with a larger --batch-size")
    start = time.monotonic()
    held = held_scorer.rewards([c.text for c in finalists], list(range(len(heldout))))
    for cand, r in zip(finalists, held):
        cand.heldout_reward, cand.heldout_accuracy = r.reward, r.accuracy
    heldout_seconds = time.monotonic() - start
    best = sorted(finalists, key=lambda c: -c.heldout_reward)[: settings.k]
    policy_info = {
        "policy_model": settings.policy_model or args_dict.get("pretrained") or "the evaluated model",
        "source_token": tokenizer.convert_ids_to_tokens(policy.source_id),
        "adaptor": "lm_head(MLP(h)), MLP = Linear(d, 2048) -> ReLU -> Linear(2048, d), xavier_uniform(gain 1e-4), "
                   "bias -1e-4; no residual (RLPrompt LMAdaptorModel)",
        "hidden_size": int(model.get_input_embeddings().weight.shape[1]),
        "excluded_actions": "the tokenizer's special tokens",
        "optimizer": f"Adam lr {settings.learning_rate}, gradient norm clip {GRAD_CLIP}",
        "target": f"polyak rate {POLYAK_RATE} every step",
        "loss": "soft Q-learning v2_v2r_v3_v3r (no reverse coefficient), on-policy",
        "sampling_rng": f"torch.Generator().manual_seed({settings.seed})",
        "init_rng": f"torch.Generator().manual_seed({settings.seed})",
    }
    return RLPromptResult(best, finalists, state.curve, greedy, heldout, "acc_per_token", train_seconds,
                          heldout_seconds, resumed_from, policy_info)
