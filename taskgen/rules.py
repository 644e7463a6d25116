"""House rules: a threshold on a value of the workflow that sends it down one branch or the other.

The threshold is drawn near the source record's own value (a round number a person would state),
on the side that makes the rule hold in about half the tasks that state one: when it holds, the
reaction the rule names is skipped (and its alternative done instead); the rubric scores the
branch taken.
"""

from __future__ import annotations

import random

from taskgen.flowmodel import Branch, Located, is_currency, round_amount
from taskgen.pattern import Rule


def rule_branch(located: Located | None, rule: Rule, rng: random.Random, held: bool | None = None) -> Branch | None:
    """``rule`` with a threshold on ``located``'s value of the rule's role, holding as ``held``
    says (drawn when None); None when the record has no positive number of that role."""
    if located is None:
        return None
    numbers = [(n, v) for n, v, _ in located.fields(rule.source.split(".", 1)[1]) if isinstance(v, int | float)]
    if not numbers:
        return None
    value = float(numbers[0][1])
    if value <= 0:
        return None
    coin = rng.random() < 0.5
    held = coin if held is None else held
    factor = rng.choice((0.5, 0.6, 0.75, 0.8)) if (rule.op == ">") == held else rng.choice((1.25, 1.5, 2.0))
    threshold = round_amount(value * factor)
    holds = value > threshold if rule.op == ">" else value < threshold
    if threshold <= 0 or threshold == value or holds != held:
        return None
    currency = next((v for v in located.record.values() if isinstance(v, str) and is_currency(located, v)), "")
    return Branch(rule, threshold, value, held, unit=currency)


def repeat_branch(located: Located, model: Branch) -> Branch | None:
    """The rule of ``model`` (its threshold as stated) on a second record handled the same way:
    whether it holds is the record's own business; None when the record has no value to compare
    or sits exactly on the threshold (where "above" would be a quibble)."""
    numbers = [v for _, v, _ in located.fields(model.rule.source.split(".", 1)[1]) if isinstance(v, int | float)]
    if not numbers or float(numbers[0]) == model.threshold:
        return None
    value = float(numbers[0])
    currency = next((v for v in located.record.values() if isinstance(v, str) and is_currency(located, v)), "")
    if currency != model.unit:
        return None  # one threshold cannot be stated in two currencies
    held = value > model.threshold if model.rule.op == ">" else value < model.threshold
    return Branch(model.rule, model.threshold, value, held, unit=currency)
