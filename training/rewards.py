"""Rewards for RL on CompoWorld tasks: the Completion-Focused Rubric Reward and two baselines.

**CFRR.** For a group of G rollouts of one task, with positive criteria k = 1..K, base weights
w_k and pass indicators s_ik in [0, 1]:

    p_k = mean_i s_ik                       (the group's pass rate of criterion k)
    f_k = w_k * ((1 - p_k) + epsilon)       (criteria few rollouts pass weigh most)
    r_i = sum_k f_k s_ik / sum_k f_k  +  beta * [rollout i passes every criterion]

Defaults: epsilon = 0.1, beta = 0.5. Criteria every rollout already passes keep only the small
weight epsilon * w_k, so the policy is pushed to finish the whole workflow instead of collecting
easy criteria again. When all pass rates are equal, f_k is proportional to w_k and r_i is the
plain weighted rubric fraction (plus the completion bonus). Negative criteria (collateral damage)
then apply as for the net score: a failed one zeroes the reward, or subtracts ``penalty`` per
failure when a penalty is given.

Baselines: :func:`rubric_fraction` (the weighted fraction of positive criteria passed) and
:func:`binary_success` (1 when every criterion passes). All three are pure functions of the pass
matrix; :mod:`training.grpo` wraps them as TRL reward functions.
"""

from __future__ import annotations

from collections.abc import Sequence

Matrix = Sequence[Sequence[float]]


def _weights(passes: Matrix, weights: Sequence[float] | None) -> list[float]:
    k = len(passes[0]) if passes else 0
    chosen = list(weights) if weights is not None else [1.0] * k
    if len(chosen) != k:
        raise ValueError(f"{len(chosen)} weights for {k} criteria")
    if any(w <= 0 for w in chosen):
        raise ValueError("criterion weights must be positive")
    return chosen


def _apply_negatives(
    rewards: list[float], negatives: Sequence[Sequence[bool]] | None, penalty: float | None
) -> list[float]:
    if negatives is None:
        return rewards
    out = []
    for reward, row in zip(rewards, negatives, strict=True):
        failed = sum(1 for ok in row if not ok)
        if failed == 0:
            out.append(reward)
        elif penalty is None:
            out.append(0.0)
        else:
            out.append(max(0.0, reward - penalty * failed))
    return out


def cfrr(
    passes: Matrix,
    weights: Sequence[float] | None = None,
    epsilon: float = 0.1,
    beta: float = 0.5,
    negatives: Sequence[Sequence[bool]] | None = None,
    penalty: float | None = None,
) -> list[float]:
    """CFRR for one group: ``passes[i][k]`` is rollout i's result on positive criterion k."""
    if not passes:
        return []
    w = _weights(passes, weights)
    if not w:
        return [0.0 for _ in passes]
    group = len(passes)
    rates = [sum(row[k] for row in passes) / group for k in range(len(w))]
    focus = [w[k] * ((1.0 - rates[k]) + epsilon) for k in range(len(w))]
    total = sum(focus)
    rewards = []
    for row in passes:
        value = sum(f * s for f, s in zip(focus, row, strict=True)) / total
        complete = all(s >= 1.0 for s in row)
        rewards.append(value + (beta if complete else 0.0))
    return _apply_negatives(rewards, negatives, penalty)


def rubric_fraction(
    passes: Matrix,
    weights: Sequence[float] | None = None,
    negatives: Sequence[Sequence[bool]] | None = None,
    penalty: float | None = None,
) -> list[float]:
    """The weighted fraction of positive criteria each rollout passes (the rubric score)."""
    if not passes:
        return []
    w = _weights(passes, weights)
    total = sum(w)
    rewards = [sum(wk * s for wk, s in zip(w, row, strict=True)) / total if total else 0.0 for row in passes]
    return _apply_negatives(rewards, negatives, penalty)


def binary_success(passes: Matrix, negatives: Sequence[Sequence[bool]] | None = None) -> list[float]:
    """1.0 when a rollout passes every positive (and negative) criterion, else 0.0."""
    rewards = [1.0 if all(s >= 1.0 for s in row) else 0.0 for row in passes]
    return _apply_negatives(rewards, negatives, None)
