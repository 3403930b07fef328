"""RLPrompt's soft Q-learning loss with a sparse (end-of-prompt) reward.

Deng et al. 2022 train the policy with soft Q-learning (Guo et al. 2021, "Efficient (Soft)
Q-Learning for Text Generation with Limited Good Data"): the policy's logits are read as Q values,
``V = logsumexp(Q)``, ``A = Q(a) - V``; a target network (logits ``Q'``, ``V' = logsumexp(Q')``)
gives the regression targets. RLPrompt's default, ``sql_loss_impl: v2_v2r_v3_v3r`` without a
reverse coefficient, is the mean of the single-step (``v2``) and multi-step (``v3``) path
consistency losses (``rlprompt/losses/sql_losses.py``). With ``T`` prompt tokens and the shaped
reward ``r`` arriving after the last one::

    v2:  A_t  ~  V'_{t+1} - V'_t      (t < T-1)        A_{T-1}  ~  r - V'_{T-1}
    v3:  sum_{s >= t} A_s  ~  r - V'_t
    loss = mean_batch  sum_t  ((v2_t - target)^2 + (v3_t - target)^2) / 2

(squared errors summed over the ``T`` steps and averaged over the batch, as ``mask_and_reduce``).
Training is on-policy (``training_mode: sql-onpolicy``): the actions are the prompts just sampled.
"""

from __future__ import annotations

import torch


def soft_q_loss(logits: torch.Tensor, target_logits: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> torch.Tensor:
    """The ``v2_v2r_v3_v3r`` loss (see the module doc). Shapes: ``[B, T, V]``, ``[B, T, V]``, ``[B, T]``, ``[B]``."""
    if logits.shape != target_logits.shape or actions.shape != logits.shape[:2] or rewards.shape != logits.shape[:1]:
        raise ValueError(f"shape mismatch: {logits.shape}, {target_logits.shape}, {actions.shape}, {rewards.shape}")
    rewards = rewards.to(logits.dtype)
    q = logits.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    v = logits.logsumexp(dim=-1)
    a = q - v
    v_target = target_logits.detach().logsumexp(dim=-1)
    # v2: one-step targets
    a_target = torch.zeros_like(a)
    a_target[:, :-1] = v_target[:, 1:] - v_target[:, :-1]
    a_target[:, -1] = rewards - v_target[:, -1]
    loss_v2 = (a - a_target) ** 2
    # v3: multi-step (reverse cumulative sum of A)
    a_future = a.flip(dims=[1]).cumsum(dim=1).flip(dims=[1])
    loss_v3 = (a_future - (rewards.unsqueeze(1) - v_target)) ** 2
    return ((loss_v2 + loss_v3) / 2).sum(dim=1).mean()
