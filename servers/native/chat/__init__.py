"""Chat: the company's team chat — channels, members, messages, threads, reactions, pins and DMs.

Tools: list_channels, get_channel, list_users, list_messages, search_messages, get_thread,
create_channel, update_channel, join_channel, invite_members, remove_member, archive_channel,
post_message, send_direct_message, edit_message, delete_message, add_reaction, pin_message.
State: users by username, channels and messages by id; the username of the user ("me").
Seed: every employee as a member plus a few external guests from customer companies (one of them
deactivated); about 25 channels: #general, department channels, project channels with
near-duplicate names, archived channels of past projects, private channels the user is and is not
in, shared customer channels and direct messages; about 55 messages with threads, reactions and
pins that quote customers, purchase orders and products.
Rules: private channels (and direct messages) can only be read by their members (403); only
members may post, react or pin in a channel — join a public channel first (403); an archived
channel accepts no writes (409); only the author may edit or delete a message (403); only the
channel's creator may remove other members, and nobody leaves #general (403); #general cannot be
archived (403); channel names are unique, archived ones included (409); at most 10 pinned messages
per channel (409); deactivated users cannot be invited or messaged; deleting a thread's parent
deletes its replies.
Version history: 1 — first version.
"""

from __future__ import annotations

from servers.framework import BadRequest, Conflict, Forbidden, NotFound, Page, Service, contains, paginate, require
from servers.types import ChannelName, Department, EmailAddress, Flag, Limit, MessageText, Note, Offset, Query, Username

from .models import (
    GENERAL,
    MAX_PINS,
    AccountType,
    Channel,
    ChannelId,
    ChannelKind,
    ChatState,
    ChatUser,
    Deleted,
    Emoji,
    Message,
    MessageId,
    Reaction,
)
from .seed import seed

service = Service(
    "chat",
    version=1,
    category="communication",
    description="Team chat: channels, direct messages, threads, reactions and pins.",
    modelled_on="Slack Web API (conversations, chat, reactions, pins)",
    state=ChatState,
    seed=seed,
    # posted_at is the outcome of posting; a reply bumps its parent's reply_count
    system_fields=("created_at", "edited_at", "reply_count"),
)


def _readable(state: ChatState, channel_id: str) -> Channel:
    channel = require(state.channels, channel_id, "channel")
    if channel.kind != "public" and state.me not in channel.members:
        raise Forbidden(f"channel {channel_id!r} is private and the user is not a member")
    return channel


def _writable(state: ChatState, channel_id: str) -> Channel:
    channel = _readable(state, channel_id)
    if channel.archived:
        raise Conflict(f"channel {channel_id!r} is archived")
    if state.me not in channel.members:
        raise Forbidden(f"the user is not a member of channel {channel_id!r}; join it first")
    return channel


def _message(state: ChatState, message_id: str) -> tuple[Message, Channel]:
    message = require(state.messages, message_id, "message")
    return message, _readable(state, message.channel_id)


def _newest(rows: list[Message]) -> list[Message]:
    return sorted(rows, key=lambda m: (m.posted_at, m.id), reverse=True)


@service.read(
    op="list", entity="channel", collection="channels", reads=("name", "topic", "kind", "members", "archived")
)
def list_channels(
    state: ChatState,
    query: Query | None = None,
    kind: ChannelKind | None = None,
    member: Username | None = None,
    include_archived: Flag = False,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Channel]:
    """List the channels the user can see (public ones and those the user belongs to), by name.

    Args:
        query: Case-insensitive text to find in the name or topic.
        kind: Only channels of this kind.
        member: Only channels this user belongs to.
        include_archived: Also list archived channels.
        offset: Number of channels to skip.
        limit: Maximum number of channels to return.
    """
    rows = [
        c
        for c in state.channels.values()
        if (c.kind == "public" or state.me in c.members)
        and (query is None or contains(c.name, query) or contains(c.topic, query))
        and (kind is None or c.kind == kind)
        and (member is None or member in c.members)
        and (include_archived or not c.archived)
    ]
    return paginate(sorted(rows, key=lambda c: (c.name or "~", c.id)), offset, limit)


@service.read(op="get", entity="channel", collection="channels")
def get_channel(state: ChatState, channel_id: ChannelId) -> Channel:
    """Get one channel with its members.

    Args:
        channel_id: Id of the channel.
    """
    return _readable(state, channel_id)


