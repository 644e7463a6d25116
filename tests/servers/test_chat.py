"""The chat service: channels, membership, messages, threads, reactions, pins and DMs."""

from __future__ import annotations

from typing import Any

import pytest

from servers.native.chat import Channel, ChatState, Message
from servers.native.chat import service as svc
from servers.population import Population


@pytest.fixture
def state() -> ChatState:
    return svc.seed_state(7)


def call(state: ChatState, tool: str, **args: Any) -> dict[str, Any]:
    return svc.call(state, tool, args)


def channel(state: ChatState, name: str) -> Channel:
    return next(c for c in state.channels.values() if c.name == name)


def mine(state: ChatState, kind: str = "public", archived: bool = False) -> Channel:
    return next(
        c
        for c in state.channels.values()
        if c.kind == kind and c.archived == archived and state.me in c.members and c.name != "general"
    )


def not_mine(state: ChatState, kind: str) -> Channel:
    return next(c for c in state.channels.values() if c.kind == kind and state.me not in c.members and not c.archived)


def message_by(state: ChatState, author_is_me: bool) -> Message:
    return next(
        m
        for m in state.messages.values()
        if (m.author == state.me) == author_is_me
        and not state.channels[m.channel_id].archived
        and state.me in state.channels[m.channel_id].members
    )


def test_list_channels_hides_private_channels_of_others_and_paginates(state: ChatState) -> None:
    page = call(state, "list_channels", limit=5)["data"]
    visible = [c for c in state.channels.values() if (c.kind == "public" or state.me in c.members) and not c.archived]
    assert page["total"] == len(visible) and len(page["items"]) == 5 and page["next_offset"] == 5
    every = call(state, "list_channels", limit=200)["data"]["items"]
    assert not_mine(state, "private").id not in {c["id"] for c in every}


def test_list_channels_includes_archived_only_when_asked(state: ChatState) -> None:
    archived = channel(state, "office-move-2025")
    default = call(state, "list_channels", query="office-move", limit=200)["data"]["items"]
    every = call(state, "list_channels", query="office-move", include_archived=True, limit=200)["data"]["items"]
    assert archived.id not in {c["id"] for c in default} and archived.id in {c["id"] for c in every}


def test_list_users_finds_the_handle_of_an_employee_by_email(state: ChatState) -> None:
    person = Population.generate(7).employees[3]
    items = call(state, "list_users", email=person.email)["data"]["items"]
    assert [u["username"] for u in items] == [person.username]


def test_get_channel_unknown_id_is_404_quoting_it(state: ChatState) -> None:
    env = call(state, "get_channel", channel_id="ch_9999")
    assert env["error"]["code"] == 404 and "'ch_9999'" in env["error"]["message"]


def test_reading_a_private_channel_of_others_is_403(state: ChatState) -> None:
    private = not_mine(state, "private")
    assert call(state, "list_messages", channel_id=private.id)["error"]["code"] == 403


def test_list_messages_returns_top_level_messages_newest_first(state: ChatState) -> None:
    general = channel(state, "general")
    items = call(state, "list_messages", channel_id=general.id)["data"]["items"]
    assert items and all(m["thread_id"] is None and m["channel_id"] == general.id for m in items)
    assert [m["posted_at"] for m in items] == sorted((m["posted_at"] for m in items), reverse=True)


def test_get_thread_returns_parent_then_replies(state: ChatState) -> None:
    parent = next(m for m in state.messages.values() if m.reply_count > 0)
    thread = call(state, "get_thread", message_id=parent.id)["data"]
    assert thread[0]["id"] == parent.id and len(thread) == parent.reply_count + 1
    assert all(m["thread_id"] == parent.id for m in thread[1:])


def test_search_messages_skips_channels_the_user_cannot_read(state: ChatState) -> None:
    hidden = next(
        m
        for m in state.messages.values()
        if state.channels[m.channel_id].kind != "public" and state.me not in state.channels[m.channel_id].members
    )
    items = call(state, "search_messages", query=hidden.text[:20], limit=200)["data"]["items"]
    assert hidden.id not in {m["id"] for m in items}


def test_post_message_in_a_channel_the_user_belongs_to(state: ChatState) -> None:
    target = mine(state)
    env = call(state, "post_message", channel_id=target.id, text="PO-12345 shipped today.")
    assert env["success"], env
    assert env["data"]["author"] == state.me and env["data"]["channel_id"] == target.id


def test_post_to_an_archived_channel_is_409_and_changes_nothing(state: ChatState) -> None:
    archived = mine(state, archived=True)
    before = svc.state_hash(state)
    env = call(state, "post_message", channel_id=archived.id, text="Hello?")
    assert env["error"]["code"] == 409 and repr(archived.id) in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_post_to_a_private_channel_without_membership_is_403(state: ChatState) -> None:
    private = not_mine(state, "private")
    before = svc.state_hash(state)
    assert call(state, "post_message", channel_id=private.id, text="Hi")["error"]["code"] == 403
    assert svc.state_hash(state) == before


def test_post_to_a_public_channel_needs_joining_first(state: ChatState) -> None:
    public = not_mine(state, "public")
    assert call(state, "post_message", channel_id=public.id, text="Hi")["error"]["code"] == 403
    assert call(state, "join_channel", channel_id=public.id)["success"]
    assert call(state, "post_message", channel_id=public.id, text="Hi")["success"]


