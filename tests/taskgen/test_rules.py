"""House rules on amounts, dates and measures: the value compared, the threshold stated, the branch."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest

from hub.core import Hub
from servers.roles import ROLE_KEY
from servers.types import SEMANTIC_KEY
from taskgen import instantiate
from taskgen.flowmodel import Located
from taskgen.generate import generate
from taskgen.pattern import Rule
from taskgen.rules import compared, recorded, repeat_branch, rule_branch, stated


def _field(kind: str, role: str | None = None) -> dict[str, Any]:
    return {"type": "string", SEMANTIC_KEY: kind, **({ROLE_KEY: role} if role else {})}


def _located(record: dict[str, Any], fields: dict[str, dict[str, Any]]) -> Located:
    return Located(0, "", record, {"properties": fields}, "lease", "leases", anchor="Unit 4B")


def _rule(source: str, op: str = "<") -> Rule:
    return Rule(
        id="house_rule", source=source, op=op, skip="renew", text=["If it is below {threshold}, skip the renewal."]
    )


LEASE = _located(
    {"id": "l1", "ends_on": "2027-03-12", "rent": 2400.0, "units": 3},
    {
        "id": _field("lease_id"),
        "ends_on": _field("date", "end"),
        "rent": _field("money_amount", "price"),
        "units": _field("quantity"),
    },
)


@pytest.mark.parametrize("held", [True, False])
@pytest.mark.parametrize("op", ["<", ">"])
def test_a_date_rule_states_a_day_near_the_record_s_date_and_holds_as_drawn(op: str, held: bool) -> None:
    rule = _rule("trigger.end", op)
    for seed in range(20):
        branch = rule_branch(LEASE, rule, random.Random(seed), held=held)
        assert branch is not None and branch.kind == "date" and branch.held is held
        ends, threshold = dt.date(2027, 3, 12), dt.date.fromisoformat(str(recorded(branch)))
        assert (ends < threshold if op == "<" else ends > threshold) is held
        assert 2 <= abs((threshold - ends).days) <= 14
        assert stated(branch) == f"{threshold:%A} {threshold.day} {threshold:%B %Y}"


def test_a_date_rule_on_a_second_record_holds_by_that_record_s_own_date() -> None:
    rule = _rule("trigger.end", "<")
    first = rule_branch(LEASE, rule, random.Random(1), held=True)
    assert first is not None
    later = _located({"id": "l2", "ends_on": "2027-06-30"}, {"ends_on": _field("date", "end")})
    second = repeat_branch(later, first)
    assert second is not None and not second.held and second.threshold == first.threshold


def test_a_record_with_two_days_of_the_role_has_no_date_to_compare() -> None:
    two = _located(
        {"ends_on": "2027-03-12", "notice_ends": "2027-01-12"},
        {"ends_on": _field("date", "end"), "notice_ends": _field("date", "end")},
    )
    assert compared(two, _rule("trigger.end")) is None  # "ends before ..." would not say which


def test_a_measure_rule_reads_the_record_s_one_field_of_that_type() -> None:
    assert compared(LEASE, _rule("trigger.quantity")) == (3.0, "quantity", "")
    both = _located({"ordered": 40, "received": 38}, {"ordered": _field("quantity"), "received": _field("quantity")})
    assert compared(both, _rule("trigger.quantity")) is None


def test_a_measure_threshold_stays_in_its_range() -> None:
    review = _located({"stars": 4}, {"stars": _field("rating")})
    rule = _rule("trigger.rating", "<")
    for seed in range(30):
        branch = rule_branch(review, rule, random.Random(seed))
        assert branch is None or 1 < branch.threshold < 5


def test_an_amount_rule_states_the_amount_with_its_currency() -> None:
    priced = _located(
        {"rent": 2400.0, "currency": "EUR"},
        {"rent": _field("money_amount", "price"), "currency": _field("currency_code")},
    )
    branch = rule_branch(priced, _rule("trigger.price", ">"), random.Random(3), held=True)
    assert branch is not None and branch.kind == "amount" and stated(branch).endswith(" EUR")
    assert branch.threshold < 2400.0


def test_a_rule_on_a_person_is_refused() -> None:
    with pytest.raises(ValueError, match="amount's or a date's role"):
        _rule("trigger.customer")


def test_a_date_threshold_is_stated_on_the_same_side_of_today_as_the_record_s_date() -> None:
    rule = _rule("trigger.end", "<")
    today = dt.date(2027, 3, 14)  # two days after the lease ends: most thresholds would be in the future
    stated_days = []
    for seed in range(40):
        branch = rule_branch(LEASE, rule, random.Random(seed), today=today)
        if branch is not None:
            stated_days.append(dt.date.fromisoformat(str(recorded(branch))))
    assert stated_days and all(day < today for day in stated_days)


@pytest.mark.slow
def test_a_batch_usually_splits_on_its_house_rule(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    def split_share() -> float:
        tasks = generate(60, seed=23, hub=hub, source="patterns").tasks
        batches = [t.meta["rules"] for t in tasks if len(t.meta.get("rules") or []) > 1]
        return sum(len({r["held"] for r in rules}) > 1 for rules in batches) / len(batches)

    preferred = split_share()
    monkeypatch.setattr(instantiate, "SPLIT_RATE", 0.0)  # records drawn regardless of the rule
    assert preferred > split_share()
