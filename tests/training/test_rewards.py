"""CFRR against hand-computed groups, and the two baseline rewards."""

from __future__ import annotations

import pytest

from training.rewards import binary_success, cfrr, rubric_fraction


def test_rarest_passed_criterion_weighs_most() -> None:
    # criterion 0 passed by 3 of 4 rollouts, criterion 1 by 1 of 4: passing the rare one pays more
    passes = [[1, 0], [1, 0], [1, 0], [0, 1]]
    rewards = cfrr(passes, epsilon=0.1, beta=0.0)
    f0, f1 = (1 - 0.75) + 0.1, (1 - 0.25) + 0.1  # 0.35, 0.85
    assert rewards[0] == pytest.approx(f0 / (f0 + f1))
    assert rewards[3] == pytest.approx(f1 / (f0 + f1))
    assert rewards[3] > rewards[0]
    assert rubric_fraction(passes) == [0.5, 0.5, 0.5, 0.5]  # the plain fraction cannot tell them apart


def test_all_pass_group_gets_one_plus_bonus() -> None:
    assert cfrr([[1, 1, 1], [1, 1, 1]], beta=0.5) == [pytest.approx(1.5), pytest.approx(1.5)]


def test_all_fail_group_gets_zero() -> None:
    assert cfrr([[0, 0], [0, 0], [0, 0]]) == [0.0, 0.0, 0.0]


def test_partial_credit_with_weights() -> None:
    passes = [[1, 0, 1], [0, 0, 1]]
    weights = [2.0, 1.0, 1.0]
    # pass rates 0.5, 0, 1 -> f = 2*(0.6), 1*(1.1), 1*(0.1) = 1.2, 1.1, 0.1; total 2.4
    rewards = cfrr(passes, weights, epsilon=0.1, beta=0.5)
    assert rewards[0] == pytest.approx((1.2 + 0.1) / 2.4)
    assert rewards[1] == pytest.approx(0.1 / 2.4)


def test_completion_bonus_goes_only_to_complete_rollouts() -> None:
    rewards = cfrr([[1, 1], [1, 0]], epsilon=0.1, beta=0.5)
    # rates 1, 0.5 -> f = 0.1, 0.6
    assert rewards[0] == pytest.approx(1.0 + 0.5)
    assert rewards[1] == pytest.approx(0.1 / 0.7)


def test_equal_pass_rates_reduce_to_the_rubric_fraction() -> None:
    passes = [[1, 0, 1, 0], [0, 1, 0, 1]]  # every criterion has pass rate 0.5
    weights = [1.0, 2.0, 3.0, 4.0]
    plain = rubric_fraction(passes, weights)
    focused = cfrr(passes, weights, epsilon=0.1, beta=0.5)
    assert focused == pytest.approx(plain)


def test_negative_criteria_zero_or_penalise() -> None:
    passes = [[1, 1], [1, 1]]
    negatives = [[True], [False]]
    assert cfrr(passes, beta=0.0, negatives=negatives) == [pytest.approx(1.0), 0.0]
    assert cfrr(passes, beta=0.0, negatives=negatives, penalty=0.25) == [pytest.approx(1.0), pytest.approx(0.75)]


def test_binary_success() -> None:
    assert binary_success([[1, 1], [1, 0]]) == [1.0, 0.0]
    assert binary_success([[1, 1]], negatives=[[False]]) == [0.0]


def test_bad_weights_are_rejected() -> None:
    with pytest.raises(ValueError, match="weights"):
        cfrr([[1, 0]], weights=[1.0])
    with pytest.raises(ValueError, match="positive"):
        rubric_fraction([[1]], weights=[0.0])
