"""The SMS service: numbers, contacts, sending, scheduling, delivery statuses and opt-outs."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from servers.native.sms import Contact, OwnedNumber, SmsState, segments_of
from servers.native.sms import service as svc
from servers.population import Population


@pytest.fixture
def state() -> SmsState:
    return svc.seed_state(7)


def call(state: SmsState, tool: str, **args: Any) -> dict[str, Any]:
    return svc.call(state, tool, args)


def main_line(state: SmsState) -> OwnedNumber:
    return next(n for n in state.numbers.values() if n.label == "Main line")


def contact(state: SmsState, line: str = "mobile", opted_out: bool = False) -> Contact:
    return next(c for c in state.contacts.values() if c.line_type == line and c.opted_out == opted_out)


def restarted(state: SmsState) -> Contact:
    starts = {m.from_number for m in state.messages.values() if m.body == "START"}
    return next(c for c in state.contacts.values() if c.opted_out and c.phone in starts)


def later(state: SmsState, **delta: float) -> str:
    return (state.clock + dt.timedelta(**delta)).isoformat()


def test_list_contacts_filters_opted_out_and_paginates(state: SmsState) -> None:
    page = call(state, "list_contacts", opted_out=False, limit=5)["data"]
    expected = sum(1 for c in state.contacts.values() if not c.opted_out)
    assert page["total"] == expected and len(page["items"]) == 5 and page["next_offset"] == 5
    assert all(not c["opted_out"] for c in page["items"])
    last = call(state, "list_contacts", opted_out=False, offset=5, limit=200)["data"]
    assert last["next_offset"] is None and len(last["items"]) == expected - 5


def test_list_contacts_finds_a_contact_by_phone(state: SmsState) -> None:
    target = contact(state)
    items = call(state, "list_contacts", phone=target.phone)["data"]["items"]
    assert [c["id"] for c in items] == [target.id]


def test_get_contact_unknown_id_is_404_quoting_it(state: SmsState) -> None:
    env = call(state, "get_contact", contact_id="con_9999")
    assert env["error"]["code"] == 404 and "'con_9999'" in env["error"]["message"]


def test_list_messages_filters_by_status(state: SmsState) -> None:
    items = call(state, "list_messages", status="undelivered", limit=200)["data"]["items"]
    assert items and all(m["status"] == "undelivered" and m["error_code"] == 30006 for m in items)


def test_list_conversations_groups_messages_by_party(state: SmsState) -> None:
    convs = call(state, "list_conversations", limit=200)["data"]["items"]
    assert sum(c["messages"] for c in convs) == len(state.messages)
    named = next(c for c in convs if c["contact_id"])
    assert state.contacts[named["contact_id"]].phone == named["phone"]


def test_send_message_to_a_mobile_is_delivered_and_priced_per_segment(state: SmsState) -> None:
    target = contact(state)
    body = "Your order PO-12345 has shipped. " * 6
    env = call(state, "send_message", from_number_id=main_line(state).id, to=target.phone, body=body)
    assert env["success"], env
    data = env["data"]
    assert data["status"] == "delivered" and data["segments"] == segments_of(body) == 2
    assert data["price"] == pytest.approx(2 * 0.0079) and data["from_number"] == main_line(state).number


def test_send_message_to_a_landline_is_undelivered(state: SmsState) -> None:
    target = contact(state, line="landline")
    env = call(state, "send_message", from_number_id=main_line(state).id, to=target.phone, body="Hello")
    assert env["data"]["status"] == "undelivered" and env["data"]["error_code"] == 30006


def test_send_to_an_opted_out_number_is_403_and_changes_nothing(state: SmsState) -> None:
    target = contact(state, opted_out=True)
    before = svc.state_hash(state)
    env = call(state, "send_message", from_number_id=main_line(state).id, to=target.phone, body="Hi")
    assert env["error"]["code"] == 403 and repr(target.phone) in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_send_from_a_suspended_number_is_403(state: SmsState) -> None:
    suspended = next(n for n in state.numbers.values() if n.status == "suspended")
    env = call(state, "send_message", from_number_id=suspended.id, to=contact(state).phone, body="Hi")
    assert env["error"]["code"] == 403


def test_send_from_a_voice_only_number_is_400_naming_the_number(state: SmsState) -> None:
    voice = next(n for n in state.numbers.values() if not n.sms_enabled)
    env = call(state, "send_message", from_number_id=voice.id, to=contact(state).phone, body="Hi")
    assert env["error"]["code"] == 400 and "'from_number_id'" in env["error"]["message"]


def test_send_from_an_unknown_number_is_404(state: SmsState) -> None:
    env = call(state, "send_message", from_number_id="num_9999", to=contact(state).phone, body="Hi")
    assert env["error"]["code"] == 404 and "'num_9999'" in env["error"]["message"]


def test_a_body_over_ten_segments_is_400_naming_body(state: SmsState) -> None:
    env = call(state, "send_message", from_number_id=main_line(state).id, to=contact(state).phone, body="x" * 1600)
    assert env["error"]["code"] == 400 and "'body'" in env["error"]["message"]


def test_schedule_message_creates_a_scheduled_message(state: SmsState) -> None:
    env = call(
        state,
        "schedule_message",
        from_number_id=main_line(state).id,
        to=contact(state).phone,
        body="Reminder",
        send_at=later(state, days=2),
    )
    assert env["data"]["status"] == "scheduled" and env["data"]["price"] == 0


def test_schedule_less_than_fifteen_minutes_ahead_is_400_naming_send_at(state: SmsState) -> None:
    env = call(
        state,
        "schedule_message",
        from_number_id=main_line(state).id,
        to=contact(state).phone,
        body="Soon",
        send_at=later(state, minutes=5),
    )
    assert env["error"]["code"] == 400 and "'send_at'" in env["error"]["message"]


def test_cancel_scheduled_message_then_cancel_again_is_409(state: SmsState) -> None:
    scheduled = next(m for m in state.messages.values() if m.status == "scheduled")
    assert call(state, "cancel_scheduled_message", message_id=scheduled.id)["data"]["status"] == "canceled"
    before = svc.state_hash(state)
    assert call(state, "cancel_scheduled_message", message_id=scheduled.id)["error"]["code"] == 409
    assert svc.state_hash(state) == before


def test_resend_a_failed_message_creates_a_new_delivered_one(state: SmsState) -> None:
    failed = next(m for m in state.messages.values() if m.status == "failed")
    env = call(state, "resend_message", message_id=failed.id)
    assert env["data"]["id"] != failed.id and env["data"]["to_number"] == failed.to_number
    assert env["data"]["status"] == "delivered"


def test_resend_a_delivered_message_is_409(state: SmsState) -> None:
    delivered = next(m for m in state.messages.values() if m.status == "delivered")
    assert call(state, "resend_message", message_id=delivered.id)["error"]["code"] == 409


def test_opt_out_blocks_further_messages(state: SmsState) -> None:
    target = contact(state)
    assert call(state, "opt_out", phone=target.phone)["data"]["opted_out"] is True
    env = call(state, "send_message", from_number_id=main_line(state).id, to=target.phone, body="Hi")
    assert env["error"]["code"] == 403


def test_opt_out_of_an_unknown_phone_is_404(state: SmsState) -> None:
    env = call(state, "opt_out", phone="+19995550000")
    assert env["error"]["code"] == 404 and "'+19995550000'" in env["error"]["message"]


def test_opt_in_without_a_start_reply_is_403(state: SmsState) -> None:
    starts = {m.from_number for m in state.messages.values() if m.body == "START"}
    silent = next(c for c in state.contacts.values() if c.opted_out and c.phone not in starts)
    assert call(state, "opt_in", phone=silent.phone)["error"]["code"] == 403


def test_opt_in_after_start_reply_allows_sending_again(state: SmsState) -> None:
    target = restarted(state)
    assert call(state, "opt_in", phone=target.phone)["data"]["opted_out"] is False
    env = call(state, "send_message", from_number_id=main_line(state).id, to=target.phone, body="Welcome back")
    assert env["success"], env


def test_create_contact_with_a_taken_phone_is_409(state: SmsState) -> None:
    taken = contact(state)
    env = call(state, "create_contact", phone=taken.phone, name="Someone Else")
    assert env["error"]["code"] == 409 and repr(taken.id) in env["error"]["message"]


def test_update_contact_changes_only_given_fields(state: SmsState) -> None:
    target = contact(state)
    env = call(state, "update_contact", contact_id=target.id, tags=["vip"])
    assert env["data"]["tags"] == ["vip"] and env["data"]["name"] == target.name


def test_delete_an_opted_out_contact_is_409(state: SmsState) -> None:
    assert call(state, "delete_contact", contact_id=contact(state, opted_out=True).id)["error"]["code"] == 409


def test_delete_a_contact_with_a_scheduled_message_is_409(state: SmsState) -> None:
    scheduled = next(m for m in state.messages.values() if m.status == "scheduled")
    target = next(c for c in state.contacts.values() if c.phone == scheduled.to_number)
    assert call(state, "delete_contact", contact_id=target.id)["error"]["code"] == 409


def test_contacts_are_population_people_with_their_own_phones(state: SmsState) -> None:
    people = {p.phone: p for p in Population.generate(7).people}
    for item in state.contacts.values():
        person = people[item.phone]
        assert item.name == person.name and item.email in (None, person.email)
    owners = {p.email for p in Population.generate(7).employees}
    assert all(n.owner in owners for n in state.numbers.values())
