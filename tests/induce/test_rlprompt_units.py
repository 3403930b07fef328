"""RLPrompt pieces by hand: the gap reward, z-score, shaping, soft Q-learning loss, top-k sampling."""

from __future__ import annotations

import math

import pytest
import torch

from instructeval_tasks.induce.rlprompt_reward import gap_reward, shape, zscore
from instructeval_tasks.induce.rlprompt_sql import soft_q_loss
from instructeval_tasks.induce.rlprompt_policy import PromptPolicy, build_adaptor_mlp, top_k_logits


def test_gap_reward_by_hand():
    """p = (0.5, 0.3, 0.2). Gold 0: gap 0.5-0.3 = 0.2, correct -> 0.2*200 = 40.
    Gold 2: gap 0.2-0.5 = -0.3, incorrect -> -0.3*180 = -54. Mean -7. Scores are any log-scale
    values: softmax of log-probabilities gives the probabilities back."""
    row = [math.log(0.5), math.log(0.3), math.log(0.2)]
    r = gap_reward([row, row], [0, 2])
    assert r.per_input == pytest.approx([40.0, -54.0])
    assert r.reward == pytest.approx(-7.0)
    assert r.correct == [True, False] and r.hits == [True, False] and r.accuracy == 0.5
    # shifting the scores of an input changes nothing (softmax), scaling them does
    shifted = gap_reward([[s + 7.0 for s in row]], [0])
    assert shifted.per_input == pytest.approx([40.0])
    # per-token scores that are not normalised: p = softmax(-1, -2) = (0.7310586, 0.2689414)
    r2 = gap_reward([[-1.0, -2.0]], [1])
    assert r2.per_input == pytest.approx([(0.2689414 - 0.7310586) * 180], abs=1e-4)
    # an exact tie: gap 0 counts as incorrect (reward 0), while the decision rule's first-wins
    # argmax predicts the first choice, so gold 0 is a hit
    tie = gap_reward([[-1.0, -1.0], [-1.0, -1.0]], [0, 1])
    assert tie.per_input == [0.0, 0.0] and tie.correct == [False, False] and tie.hits == [True, False]
    with pytest.raises(ValueError):
        gap_reward([[0.0, 1.0]], [0, 1])


def test_zscore_and_shaping_by_hand():
    """[1, 2, 3]: mean 2, population std sqrt(2/3) = 0.816497 -> -1/(0.816497+1e-4) = -1.224595."""
    assert zscore([1.0, 2.0, 3.0]) == pytest.approx([-1.224595, 0.0, 1.224595], abs=1e-6)
    assert zscore([4.0, 4.0]) == [0.0, 0.0]  # equal rewards: no signal, no division by zero
    assert zscore([10.0, 30.0]) == pytest.approx([-10 / 10.0001, 10 / 10.0001])
    assert [shape(v) for v in (-1.0, 0.0, 0.4)] == pytest.approx([-5.0, 0.0, 2.0])


def test_soft_q_loss_by_hand():
    """B=1, T=2, V=2, policy = target logits [[0, ln 3], [0, 0]], actions (1, 0), reward 1.
    A_0 = ln3 - ln4, A_1 = -ln2; V'_0 = ln4, V'_1 = ln2.
    v2: (A_0 - (V'_1 - V'_0))^2 = ln(1.5)^2 = 0.164402; (A_1 - (1 - V'_1))^2 = 1.
    v3: (A_0 + A_1 - (1 - V'_0))^2 = (ln 1.5 - 1)^2 = 0.353472; (A_1 - (1 - V'_1))^2 = 1.
    loss = (0.164402 + 0.353472)/2 + (1 + 1)/2 = 1.258937."""
    logits = torch.tensor([[[0.0, math.log(3.0)], [0.0, 0.0]]], dtype=torch.float64, requires_grad=True)
    loss = soft_q_loss(logits, logits.detach().clone(), torch.tensor([[1, 0]]), torch.tensor([1.0], dtype=torch.float64))
    assert loss.item() == pytest.approx(1.258937, abs=1e-6)
    loss.backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all()
    # the batch is averaged: two copies give the same loss
    two = soft_q_loss(logits.detach().repeat(2, 1, 1), logits.detach().repeat(2, 1, 1), torch.tensor([[1, 0], [1, 0]]),
                      torch.tensor([1.0, 1.0], dtype=torch.float64))
    assert two.item() == pytest.approx(1.258937, abs=1e-6)


