"""Rubric scoring: declarative criteria over world states and the agent's report."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from hub.core import Hub
from hub.rubric import Rubric

TO = "pat@example.com"


def _rubric(penalty: float | None = None) -> dict[str, Any]:
    return {
        "penalty": penalty,
        "criteria": [
            {
                "id": "sent",
                "description": "An email to Pat about the invoice was sent",
                "kind": "record",
                "service": "email",
                "collection": "messages",
                "match": {"to": TO, "subject": "Invoice INV-1001"},
                "weight": 2,
            },
            {
                "id": "total",
                "description": "The reported total is 1250",
                "kind": "report",
                "field": "total",
                "value": 1250.0,
            },
            {
                "id": "crm-untouched",
                "description": "Nothing changed in the CRM",
                "kind": "service_untouched",
                "service": "crm",
                "negative": True,
            },
        ],
    }


def _send(world: Any) -> None:
    world.call("email__send_message", {"to": [TO], "subject": "Invoice INV-1001", "body": "Paid."})


def test_doing_nothing_scores_zero(hub: Hub) -> None:
    result = hub.open_world(seed=1).score(_rubric())
    assert result.score == 0 and result.net_score == 0 and not result.success
    assert [c.passed for c in result.criteria] == [False, False, True]


def test_partial_and_full_credit_are_weighted(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    _send(world)
    assert world.score(_rubric()).score == pytest.approx(2 / 3)
    full = world.score(_rubric(), report={"total": 1250})
    assert full.score == 1 and full.net_score == 1 and full.success


def test_collateral_damage_zeroes_or_penalises_the_net_score(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    _send(world)
    deals = world.states()["crm"]["deals"]
    mine = next(d for d, rec in deals.items() if rec["owner"] == world.states()["crm"]["me"] and rec["stage"] != "won")
    assert world.call("crm__delete_deal", {"deal_id": mine})["success"] is True
    zeroed = world.score(_rubric(), report={"total": 1250})
    assert zeroed.score == 1 and zeroed.net_score == 0 and not zeroed.success
    penalised = world.score(_rubric(penalty=0.25), report={"total": 1250})
    assert penalised.net_score == pytest.approx(0.75)


def test_unchanged_and_absent_criteria(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    message_id = next(iter(world.states()["email"]["messages"]))
    rubric = {
        "criteria": [
            {
                "id": "keep",
                "description": "Message untouched",
                "kind": "unchanged",
                "service": "email",
                "collection": "messages",
                "record_id": message_id,
            },
            {
                "id": "no-spam",
                "description": "No message to spam@x.co",
                "kind": "record",
                "service": "email",
                "collection": "messages",
                "match": {"to": "spam@x.co"},
                "expect": "absent",
            },
        ]
    }
    assert world.score(rubric).score == 1
    world.call("email__mark_read", {"message_id": message_id, "read": True})
    world.call("email__send_message", {"to": ["spam@x.co"], "subject": "s", "body": "b"})
    changed = world.score(rubric)
    assert [c.passed for c in changed.criteria][1] is False


def test_rubrics_are_validated_data() -> None:
    with pytest.raises(ValidationError):
        Rubric.model_validate({"criteria": [{"id": "x", "description": "d", "kind": "python", "code": "1"}]})


def test_people_in_sub_records_are_matched_exactly_or_included() -> None:
    from hub.rubric import check

    attendees = [{"email": "ann@x.io", "response": "needs_action"}, {"email": "bo@x.io", "response": "accepted"}]
    final = {"calendar": {"events": {"evt_1": {"id": "evt_1", "title": "Kickoff", "attendees": attendees}}}}
    initial: dict[str, Any] = {"calendar": {"events": {}}}

    def criterion(**fields: Any) -> Any:
        data = {
            "id": "c1",
            "kind": "record",
            "service": "calendar",
            "collection": "events",
            "expect": "created",
            "description": "The kickoff invites them",
        }
        return Rubric.model_validate({"criteria": [{**data, **fields}]}).criteria[0]

    assert check(criterion(match={"attendees": ["ann@x.io", "bo@x.io"]}), initial, final, {}).passed
    assert not check(criterion(match={"attendees": ["ann@x.io"]}), initial, final, {}).passed  # one too many invited
    assert check(criterion(includes={"attendees": ["ann@x.io"]}), initial, final, {}).passed
    assert not check(criterion(includes={"attendees": ["cy@x.io"]}), initial, final, {}).passed


def test_a_record_reference_matches_the_created_record_whatever_its_id() -> None:
    """A comment on "the task you created" is checked against the task the agent created, not
    against the id the oracle's run happened to give it."""
    from hub.rubric import score

    task = {"id": "c1", "kind": "record", "service": "tracker", "collection": "tasks", "expect": "created",
            "match": {"title": "Reship"}, "description": "A reship task"}  # fmt: skip
    comment = {"id": "c2", "kind": "record", "service": "tracker", "collection": "comments", "expect": "created",
               "match": {"task_id": {"$record": "c1"}}, "contains": {"body": "Lee"}, "description": "Note"}  # fmt: skip
    rubric = Rubric.model_validate({"criteria": [task, comment]})
    initial: dict[str, Any] = {"tracker": {"tasks": {"t1": {"id": "t1", "title": "Old"}}, "comments": {}}}

    def final(comment_on: str) -> dict[str, Any]:
        tasks = {"t1": {"id": "t1", "title": "Old"}, "t9": {"id": "t9", "title": "Reship"}}
        return {"tracker": {"tasks": tasks, "comments": {"m1": {"id": "m1", "task_id": comment_on, "body": "For Lee"}}}}

    assert score(rubric, initial, final("t9")).score == 1.0  # an id the oracle's run never gave
    assert score(rubric, initial, final("t1")).score == 0.5  # on another task: not the one created
    with pytest.raises(ValidationError):  # a reference must name an earlier record criterion
        Rubric.model_validate({"criteria": [comment, task]})
