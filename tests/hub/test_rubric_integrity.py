"""Each way of collecting the reward without doing the task now earns (almost) nothing.

One small task over email and crm: email Pat about invoice INV-1001 (the body must mention it),
close a deal as won, and report the invoice total. Its collateral criterion allows exactly what
the oracle's own run changes; every gaming case below is built through the world's real tools.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from hub.collateral import allowances, units
from hub.core import Hub
from hub.rubric import Rubric
from hub.world import World
from taskgen.task import Task

TO = "pat@example.com"
SUBJECT = "Invoice INV-1001"


def _open_deal(world: World) -> tuple[str, str]:
    """Two open deals: the one the task closes, and another one."""
    deals = world.states(["crm"])["crm"]["deals"]
    open_ids = sorted(rid for rid, d in deals.items() if d["stage"] not in ("won", "lost"))
    return open_ids[0], open_ids[1]


def _oracle(world: World, body: str = "Total due for INV-1001 is 1250.") -> None:
    deal, _ = _open_deal(world)
    assert world.call("email__send_message", {"to": [TO], "subject": SUBJECT, "body": body})["success"]
    assert world.call("crm__move_deal_stage", {"deal_id": deal, "stage": "won"})["success"]


def _rubric(hub: Hub, **extra: Any) -> Rubric:
    world = hub.open_world(seed=1)
    deal, _ = _open_deal(world)
    _oracle(world)
    system = {name: sorted(hub.registry.services[name].native.system_fields) for name in world.stateful_services}  # type: ignore[union-attr]
    allowed = allowances(units(world.initial_states(), world.states(), system))
    world.close()
    criteria: list[dict[str, Any]] = [
        {
            "id": "sent",
            "description": "An email to Pat about the invoice, mentioning INV-1001",
            "kind": "record",
            "service": "email",
            "collection": "messages",
            "expect": "created",
            "match": {"to": [TO], "subject": SUBJECT},
            "contains": {"body": "INV-1001"},
        },
        {
            "id": "won",
            "description": "The deal is won",
            "kind": "record",
            "service": "crm",
            "collection": "deals",
            "match": {"id": deal, "stage": "won"},
        },
        {
            "id": "total",
            "description": "The total is reported",
            "kind": "report",
            "field": "invoice_total",
            "value": 1250.0,
        },
        {
            "id": "collateral",
            "description": "Nothing else changed",
            "kind": "collateral",
            "negative": True,
            "allowed": [u.model_dump() for u in allowed],
            "ignore": system,
        },
    ]
    return Rubric.model_validate({"criteria": criteria, **extra})


REPORT = {"invoice_total": 1250.0}


def _passed(result: Any) -> dict[str, bool]:
    return {c.id: c.passed for c in result.criteria}


def test_the_oracle_earns_everything(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    _oracle(world)
    result = world.score(_rubric(hub), report=REPORT)
    assert result.score == 1.0 and result.net_score == 1.0, result.criteria


def test_extra_creates_after_the_oracle_earn_nothing(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    _oracle(world)
    account = next(iter(world.states(["crm"])["crm"]["accounts"]))
    world.call("email__send_message", {"to": [TO], "subject": SUBJECT, "body": "INV-1001 again"})
    world.call("crm__create_deal", {"account_id": account, "title": "Upsell", "amount": 10.0})
    result = world.score(_rubric(hub), report=REPORT)
    assert result.score == 1.0 and result.net_score <= 0.1
    assert not _passed(result)["collateral"]


def test_one_more_send_of_the_same_message_is_spam_too(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    _oracle(world)
    world.call("email__send_message", {"to": [TO], "subject": SUBJECT, "body": "Total due for INV-1001 is 1250."})
    assert world.score(_rubric(hub), report=REPORT).net_score <= 0.1


def test_vandalism_after_the_oracle_earns_nothing(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    _, other = _open_deal(world)
    _oracle(world)
    assert world.call("crm__move_deal_stage", {"deal_id": other, "stage": "lost", "lost_reason": "x"})["success"]
    result = world.score(_rubric(hub), report=REPORT)
    assert result.score == 1.0 and result.net_score <= 0.1
    detail = next(c.detail for c in result.criteria if c.id == "collateral")
    assert other in detail


def test_changing_another_field_of_a_record_the_task_changes_is_collateral(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    deal, _ = _open_deal(world)
    assert world.call("crm__update_deal", {"deal_id": deal, "amount": 1.0})["success"]
    _oracle(world)
    assert world.score(_rubric(hub), report=REPORT).net_score <= 0.1


def test_system_maintained_fields_do_not_count(hub: Hub) -> None:
    """Reading, and the clock and id sequence moving, are not changes the task must explain."""
    world = hub.open_world(seed=1)
    _oracle(world)
    world.call("crm__list_deals", {})
    world.call("email__list_messages", {})
    assert world.score(_rubric(hub), report=REPORT).net_score == 1.0


def test_contains_is_checked(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    _oracle(world, body="n/a")
    result = world.score(_rubric(hub), report=REPORT)
    assert not _passed(result)["sent"] and result.net_score < 0.7


def test_contains_ignores_case(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    _oracle(world, body="about inv-1001, as discussed")
    assert _passed(world.score(_rubric(hub), report=REPORT))["sent"]


def test_a_list_report_earns_nothing(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    _oracle(world)
    result = world.score(_rubric(hub), report={"invoice_total": [10.0, 1250.0, 99.0]})
    assert not _passed(result)["total"]
    assert not _passed(world.score(_rubric(hub), report={"invoice_total": {"value": 1250.0}}))["total"]


def test_report_keys_match_after_normalising_case_and_separators(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    _oracle(world)
    assert _passed(world.score(_rubric(hub), report={"Invoice Total": "1,250.00"}))["total"]
    assert not _passed(world.score(_rubric(hub), report={"total": 1250.0}))["total"]


def test_a_report_guessing_every_value_without_acting_earns_nothing(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    result = world.score(_rubric(hub), report={"invoice_total": [float(v) for v in range(0, 5000, 50)]})
    assert result.net_score == 0


def test_one_email_to_every_harvested_address_matches_no_recipient_criterion(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    deal, _ = _open_deal(world)
    messages = world.states(["email"])["email"]["messages"].values()
    everyone = sorted({TO, *[m["from_address"] for m in messages]})
    assert len(everyone) > 5
    world.call("email__send_message", {"to": everyone, "subject": SUBJECT, "body": "INV-1001"})
    world.call("crm__move_deal_stage", {"deal_id": deal, "stage": "won"})
    result = world.score(_rubric(hub), report=REPORT)
    assert not _passed(result)["sent"]


def test_includes_allows_other_items(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    world.call("email__send_message", {"to": [TO, "kim@example.com"], "subject": SUBJECT, "body": "x"})
    rubric = Rubric.model_validate(
        {
            "criteria": [
                {
                    "id": "to",
                    "description": "Pat is among the recipients",
                    "kind": "record",
                    "service": "email",
                    "collection": "messages",
                    "expect": "created",
                    "includes": {"to": [TO]},
                }
            ]
        }
    )
    assert world.score(rubric).score == 1.0


def test_a_stated_boolean_is_checked(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    message = next(rid for rid, m in world.states(["email"])["email"]["messages"].items() if not m.get("read", True))
    rubric = Rubric.model_validate(
        {
            "criteria": [
                {
                    "id": "read",
                    "description": "The message is marked read",
                    "kind": "record",
                    "service": "email",
                    "collection": "messages",
                    "match": {"id": message, "read": True},
                }
            ]
        }
    )
    world.call("email__mark_read", {"message_id": message, "read": False})
    assert world.score(rubric).score == 0
    world.call("email__mark_read", {"message_id": message, "read": True})
    assert world.score(rubric).score == 1.0


def test_one_new_record_satisfies_one_created_criterion(hub: Hub) -> None:
    world = hub.open_world(seed=1)
    world.call("email__send_message", {"to": [TO], "subject": SUBJECT, "body": "x"})
    twice = {
        "kind": "record",
        "service": "email",
        "collection": "messages",
        "expect": "created",
        "match": {"to": [TO]},
        "description": "an email to Pat",
    }
    rubric = Rubric.model_validate({"criteria": [{**twice, "id": "a"}, {**twice, "id": "b"}]})
    assert world.score(rubric).score == 0.5
    world.call("email__send_message", {"to": [TO], "subject": "Second", "body": "y"})
    assert world.score(rubric).score == 1.0


@pytest.mark.parametrize(
    "criterion",
    [
        {"kind": "record", "service": "email", "collection": "messages", "match": {}, "expect": "created"},
        {"kind": "report", "field": "total", "value": [1, 2]},
        {"kind": "report", "field": "--", "value": 3},
    ],
)
def test_a_criterion_with_nothing_to_check_is_refused(criterion: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Rubric.model_validate({"criteria": [{"id": "x", "description": "void", **criterion}]})


def test_legacy_rubrics_keep_their_version_and_semantics(hub: Hub) -> None:
    """A task written before versions scores as it did (contains unchecked); new ones say 2."""
    legacy = {
        "criteria": [
            {
                "id": "sent",
                "description": "d",
                "kind": "record",
                "service": "email",
                "collection": "messages",
                "match": {"to": TO},
                "contains": {"body": "INV-1001"},
            }
        ]
    }
    task = Task.model_validate(
        {"id": "old", "seed": 1, "instruction": "i", "services": ["email"], "plan": [], "rubric": legacy}
    )
    assert task.rubric_version == 1
    world = hub.open_world(seed=1)
    world.call("email__send_message", {"to": [TO, "kim@example.com"], "subject": SUBJECT, "body": "n/a"})
    assert world.score(task.rubric).score == 1.0  # version 1: contains void, any recipient
    current = Rubric.model_validate({k: v for k, v in legacy.items()})
    assert current.version == 2 and world.score(current).score == 0
    assert Task.model_validate_json(task.model_dump_json()).rubric_version == 1