@service.read(
    op="list",
    entity="user",
    collection="users",
    reads=("name", "username", "title", "email", "department", "account_type"),
)
def list_users(
    state: ChatState,
    query: Query | None = None,
    email: EmailAddress | None = None,
    department: Department | None = None,
    account_type: AccountType | None = None,
    offset: Offset = 0,
    limit: Limit = 50,
) -> Page[ChatUser]:
    """List workspace users by username; find a person's handle from their name or email.

    Args:
        query: Case-insensitive text to find in the name, username or title.
        email: Only the user with this email address.
        department: Only users of this department.
        account_type: Only users with this account type.
        offset: Number of users to skip.
        limit: Maximum number of users to return.
    """
    rows = [
        u
        for u in state.users.values()
        if (query is None or contains(u.name, query) or contains(u.username, query) or contains(u.title, query))
        and (email is None or u.email.lower() == email.lower())
        and (department is None or u.department.lower() == department.lower())
        and (account_type is None or u.account_type == account_type)
    ]
    return paginate(sorted(rows, key=lambda u: u.username), offset, limit)


@service.read(
    op="list", entity="message", collection="messages", reads=("channel_id", "thread_id", "author", "text", "pinned")
)
def list_messages(
    state: ChatState,
    channel_id: ChannelId,
    author: Username | None = None,
    query: Query | None = None,
    pinned_only: Flag = False,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Message]:
    """List the top-level messages of a channel, newest first (thread replies via get_thread).

    Args:
        channel_id: Id of the channel.
        author: Only messages by this username.
        query: Case-insensitive text to find in the message.
        pinned_only: Only pinned messages.
        offset: Number of messages to skip.
        limit: Maximum number of messages to return.
    """
    _readable(state, channel_id)
    rows = [
        m
        for m in state.messages.values()
        if m.channel_id == channel_id
        and m.thread_id is None
        and (author is None or m.author == author)
        and contains(m.text, query)
        and (m.pinned or not pinned_only)
    ]
    return paginate(_newest(rows), offset, limit)


@service.read(op="search", entity="message", collection="messages", reads=("text", "author"))
def search_messages(
    state: ChatState, query: Query, author: Username | None = None, offset: Offset = 0, limit: Limit = 20
) -> Page[Message]:
    """Search messages and replies in every channel the user can read, newest first.

    Args:
        query: Case-insensitive text to find in the message.
        author: Only messages by this username.
        offset: Number of messages to skip.
        limit: Maximum number of messages to return.
    """
    readable = {c.id for c in state.channels.values() if c.kind == "public" or state.me in c.members}
    rows = [
        m
        for m in state.messages.values()
        if m.channel_id in readable and contains(m.text, query) and (author is None or m.author == author)
    ]
    return paginate(_newest(rows), offset, limit)


@service.read(op="list", entity="message", collection="messages", reads=("thread_id",))
def get_thread(state: ChatState, message_id: MessageId) -> list[Message]:
    """Get a message's thread: the parent first, then its replies oldest first.

    Args:
        message_id: Id of the parent message or of any reply in the thread.
    """
    message, _ = _message(state, message_id)
    parent = state.messages[message.thread_id] if message.thread_id else message
    replies = sorted((m for m in state.messages.values() if m.thread_id == parent.id), key=lambda m: m.posted_at)
    return [parent, *replies]


def _invitable(state: ChatState, usernames: list[str]) -> list[str]:
    for username in usernames:
        user = require(state.users, username, "user")
        if user.account_type == "deactivated":
            raise Conflict(f"user {username!r} is deactivated")
    return list(dict.fromkeys(usernames))


@service.write(
    op="create", entity="channel", collection="channels", sets=("name", "kind", "topic", "members", "created_by")
)
def create_channel(
    state: ChatState,
    name: ChannelName,
    private: Flag = False,
    topic: Note = "",
    members: list[Username] | None = None,
) -> Channel:
    """Create a channel; the user becomes its creator and first member.

    Args:
        name: Channel name, unique in the workspace (archived channels included).
        private: Whether only invited members can see the channel.
        topic: Topic shown in the channel header.
        members: Usernames to add besides the user.
    """
    clash = next((c for c in state.channels.values() if c.name == name), None)
    if clash is not None:
        raise Conflict(f"channel name {name!r} is taken by channel {clash.id!r}" + (" (archived)" * clash.archived))
    others = _invitable(state, members or [])
    channel = Channel(
        id=state.new_id("ch"),
        name=name,
        kind="private" if private else "public",
        topic=topic,
        members=list(dict.fromkeys([state.me, *others])),
        created_by=state.me,
        created_at=state.tick(),
    )
    state.channels[channel.id] = channel
    return channel


