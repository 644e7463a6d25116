"""Chat service: id and semantic types, records and state."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from servers.framework import Record, ServiceState
from servers.roles import ROLE_KEY, role
from servers.types import (
    ChannelName,
    CompanyName,
    Count,
    DateTime,
    Department,
    EmailAddress,
    Flag,
    JobTitle,
    MessageText,
    Note,
    PersonName,
    Username,
    ident,
    sem,
)

ChannelId = Annotated[str, ident("chat", "channel")]
MessageId = Annotated[str, ident("chat", "message")]
ChannelKind = Annotated[
    Literal["public", "private", "direct"],
    sem("chat.channel_kind", "Public channel, private channel or direct-message conversation."),
]
AccountType = Annotated[
    Literal["member", "guest", "deactivated"],
    sem("chat.account_type", "Workspace member, external guest, or deactivated account."),
]
Emoji = Annotated[
    str, sem("chat.emoji", "Emoji short name without colons, e.g. thumbsup.", pattern=r"^[a-z0-9_+-]{1,40}$")
]

MAX_PINS = 10
GENERAL = "general"


class ChatUser(Record):
    username: Username
    name: Annotated[PersonName, role("member")]
    email: Annotated[EmailAddress, role("member")]
    title: JobTitle
    department: Department
    company: CompanyName = Field(
        description="Company the user works for (guests are external).", json_schema_extra={ROLE_KEY: "employer"}
    )
    account_type: AccountType


class Channel(Record):
    id: ChannelId
    name: ChannelName | None = Field(description="Channel name; null for direct messages.")
    kind: ChannelKind
    topic: Note = Field(default="", description="Topic shown in the channel header.")
    members: list[Username] = Field(description="Usernames of the channel's members.")
    created_by: Username = Field(description="Username of the channel's creator.")
    created_at: DateTime
    archived: Flag = Field(default=False, description="Archived channels are read-only.")


class Reaction(Record):
    emoji: Emoji
    users: list[Username] = Field(description="Usernames of the people who reacted.")


class Message(Record):
    id: MessageId
    channel_id: ChannelId
    author: Username = Field(description="Username of the author.")
    text: MessageText
    posted_at: Annotated[DateTime, role("event")]
    thread_id: MessageId | None = Field(default=None, description="Parent message when this is a thread reply.")
    reply_count: Count = Field(default=0, description="Number of thread replies.")
    reactions: list[Reaction] = Field(default_factory=list, description="Emoji reactions.")
    pinned: Flag = Field(default=False, description="Whether the message is pinned in its channel.")
    edited_at: DateTime | None = Field(default=None, description="Last edit, if the message was edited.")


class Deleted(Record):
    id: MessageId = Field(description="Id of the deleted message.")
    replies_deleted: Count = Field(description="Thread replies deleted with it.")


class ChatState(ServiceState):
    me: str = ""
    users: dict[str, ChatUser] = Field(default_factory=dict)
    channels: dict[str, Channel] = Field(default_factory=dict)
    messages: dict[str, Message] = Field(default_factory=dict)
