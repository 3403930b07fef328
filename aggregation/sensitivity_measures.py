r"""Prompt-sensitivity measures of the literature, on one (model, task, setting)'s instructions.

Inputs are the per-instruction accuracies ``acc`` (fractions in [0, 1], one per instruction) or the
per-item matrix ``Y`` (``instructions x items``; 0/1 correctness, or an item's mean over an
instruction's demo sets) and, for POSIX, ``LL`` (``instructions x items`` log-likelihoods of the
gold answer). Accuracy-like measures are returned as fractions; the card prints them as points.

=====================  ======================================================================  ==========================
measure                formula                                                                 source
=====================  ======================================================================  ==========================
AvgP                   ``mean_i acc_i``                                                        Mizrahi et al. 2024
MaxP                   ``max_i acc_i``                                                         Mizrahi et al. 2024
spread                 ``max_i acc_i - min_i acc_i``                                           Sclar et al. 2024
CPS                    ``(1 - (MaxP - AvgP)) * MaxP``                                          Mizrahi et al. 2024
quantile q             ``np.quantile(acc, q)`` (linear interpolation)                          Polo et al. 2024
PSS                    ``mean_j  mean_{i<k} |Y_ij - Y_kj|``                                    Zhuo et al. 2024 (ProSA)
POSIX (gold answer)    ``mean_j  mean_{i!=k} |LL_ij - LL_kj|``                                 Chatterjee et al. 2024
instruction-effect SD  ``sqrt(max(0, (MS_inst - MS_resid) / J))`` (two-way ANOVA, REML)        random-effects model
=====================  ======================================================================  ==========================

Example:
    >>> import numpy as np
    >>> Y = np.array([[1, 1, 0, 1], [1, 0, 0, 1], [0, 1, 1, 1]], dtype=float)
    >>> acc = Y.mean(axis=1)
    >>> round(spread(acc), 3), round(cps(acc), 4), round(prompt_sensi_score(Y), 4)
    (0.25, 0.6875, 0.5)
"""

from __future__ import annotations

import numpy as np

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def avgp(acc: np.ndarray) -> float:
    """AvgP: the mean accuracy over instructions (Mizrahi et al. 2024, "State of What Art?").

    Example:
        >>> round(avgp(np.array([0.5, 0.7, 0.9])), 6)
        0.7
    """
    return float(np.mean(acc))


def maxp(acc: np.ndarray) -> float:
    """MaxP: the best instruction's accuracy (Mizrahi et al. 2024).

    Example:
        >>> maxp(np.array([0.5, 0.7, 0.9]))
        0.9
    """
    return float(np.max(acc))


def spread(acc: np.ndarray) -> float:
    """The spread ``max - min`` of accuracy over instructions (Sclar et al. 2024, FormatSpread).

    It grows with the number of instructions even when none matters: compare it with
    :func:`instruction_effect_sd`.

    Example:
        >>> round(spread(np.array([0.5, 0.7, 0.9])), 6)
        0.4
    """
    return float(np.max(acc) - np.min(acc))


def cps(acc: np.ndarray) -> float:
    """Combined performance score ``(1 - (MaxP - AvgP)) * MaxP`` (Mizrahi et al. 2024, sec. 4).

    ``1 - (MaxP - AvgP)`` is the paper's *saturation*: how close a typical instruction comes to
    the best one. Accuracies are fractions, as in the paper.

    Example:
        >>> round(cps(np.array([0.5, 0.7, 0.9])), 6)   # (1 - 0.2) * 0.9
        0.72
    """
    best = float(np.max(acc))
    return (1.0 - (best - float(np.mean(acc)))) * best


def quantiles(acc: np.ndarray, qs: tuple[float, ...] = QUANTILES) -> dict[str, float]:
    """Quantiles of accuracy over instructions (PromptEval, Polo et al. 2024), keyed ``q05``... ``q95``.

    Linear interpolation between order statistics (numpy's default, Hyndman-Fan type 7).

    Example:
        >>> quantiles(np.array([0.1, 0.2, 0.3, 0.4, 0.5]), (0.25, 0.5))
        {'q25': 0.2, 'q50': 0.3}
    """
    values = np.quantile(np.asarray(acc, dtype=np.float64), qs)
    return {f"q{round(q * 100):02d}": float(v) for q, v in zip(qs, values)}


def mean_abs_pair_difference(matrix: np.ndarray) -> np.ndarray:
    """Per column, the mean of ``|x_i - x_k|`` over the ``n (n - 1) / 2`` unordered row pairs (of the
    last two axes: ``... x rows x columns``, so a stack of matrices is done at once).

    ``sum_{i<k} |x_i - x_k| = sum_r (2r - n + 1) x_(r)`` over the column's sorted values ``x_(r)``
    (r = 0..n-1), which is O(n log n) instead of O(n^2).
    """
    n = matrix.shape[-2]
    ordered = np.sort(matrix, axis=-2)
    weights = 2.0 * np.arange(n) - n + 1.0
    return np.einsum("i,...ij->...j", weights, ordered) / (n * (n - 1) / 2.0)