@service.write(op="update", entity="channel", collection="channels", sets=("topic",))
def update_channel(state: ChatState, channel_id: ChannelId, topic: Note) -> Channel:
    """Set the topic of a channel the user belongs to.

    Args:
        channel_id: Id of the channel.
        topic: New topic.
    """
    channel = _writable(state, channel_id)
    if channel.kind == "direct":
        raise BadRequest(f"argument 'channel_id': {channel_id!r} is a direct-message conversation without a topic")
    channel.topic = topic
    state.tick()
    return channel


@service.write(op="append", entity="channel", collection="channels", sets=("members",))
def join_channel(state: ChatState, channel_id: ChannelId) -> Channel:
    """Join a public channel.

    Args:
        channel_id: Id of the public channel.
    """
    channel = _readable(state, channel_id)
    if channel.kind != "public":
        raise Forbidden(f"channel {channel_id!r} is not public; ask a member to invite the user")
    if channel.archived:
        raise Conflict(f"channel {channel_id!r} is archived")
    if state.me in channel.members:
        raise Conflict(f"the user is already a member of channel {channel_id!r}")
    channel.members.append(state.me)
    state.tick()
    return channel


@service.write(op="append", entity="channel", collection="channels", sets=("members",))
def invite_members(state: ChatState, channel_id: ChannelId, usernames: list[Username]) -> Channel:
    """Add people to a channel the user belongs to.

    Args:
        channel_id: Id of the channel.
        usernames: Usernames to add (active users who are not members yet).
    """
    channel = _writable(state, channel_id)
    if channel.kind == "direct":
        raise BadRequest(f"argument 'channel_id': {channel_id!r} is a direct-message conversation")
    if not usernames:
        raise BadRequest("argument 'usernames': at least one username is required")
    new = _invitable(state, usernames)
    for username in new:
        if username in channel.members:
            raise Conflict(f"user {username!r} is already a member of channel {channel_id!r}")
    channel.members.extend(new)
    state.tick()
    return channel


@service.write(op="remove", entity="channel", collection="channels", sets=("members",))
def remove_member(state: ChatState, channel_id: ChannelId, username: Username) -> Channel:
    """Remove a member from a channel; the user may always leave, but only the creator removes others.

    Args:
        channel_id: Id of the channel.
        username: Username to remove (the user's own to leave).
    """
    channel = _writable(state, channel_id)
    if channel.kind == "direct" or channel.name == GENERAL:
        raise Forbidden(f"nobody can leave or be removed from channel {channel_id!r}")
    if username not in channel.members:
        raise NotFound(f"member {username!r} not found in channel {channel_id!r}")
    if username != state.me and channel.created_by != state.me:
        raise Forbidden(f"only the creator {channel.created_by!r} may remove others from channel {channel_id!r}")
    channel.members.remove(username)
    state.tick()
    return channel


@service.write(op="transition", entity="channel", collection="channels", sets=("archived",))
def archive_channel(state: ChatState, channel_id: ChannelId) -> Channel:
    """Archive a channel the user belongs to: it stays readable but accepts no more writes.

    Args:
        channel_id: Id of the channel.
    """
    channel = _writable(state, channel_id)
    if channel.kind == "direct" or channel.name == GENERAL:
        raise Forbidden(f"channel {channel_id!r} cannot be archived")
    channel.archived = True
    state.tick()
    return channel


def _post(state: ChatState, channel: Channel, text: str, parent: Message | None) -> Message:
    message = Message(
        id=state.new_id("msg"),
        channel_id=channel.id,
        author=state.me,
        text=text,
        posted_at=state.tick(),
        thread_id=parent.id if parent else None,
    )
    if parent is not None:
        parent.reply_count += 1
    state.messages[message.id] = message
    return message


@service.write(
    op="send", entity="message", collection="messages", sets=("channel_id", "author", "text", "posted_at", "thread_id")
)
def post_message(
    state: ChatState, channel_id: ChannelId, text: MessageText, thread_id: MessageId | None = None
) -> Message:
    """Post a message in a channel the user belongs to, or reply in a thread.

    Args:
        channel_id: Id of the channel.
        text: Message text.
        thread_id: Id of the top-level message to reply to.
    """
    channel = _writable(state, channel_id)
    parent = require(state.messages, thread_id, "message") if thread_id is not None else None
    if parent is not None and parent.channel_id != channel_id:
        raise BadRequest(f"argument 'thread_id': message {thread_id!r} is not in channel {channel_id!r}")
    if parent is not None and parent.thread_id is not None:
        raise BadRequest(f"argument 'thread_id': message {thread_id!r} is a reply; use its parent")
    return _post(state, channel, text, parent)