def test_reply_in_a_thread_counts_the_reply(state: ChatState) -> None:
    parent = next(m for m in state.messages.values() if m.thread_id is None and m.channel_id == mine(state).id)
    env = call(state, "post_message", channel_id=parent.channel_id, text="Following up.", thread_id=parent.id)
    assert env["data"]["thread_id"] == parent.id
    assert state.messages[parent.id].reply_count == 1 + sum(
        1 for m in state.messages.values() if m.thread_id == parent.id and m.id != env["data"]["id"]
    )


def test_reply_to_a_message_of_another_channel_is_400_naming_thread_id(state: ChatState) -> None:
    elsewhere = next(m for m in state.messages.values() if m.channel_id != mine(state).id and m.thread_id is None)
    env = call(state, "post_message", channel_id=mine(state).id, text="x", thread_id=elsewhere.id)
    assert env["error"]["code"] == 400 and "'thread_id'" in env["error"]["message"]


def test_create_channel_with_a_taken_name_is_409_even_if_archived(state: ChatState) -> None:
    env = call(state, "create_channel", name="office-move-2025")
    assert env["error"]["code"] == 409 and "archived" in env["error"]["message"]


def test_create_private_channel_adds_the_creator(state: ChatState) -> None:
    colleague = Population.generate(7).employees[0].username
    env = call(state, "create_channel", name="supplier-audit", private=True, members=[colleague])
    assert env["data"]["kind"] == "private" and env["data"]["members"] == [state.me, colleague]


def test_invite_an_unknown_user_is_404_quoting_the_username(state: ChatState) -> None:
    env = call(state, "invite_members", channel_id=mine(state).id, usernames=["no.body"])
    assert env["error"]["code"] == 404 and "'no.body'" in env["error"]["message"]


def test_invite_an_existing_member_is_409(state: ChatState) -> None:
    target = mine(state)
    other = next(m for m in target.members if m != state.me)
    assert call(state, "invite_members", channel_id=target.id, usernames=[other])["error"]["code"] == 409


def test_only_the_creator_removes_other_members(state: ChatState) -> None:
    target = next(
        c
        for c in state.channels.values()
        if c.kind == "public"
        and state.me in c.members
        and c.created_by != state.me
        and not c.archived
        and c.name != "general"
    )
    other = next(m for m in target.members if m != state.me)
    assert call(state, "remove_member", channel_id=target.id, username=other)["error"]["code"] == 403
    assert call(state, "remove_member", channel_id=target.id, username=state.me)["success"]


def test_general_cannot_be_archived(state: ChatState) -> None:
    assert call(state, "archive_channel", channel_id=channel(state, "general").id)["error"]["code"] == 403


def test_archive_channel_makes_it_read_only(state: ChatState) -> None:
    target = mine(state)
    assert call(state, "archive_channel", channel_id=target.id)["data"]["archived"] is True
    assert call(state, "post_message", channel_id=target.id, text="late")["error"]["code"] == 409


def test_send_direct_message_reuses_the_existing_conversation(state: ChatState) -> None:
    dm = mine(state, kind="direct")
    other = next(m for m in dm.members if m != state.me)
    env = call(state, "send_direct_message", username=other, text="See you at 3.")
    assert env["data"]["channel_id"] == dm.id


def test_direct_message_to_a_deactivated_user_is_403(state: ChatState) -> None:
    gone = next(u for u in state.users.values() if u.account_type == "deactivated")
    assert call(state, "send_direct_message", username=gone.username, text="Hi")["error"]["code"] == 403


def test_editing_someone_elses_message_is_403(state: ChatState) -> None:
    other = message_by(state, author_is_me=False)
    before = svc.state_hash(state)
    env = call(state, "edit_message", message_id=other.id, text="changed")
    assert env["error"]["code"] == 403 and svc.state_hash(state) == before


def test_edit_own_message_records_the_edit(state: ChatState) -> None:
    own = message_by(state, author_is_me=True)
    env = call(state, "edit_message", message_id=own.id, text="Corrected text")
    assert env["data"]["text"] == "Corrected text" and env["data"]["edited_at"] is not None


def test_deleting_a_thread_parent_deletes_its_replies(state: ChatState) -> None:
    target = mine(state)
    parent = call(state, "post_message", channel_id=target.id, text="Question?")["data"]
    call(state, "post_message", channel_id=target.id, text="Answer", thread_id=parent["id"])
    env = call(state, "delete_message", message_id=parent["id"])
    assert env["data"] == {"id": parent["id"], "replies_deleted": 1}
    assert not any(m.thread_id == parent["id"] for m in state.messages.values())


def test_reacting_twice_with_the_same_emoji_is_409(state: ChatState) -> None:
    msg = message_by(state, author_is_me=False)
    assert call(state, "add_reaction", message_id=msg.id, emoji="tada")["success"]
    assert call(state, "add_reaction", message_id=msg.id, emoji="tada")["error"]["code"] == 409


def test_pin_limit_is_ten_per_channel(state: ChatState) -> None:
    target = mine(state)
    for index in range(12):
        call(state, "post_message", channel_id=target.id, text=f"note {index}")
    ids = [m.id for m in state.messages.values() if m.channel_id == target.id and not m.pinned]
    pinned = sum(1 for m in state.messages.values() if m.channel_id == target.id and m.pinned)
    results = [call(state, "pin_message", message_id=i)["success"] for i in ids[: 11 - pinned]]
    assert results[:-1] == [True] * (10 - pinned) and results[-1] is False


def test_every_member_username_is_a_population_person(state: ChatState) -> None:
    world = Population.generate(7)
    people = {p.username: p for p in world.people}
    assert {p.username for p in world.employees} <= set(state.users)
    assert all(people[u.username].email == u.email for u in state.users.values())
    assert all(m in people for c in state.channels.values() for m in c.members)
    assert all(m.author in people for m in state.messages.values())