def test_top_k_keeps_the_k_largest_and_ties():
    logits = torch.tensor([[0.5, 2.0, -1.0, 2.0, 1.0]])
    assert top_k_logits(logits, 3).tolist() == [[-math.inf, 2.0, -math.inf, 2.0, 1.0]]
    assert top_k_logits(logits, 2).tolist() == [[-math.inf, 2.0, -math.inf, 2.0, -math.inf]]
    assert top_k_logits(logits, None) is logits


def test_adaptor_init_is_near_zero_and_seeded():
    a = build_adaptor_mlp(8, 16, generator=torch.Generator().manual_seed(3))
    b = build_adaptor_mlp(8, 16, generator=torch.Generator().manual_seed(3))
    c = build_adaptor_mlp(8, 16, generator=torch.Generator().manual_seed(4))
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert not torch.equal(a[0].weight, c[0].weight)
    assert a[0].weight.abs().max() < 1e-4 and torch.all(a[2].bias == -1e-4)


@pytest.fixture(scope="module")
def tiny_policy_parts(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir), dtype=torch.float32).eval()
    return model, tok


def test_policy_sampling_is_top_k_seeded_and_consistent_with_teacher_forcing(tiny_policy_parts):
    model, tok = tiny_policy_parts
    policy = PromptPolicy(model, tok, prompt_tokens=4, top_k=5, generator=torch.Generator().manual_seed(0))
    # the target network starts as a copy of the policy's adaptor
    assert all(torch.equal(a, b) for a, b in zip(policy.mlp.state_dict().values(), policy.target_mlp.state_dict().values()))
    with torch.no_grad():  # a trained-looking adaptor: logits far from uniform
        policy.mlp[2].bias.copy_(torch.randn(policy.mlp[2].bias.shape, generator=torch.Generator().manual_seed(1)))
    first = policy.sample(6, torch.Generator().manual_seed(11))
    again = policy.sample(6, torch.Generator().manual_seed(11))
    other = policy.sample(6, torch.Generator().manual_seed(12))
    assert first.ids.shape == (6, 4) and first.logits.shape[:2] == (6, 4)
    assert torch.equal(first.ids, again.ids) and first.texts == again.texts
    assert not torch.equal(first.ids, other.ids)
    # every action is among the 5 largest logits of its step, and never a special token
    for b in range(6):
        for t in range(4):
            top = torch.topk(first.logits[b, t], 5).indices.tolist()
            assert first.ids[b, t].item() in top
    special = set(tok.all_special_ids)
    assert not special & set(first.ids.flatten().tolist())
    assert torch.isinf(first.logits[..., sorted(special)]).all()
    # one forward over source + prompt gives the same per-step logits as incremental sampling
    forced = policy.teacher_forcing(first.ids, target=False)
    assert torch.allclose(forced, first.logits, atol=1e-4, rtol=1e-4)
    # the target network reads the same states through its own adaptor and follows the policy by polyak averaging
    target = policy.teacher_forcing(first.ids, target=True)
    assert not target.requires_grad and not torch.allclose(target, first.logits)
    before = policy.target_mlp[2].bias.clone()
    policy.sync_target(0.5)
    assert torch.allclose(policy.target_mlp[2].bias, 0.5 * before + 0.5 * policy.mlp[2].bias)
    # the frozen LM gets no gradient; the adaptor does
    first.logits[:, :, first.ids[0, 0]].sum().backward()
    assert all(p.grad is None for p in model.parameters())
    assert policy.mlp[0].weight.grad is not None
    assert policy.decode(first.ids[:1]) == [tok.convert_tokens_to_string(tok.convert_ids_to_tokens(first.ids[0].tolist()))]