@service.write(op="send", entity="message", collection="messages", sets=("channel_id", "author", "text", "posted_at"))
def send_direct_message(state: ChatState, username: Username, text: MessageText) -> Message:
    """Send a direct message to one person, opening the conversation if needed.

    Args:
        username: Username of the recipient.
        text: Message text.
    """
    user = require(state.users, username, "user")
    if username == state.me:
        raise BadRequest("argument 'username': the user cannot message themselves")
    if user.account_type == "deactivated":
        raise Forbidden(f"user {username!r} is deactivated and cannot receive messages")
    pair = sorted([state.me, username])
    channel = next((c for c in state.channels.values() if c.kind == "direct" and sorted(c.members) == pair), None)
    if channel is None:
        channel = Channel(
            id=state.new_id("ch"),
            name=None,
            kind="direct",
            members=[state.me, username],
            created_by=state.me,
            created_at=state.clock,
        )
        state.channels[channel.id] = channel
    return _post(state, channel, text, None)


@service.write(op="update", entity="message", collection="messages", sets=("text",))
def edit_message(state: ChatState, message_id: MessageId, text: MessageText) -> Message:
    """Change the text of one of the user's own messages.

    Args:
        message_id: Id of the message.
        text: New text.
    """
    message, channel = _message(state, message_id)
    if message.author != state.me:
        raise Forbidden(f"only the author {message.author!r} may edit message {message_id!r}")
    if channel.archived:
        raise Conflict(f"channel {channel.id!r} is archived")
    message.text = text
    message.edited_at = state.tick()
    return message


@service.write(op="delete", entity="message", collection="messages")
def delete_message(state: ChatState, message_id: MessageId) -> Deleted:
    """Delete one of the user's own messages; deleting a thread's parent deletes its replies.

    Args:
        message_id: Id of the message.
    """
    message, channel = _message(state, message_id)
    if message.author != state.me:
        raise Forbidden(f"only the author {message.author!r} may delete message {message_id!r}")
    if channel.archived:
        raise Conflict(f"channel {channel.id!r} is archived")
    replies = [m.id for m in state.messages.values() if m.thread_id == message_id]
    for reply in replies:
        del state.messages[reply]
    if message.thread_id in state.messages:
        state.messages[message.thread_id].reply_count -= 1
    del state.messages[message_id]
    state.tick()
    return Deleted(id=message_id, replies_deleted=len(replies))


@service.write(op="append", entity="message", collection="messages", sets=("reactions",))
def add_reaction(state: ChatState, message_id: MessageId, emoji: Emoji) -> Message:
    """React to a message with an emoji on behalf of the user.

    Args:
        message_id: Id of the message.
        emoji: Emoji short name, e.g. thumbsup.
    """
    message, _ = _message(state, message_id)
    _writable(state, message.channel_id)
    reaction = next((r for r in message.reactions if r.emoji == emoji), None)
    if reaction is not None and state.me in reaction.users:
        raise Conflict(f"the user already reacted with {emoji!r} to message {message_id!r}")
    if reaction is None:
        message.reactions.append(Reaction(emoji=emoji, users=[state.me]))
    else:
        reaction.users.append(state.me)
    state.tick()
    return message


@service.write(op="update", entity="message", collection="messages", sets=("pinned",))
def pin_message(state: ChatState, message_id: MessageId, pinned: Flag = True) -> Message:
    """Pin a message to its channel, or unpin it.

    Args:
        message_id: Id of the message.
        pinned: True to pin, false to unpin.
    """
    message, _ = _message(state, message_id)
    _writable(state, message.channel_id)
    if message.pinned == pinned:
        raise Conflict(f"message {message_id!r} is already {'pinned' if pinned else 'not pinned'}")
    pins = sum(1 for m in state.messages.values() if m.channel_id == message.channel_id and m.pinned)
    if pinned and pins >= MAX_PINS:
        raise Conflict(f"channel {message.channel_id!r} already has {MAX_PINS} pinned messages; unpin one first")
    message.pinned = pinned
    state.tick()
    return message
