"""RLPrompt's policy: a frozen causal LM with a trainable MLP on its last hidden state.

Deng et al. 2022 (RLPrompt), ``rlprompt/models/lm_adaptor_model.py`` (``LMAdaptorModel``) and
``single_prompt_model.py``: the policy reads a fixed source string (GPT-2's ``<|endoftext|>``; here
the policy tokenizer's BOS token, else its EOS token) and emits a prompt of ``T`` tokens (default
5), one token per step. At step ``t`` with ``h_t`` the frozen LM's final-layer hidden state (after
its final norm) at the last token so far::

    logits_t = lm_head(MLP(h_t))          MLP(h) = W2 relu(W1 h + b1) + b2    (d -> 2048 -> d)
    a_t ~ Categorical(top_k(logits_t, k))  (k = 256 in RLPrompt's few-shot classification config)

``lm_head`` is the frozen LM's own output layer. As in ``LMAdaptorModel`` the MLP output *replaces*
``h_t`` before ``lm_head`` (no residual connection), and the MLP is initialised near zero
(``xavier_uniform_(gain=1e-4)``, biases ``-1e-4``), so the untrained policy is close to uniform
over the vocabulary and top-k sampling explores from there. ``top_k`` keeps the ``k`` largest
logits (ties at the k-th value are kept, like RLPrompt's ``_top_k_logits``) and sets the rest to
``-inf``.

Departures (written down in docs/banks.md, *RLPrompt banks*): the sampled token *ids* are fed back to the frozen LM
(RLPrompt converts each token to a string and re-tokenises it); the tokenizer's special tokens
are not actions (their logits are ``-inf``), since their text would change meaning when the prompt
is tokenised again; every random draw uses the caller's ``torch.Generator``.

Because the frozen LM's hidden states depend only on the tokens, one forward pass over the
source and the sampled tokens gives ``h_0 .. h_{T-1}`` for teacher forcing, and the policy and its
target network (a second MLP) both read the same states.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ..backend.kv import cache_argument, output_cache

MLP_HIDDEN = 2048  # LMAdaptorModelConfig.hidden_size
INIT_GAIN = 1e-4   # LMAdaptorModel._init_weights: xavier_uniform_(gain=0.0001), bias -0.0001
INIT_BIAS = -1e-4
TOP_K = 256        # few-shot classification config: top_k: 256


def build_adaptor_mlp(dim: int, hidden: int = MLP_HIDDEN, *, generator: torch.Generator | None = None) -> nn.Sequential:
    """``Linear(dim, hidden) -> ReLU -> Linear(hidden, dim)``, initialised as ``LMAdaptorModel``."""
    mlp = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, dim))
    for layer in (mlp[0], mlp[2]):
        nn.init.xavier_uniform_(layer.weight, gain=INIT_GAIN, generator=generator)
        with torch.no_grad():
            layer.bias.fill_(INIT_BIAS)
    return mlp


def top_k_logits(logits: torch.Tensor, k: int | None) -> torch.Tensor:
    """``logits`` with every value below the ``k``-th largest of its row set to ``-inf``.

    Example:
        >>> top_k_logits(torch.tensor([[1.0, 3.0, 2.0, 3.0]]), 2).tolist()
        [[-inf, 3.0, -inf, 3.0]]
    """
    if k is None or k >= logits.shape[-1]:
        return logits
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


@dataclass
class PromptSample:
    """``B`` sampled prompts: token ids ``[B, T]``, the policy's logits ``[B, T, V]`` and the texts."""

    ids: torch.Tensor
    logits: torch.Tensor
    texts: list[str]