def prompt_sensi_score(Y: np.ndarray) -> float:
    """ProSA's PromptSensiScore (Zhuo et al. 2024, eq. 1-2): instance-level disagreement between prompts.

    ``S_j = sum_{i<k} |Y_ij - Y_kj| / C(n, 2)`` for item j over the n instructions, and
    ``PSS = mean_j S_j``. With 0/1 correctness, ``S_j`` is the share of instruction pairs that
    disagree on item j; 0 when every instruction gets the item equally right or wrong. Needs
    ``n >= 2`` instructions.

    Example:
        >>> Y = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 0]], dtype=float)
        >>> round(prompt_sensi_score(Y), 4)   # items: 2/3, 2/3, 0 of the 3 pairs disagree
        0.4444
    """
    Y = np.asarray(Y, dtype=np.float64)
    return float(np.mean(mean_abs_pair_difference(Y)))


def posix_gold(LL: np.ndarray) -> float:
    """POSIX (Chatterjee et al. 2024, eq. 1) with the gold answer as the response, in nats.

    POSIX averages, over intent-aligned prompt sets (here: one test item under every
    instruction), ``1 / (N (N - 1)) sum_{i != k} |log P(y_k | x_i) / P(y_k | x_k)| / L_{y_k}``, with
    ``y_k`` the response generated for prompt ``x_k``. Here every ``y_k`` is the item's gold
    answer (the harness scores it by log-likelihood, so no generation is needed), which makes the
    term ``|LL_ij - LL_kj|`` symmetric, and the length divisor ``L`` is 1: the value is the mean
    absolute change, in nats, of the gold answer's log-likelihood between two instructions.
    (The reference implementation divides by a constant, ``max_new_tokens``.)

    Example:
        >>> LL = np.array([[-1.0, -2.0], [-3.0, -2.0], [-2.0, -2.5]])
        >>> round(posix_gold(LL), 4)   # item 1: (2 + 1 + 1) / 3; item 2: (0 + .5 + .5) / 3
        0.8333
    """
    LL = np.asarray(LL, dtype=np.float64)
    return float(np.mean(mean_abs_pair_difference(LL)))


def variance_components(Y: np.ndarray) -> tuple[float, float]:
    """``(instruction variance, residual variance)`` of ``Y_ij = mu + a_i + b_j + e_ij``.

    Two-way crossed random effects without replication (instructions i = 1..I, items j = 1..J),
    by the ANOVA estimator, which for this balanced design equals REML when it is positive:

        MS_inst  = J * sum_i (Ybar_i. - Ybar..)^2 / (I - 1)
        MS_resid = sum_ij (Y_ij - Ybar_i. - Ybar_.j + Ybar..)^2 / ((I - 1)(J - 1))
        s_a^2    = max(0, (MS_inst - MS_resid) / J)

    The item effects ``b_j`` are shared by every instruction, so they cancel from the
    comparison; ``MS_resid / J`` is the item-sampling noise in one instruction's accuracy.

    Example:
        >>> Y = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=float)
        >>> [round(v, 4) for v in variance_components(Y)]
        [0.0278, 0.1389]
    """
    between, resid = mean_square_components(np.asarray(Y, dtype=np.float64))
    return float(between), float(resid)


def mean_square_components(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`variance_components` of each ``instructions x items`` matrix of a stack ``... x I x J``."""
    n_inst, n_items = Y.shape[-2], Y.shape[-1]
    grand = Y.mean(axis=(-2, -1), keepdims=True)
    row = Y.mean(axis=-1, keepdims=True)
    col = Y.mean(axis=-2, keepdims=True)
    ms_inst = n_items * ((row - grand) ** 2).sum(axis=(-2, -1)) / (n_inst - 1)
    ms_resid = ((Y - row - col + grand) ** 2).sum(axis=(-2, -1)) / ((n_inst - 1) * (n_items - 1))
    between = (ms_inst - ms_resid) / n_items
    # Rounding leaves ~1e-17 where the two mean squares are equal: that is no instruction effect.
    return np.where(between > 1e-12, between, 0.0), ms_resid


def instruction_effect_sd(Y: np.ndarray) -> float:
    """The SD of the instructions' true accuracies beyond item noise (a fraction; see :func:`variance_components`).

    Unlike the spread or the SD of the observed accuracies, its expectation does not grow with the
    number of instructions nor shrink with the number of items when no instruction matters (it
    is then 0 up to noise). Needs at least 2 instructions and 2 items.

    Example:
        >>> Y = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=float)
        >>> round(instruction_effect_sd(Y), 4)   # sqrt((0.25 - 0.1389) / 4)
        0.1667
    """
    return float(np.sqrt(variance_components(Y)[0]))


def item_noise_sd(Y: np.ndarray) -> float:
    """The item-sampling SD of one instruction's accuracy, ``sqrt(MS_resid / J)`` (a fraction).

    Example:
        >>> Y = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=float)
        >>> round(item_noise_sd(Y), 4)   # sqrt(0.1389 / 4)
        0.1863
    """
    return float(np.sqrt(variance_components(Y)[1] / Y.shape[1]))
