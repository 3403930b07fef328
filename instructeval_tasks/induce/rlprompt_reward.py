"""RLPrompt's classification reward, computed with this project's prompts and scoring rule.

Deng et al. 2022 (RLPrompt, Sec. 2.3 and ``examples/few-shot-classification/fsc_reward.py``).
For one prompt ``z`` and a batch of inputs ``x_1..x_N`` with gold classes ``y_i``:

1. **Class scores.** ``s_c(z, x)`` = the target model's mean per-token log-likelihood of
   choice ``c`` (the verbalizer, or the item's answer for multiple choice) after the zero-shot
   prompt ``z.lstrip() + "\\n\\n" + block(x)`` -- the task's own prompt with ``z`` as the
   instruction, scored through the harness (``lm.loglikelihood``) exactly like ``acc_per_token``.
   ``p_c = softmax_c(s_c)``. For one-token verbalizers this is RLPrompt's softmax of the
   next-token logits over the verbalizer tokens; for longer ones it is the same softmax of the
   project's per-token scores (the project's decision rule predicts ``argmax_c s_c``).
2. **Gap reward** (RLPrompt's piecewise reward, ``lambda_1 = 180`` incorrect, ``lambda_2 = 200``
   correct)::

       gap_i = p_{y_i} - max_{c != y_i} p_c
       R(z, x_i) = gap_i * (200 if gap_i > 0 else 180)
       R(z) = (1/N) sum_i R(z, x_i)                      # the prompt's reward on the batch

3. **Z-score** (``compute_zscore: true``): the ``B`` prompts sampled in one step all score the
   same input batch; their rewards are normalised across the prompts,
   ``z_b = (R(z_b) - mean_b R) / (std_b R + 1e-4)`` (population std, as ``np.std``).
4. **Shaping** (``SQLModule`` reward shaping, few-shot classification config: ``[0, 1] -> [0, 5]``)::

       shaped = (z - 0) / (1 - 0) * (5 - 0) + 0 = 5 z

RLPrompt's own ``not_label_probs`` masks every class whose probability *equals* the gold one
(so an exact tie counts as a gap of the best other class); here the best wrong class is the
maximum over ``c != y``, so a tie gives ``gap = 0``, an incorrect prediction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import torch

CORRECT_COEFF = 200.0    # PromptedClassificationRewardConfig.correct_coeff (lambda_2)
INCORRECT_COEFF = 180.0  # PromptedClassificationRewardConfig.incorrect_coeff (lambda_1)
ZSCORE_EPS = 1e-4
SHAPING = (0.0, 1.0, 0.0, 5.0)  # reward_shaping_old_min, old_max, new_min, new_max (fsc config)

REWARD_DEFINITION = (
    "s_c = mean per-token log-likelihood of choice c after the zero-shot prompt "
    "z.lstrip() + '\\n\\n' + block(x) (the task's own prompt and acc_per_token scoring); p = softmax_c(s); "
    "gap = p_gold - max_{c != gold} p_c; R(z, x) = gap * (200 if gap > 0 else 180); R(z) = mean over the "
    "inputs (RLPrompt's classification reward). Training: z-score of R across the prompts sampled for "
    "the same input batch, then shaping [0, 1] -> [0, 5]."
)


@dataclass
class GapReward:
    """One prompt's reward on a batch: per-input rewards, their mean, and the per-input correctness.

    ``correct``: ``gap > 0`` (RLPrompt's piecewise switch); ``hits``: the project's prediction
    ``argmax_c s_c`` (first choice on ties) is the gold one -- what ``acc_per_token`` counts.
    """

    per_input: list[float]
    correct: list[bool]
    hits: list[bool]

    @property
    def reward(self) -> float:
        return sum(self.per_input) / len(self.per_input)

    @property
    def accuracy(self) -> float:
        return sum(self.hits) / len(self.hits)


def gap_reward(
    scores: Sequence[Sequence[float]], golds: Sequence[int], *,
    correct_coeff: float = CORRECT_COEFF, incorrect_coeff: float = INCORRECT_COEFF,
) -> GapReward:
    """RLPrompt's piecewise gap reward of one prompt from its class scores (see the module doc).

    Example (two inputs, two classes; probabilities 0.75/0.25 and 0.5/0.5):
        >>> r = gap_reward([[math.log(3), 0.0], [0.0, 0.0]], [0, 1])
        >>> [round(v, 6) for v in r.per_input], r.correct, r.hits, round(r.reward, 6)
        ([100.0, 0.0], [True, False], [True, False], 50.0)
    """
    if len(scores) != len(golds) or not scores:
        raise ValueError(f"gap_reward needs one score row per gold label ({len(scores)} rows, {len(golds)} labels)")
    per_input, correct, hits = [], [], []
    for row, gold in zip(scores, golds):
        if len(row) < 2:
            raise ValueError("the gap reward needs at least two choices per input")
        probs = torch.softmax(torch.tensor([float(s) for s in row], dtype=torch.float64), dim=0).tolist()
        best_wrong = max(p for c, p in enumerate(probs) if c != gold)
        gap = probs[gold] - best_wrong
        is_correct = gap > 0
        per_input.append(gap * (correct_coeff if is_correct else incorrect_coeff))
        correct.append(bool(is_correct))
        values = [float(s) for s in row]
        hits.append(values.index(max(values)) == gold)
    return GapReward(per_input, correct, hits)


def zscore(rewards: Sequence[float], eps: float = ZSCORE_EPS) -> list[float]:
    """``(r - mean) / (std + eps)`` across the prompts of one step (population std).

    Example:
        >>> [round(v, 4) for v in zscore([1.0, 3.0])]
        [-0.9999, 0.9999]
    """
    n = len(rewards)
    mean = sum(rewards) / n
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / n)
    return [(r - mean) / (std + eps) for r in rewards]


def shape(value: float, bounds: tuple[float, float, float, float] = SHAPING) -> float:
    """RLPrompt's linear reward shaping ``[old_min, old_max] -> [new_min, new_max]``.

    Example:
        >>> shape(0.5), shape(-1.0)
        (2.5, -5.0)
    """
    old_min, old_max, new_min, new_max = bounds
    return (value - old_min) / (old_max - old_min) * (new_max - new_min) + new_min


def gold_index(task_obj: Any, doc: Mapping[str, Any], choices: Sequence[str]) -> int:
    """The gold choice's index (targets may be an index, a digit string, or the choice text)."""
    target = task_obj.doc_to_target(dict(doc))
    if isinstance(target, bool):
        target = str(target)
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target in choices:
        return list(choices).index(target)
    if isinstance(target, str) and target.isdigit():
        return int(target)
    raise ValueError(f"cannot find the gold choice {target!r} among {list(choices)}")


class ChoiceScorer:
    """Class scores ``s_c(z, x)`` of instructions on fixed train docs, through the harness model.

    ``view`` is an ``InstructEvalTask`` over train rows (``induce.common.make_task``); its
    ``eval_docs`` are the inputs (text fields already truncated). A prompt's contexts are
    ``Instruction(z).description + view.doc_to_text(doc)`` -- what ``fewshot_context`` builds for a
    task with ``z`` as its instruction -- and the requests are the view's own ``construct_requests``.
    """

    def __init__(self, lm: Any, view: Any, tokenizer: Any) -> None:
        self.lm = lm
        self.view = view
        self.tokenizer = tokenizer
        self.docs = list(view.eval_docs)
        self.blocks = [view.doc_to_text(doc) for doc in self.docs]
        self.choices = [list(view.doc_to_choice(doc)) for doc in self.docs]
        self.golds = [gold_index(view, doc, ch) for doc, ch in zip(self.docs, self.choices)]

    @staticmethod
    def context(instruction: str, block: str) -> str:
        from ..instruction import Instruction

        return Instruction(instruction, "rlprompt", "rlprompt", None, "induce").description + block

    def scores(self, instructions: Sequence[str], doc_ids: Sequence[int]) -> list[list[list[float]]]:
        """``[prompt][input][choice]`` mean per-token log-likelihoods, one ``loglikelihood`` call."""
        from ..scoring import continuation_token_count

        requests, where = [], []
        for p, text in enumerate(instructions):
            for i in doc_ids:
                ctx = self.context(text, self.blocks[i])
                for c, req in enumerate(self.view.construct_requests(self.docs[i], ctx)):
                    req.idx = len(requests)
                    requests.append(req)
                    where.append((p, i, c, continuation_token_count(self.tokenizer, *req.arguments)))
        results = self.lm.loglikelihood(requests, disable_tqdm=True)
        if len(results) != len(requests):
            raise RuntimeError(f"loglikelihood returned {len(results)} results for {len(requests)} requests")
        pos = {i: k for k, i in enumerate(doc_ids)}
        out = [[[0.0] * len(self.choices[i]) for i in doc_ids] for _ in instructions]
        for (p, i, c, count), res in zip(where, results):
            ll = res[0] if isinstance(res, (tuple, list)) else res
            out[p][pos[i]][c] = float(ll) / count
        return out

    def rewards(self, instructions: Sequence[str], doc_ids: Sequence[int]) -> list[GapReward]:
        """The gap reward of each instruction on the inputs ``doc_ids`` (indices into ``docs``)."""
        golds = [self.golds[i] for i in doc_ids]
        return [gap_reward(rows, golds) for rows in self.scores(instructions, doc_ids)]