class PromptPolicy(nn.Module):
    """Frozen causal LM + trainable adaptor MLP (the policy) and its target copy (see the module doc)."""

    def __init__(self, model: Any, tokenizer: Any, *, prompt_tokens: int = 5, top_k: int | None = TOP_K,
                 hidden: int = MLP_HIDDEN, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.__dict__["lm"] = model  # not a submodule: it stays frozen, in eval mode, out of state_dict()
        for param in self.lm.parameters():
            param.requires_grad_(False)
        self.tokenizer = tokenizer
        self.prompt_tokens = int(prompt_tokens)
        self.top_k = top_k
        dim = int(model.get_input_embeddings().weight.shape[1])
        self.mlp = build_adaptor_mlp(dim, hidden, generator=generator)
        self.target_mlp = copy.deepcopy(self.mlp)
        for param in self.target_mlp.parameters():
            param.requires_grad_(False)
        source = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        if source is None:
            raise ValueError("the policy tokenizer has neither a BOS nor an EOS token to start prompts from")
        self.source_id = int(source)
        vocab = int(model.get_output_embeddings().weight.shape[0])
        banned = torch.zeros(vocab, dtype=torch.bool)
        for token_id in getattr(tokenizer, "all_special_ids", []) or []:
            if 0 <= token_id < vocab:
                banned[token_id] = True
        banned[len(tokenizer):] = True  # padding rows of the embedding matrix are no tokens
        self.register_buffer("banned", banned, persistent=False)

    # ---------------------------------------------------------------- frozen LM

    def _decoder(self):
        base = getattr(self.lm, "base_model_prefix", None)
        return getattr(self.lm, base) if base and hasattr(self.lm, base) else self.lm.model

    def _lm_head(self, state: torch.Tensor) -> torch.Tensor:
        return self.lm.get_output_embeddings()(state)

    @torch.no_grad()
    def _states(self, ids: torch.Tensor, past=None):
        decoder = self._decoder()
        out = decoder(input_ids=ids, use_cache=True, **{cache_argument(decoder.forward) or "past_key_values": past})
        return out.last_hidden_state, output_cache(out)

    def _logits(self, mlp: nn.Module, state: torch.Tensor) -> torch.Tensor:
        logits = self._lm_head(mlp(state))
        return logits.masked_fill(self.banned.to(logits.device), float("-inf"))

    # ---------------------------------------------------------------- policy

    def sample(self, batch_size: int, generator: torch.Generator) -> PromptSample:
        """Sample ``batch_size`` prompts token by token (top-k), keeping the policy logits for the loss."""
        device = self.banned.device
        ids = torch.full((batch_size, 1), self.source_id, dtype=torch.long, device=device)
        states, past = self._states(ids)
        state = states[:, -1]
        actions, all_logits = [], []
        for _ in range(self.prompt_tokens):
            logits = self._logits(self.mlp, state)
            probs = torch.softmax(top_k_logits(logits.detach(), self.top_k), dim=-1)
            action = torch.multinomial(probs, 1, generator=generator)  # [B, 1]
            actions.append(action)
            all_logits.append(logits)
            states, past = self._states(action, past)
            state = states[:, -1]
        sample_ids = torch.cat(actions, dim=1)
        return PromptSample(sample_ids, torch.stack(all_logits, dim=1), self.decode(sample_ids))

    def teacher_forcing(self, sample_ids: torch.Tensor, *, target: bool) -> torch.Tensor:
        """Logits ``[B, T, V]`` of the policy (or of its target network) along given prompt ids."""
        source = torch.full((sample_ids.shape[0], 1), self.source_id, dtype=torch.long, device=sample_ids.device)
        states, _ = self._states(torch.cat([source, sample_ids[:, :-1]], dim=1))
        if target:
            with torch.no_grad():
                return self._logits(self.target_mlp, states)
        return self._logits(self.mlp, states)

    @torch.no_grad()
    def greedy(self) -> tuple[torch.Tensor, str]:
        """The policy's greedy prompt (RLPrompt's inference output): argmax token at every step."""
        ids = torch.full((1, 1), self.source_id, dtype=torch.long, device=self.banned.device)
        states, past = self._states(ids)
        out = []
        for _ in range(self.prompt_tokens):
            action = self._logits(self.mlp, states[:, -1]).argmax(dim=-1, keepdim=True)
            out.append(action)
            states, past = self._states(action, past)
        sample_ids = torch.cat(out, dim=1)
        return sample_ids[0], self.decode(sample_ids)[0]

    @torch.no_grad()
    def sync_target(self, rate: float) -> None:
        """Polyak update ``target <- (1 - rate) * target + rate * policy`` (RLPrompt: every step, 0.001)."""
        for tgt, src in zip(self.target_mlp.parameters(), self.mlp.parameters()):
            tgt.copy_((1.0 - rate) * tgt + rate * src)

    def decode(self, sample_ids: torch.Tensor) -> list[str]:
        """Prompt texts: the tokens' strings joined (``convert_tokens_to_string``, as RLPrompt)."""
        return [
            self.tokenizer.convert_tokens_to_string(self.tokenizer.convert_ids_to_tokens(row))
            for row in sample_ids.tolist()
        ]

    def trainable_state(self) -> dict[str, Any]:
        return {"mlp": self.mlp.state_dict(), "target_mlp": self.target_mlp.state_dict()}

    def load_trainable_state(self, state: dict[str, Any]) -> None:
        self.mlp.load_state_dict(state["mlp"])
        self.target_mlp.load_state_dict(state["target_mlp"])
