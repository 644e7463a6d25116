"""Directory types, records and state, and the duplicate-detection helpers shared by seed and tools."""

from __future__ import annotations

import difflib
from typing import Annotated, Literal

from pydantic import Field

from servers.framework import Record, ServiceState
from servers.roles import ROLE_KEY, role
from servers.types import (
    City,
    CompanyName,
    DateTime,
    Department,
    EmailAddress,
    Flag,
    JobTitle,
    Note,
    Percentage,
    PersonName,
    PhoneNumber,
    Title,
    ident,
    sem,
)

PersonId = Annotated[str, ident("directory", "person")]
GroupId = Annotated[str, ident("directory", "group")]
Kind = Annotated[
    Literal["employee", "external"],
    sem("directory.person_kind", "Employee of the organisation (managed by HR) or external contact."),
]
Status = Annotated[
    Literal["active", "archived", "merged"],
    sem("directory.person_status", "Active entry, archived stale contact, or duplicate merged into another."),
]
GroupKind = Annotated[
    Literal["mailing_list", "team", "security"],
    sem("directory.group_kind", "Mailing list, team group, or security group (employees only)."),
]
Reason = Annotated[
    Literal["same_email", "same_phone", "similar_name"],
    sem("directory.duplicate_reason", "Why two entries look like the same person."),
]

SIMILAR = 0.8  # name similarity (0-1) above which two entries at the same company look like one person


class Person(Record):
    id: PersonId
    kind: Kind
    name: Annotated[PersonName, role("employee")]
    email: EmailAddress | None = Field(
        default=None, description="Work email address.", json_schema_extra={ROLE_KEY: "employee"}
    )
    phone: PhoneNumber | None = Field(
        default=None, description="Phone number.", json_schema_extra={ROLE_KEY: "employee"}
    )
    title: JobTitle | None = Field(default=None, description="Job title.")
    department: Department | None = Field(default=None, description="Department (employees).")
    company: CompanyName = Field(description="Company the person works for.", json_schema_extra={ROLE_KEY: "employer"})
    manager_email: EmailAddress | None = Field(
        default=None, description="Email address of the manager.", json_schema_extra={ROLE_KEY: "manager"}
    )
    city: City | None = Field(default=None, description="City where the person works.")
    notes: Note = Field(default="", description="Free-form notes.")
    starred: Flag = Field(default=False, description="Whether the user marked the entry as a favourite.")
    status: Status = "active"
    merged_into: PersonId | None = Field(default=None, description="Entry this duplicate was merged into.")
    updated_at: DateTime


class Group(Record):
    id: GroupId
    name: Title = Field(description="Display name of the group.")
    email: EmailAddress = Field(description="Address of the group (unique).", json_schema_extra={ROLE_KEY: "recipient"})
    kind: GroupKind
    description: Note = Field(default="", description="What the group is for.")
    owners: list[EmailAddress] = Field(
        description="Addresses of the people who manage the group.", json_schema_extra={ROLE_KEY: "owner"}
    )
    members: list[EmailAddress] = Field(description="Addresses of the members.", json_schema_extra={ROLE_KEY: "member"})


class DuplicatePair(Record):
    person_id: PersonId = Field(description="Entry to keep (employees and older entries first).")
    duplicate_id: PersonId = Field(description="Entry that looks like the same person.")
    reason: Reason
    similarity: Percentage = Field(description="Similarity of the two names.")


class DirectoryState(ServiceState):
    me: str = ""
    people: dict[str, Person] = Field(default_factory=dict)
    groups: dict[str, Group] = Field(default_factory=dict)


def name_similarity(a: Person, b: Person) -> float:
    return round(100 * difflib.SequenceMatcher(None, a.name.lower(), b.name.lower()).ratio(), 1)


def same_text(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and a.lower() == b.lower()


def duplicate_reason(a: Person, b: Person) -> str | None:
    if same_text(a.email, b.email):
        return "same_email"
    if same_text(a.phone, b.phone):
        return "same_phone"
    if same_text(a.company, b.company) and name_similarity(a, b) >= 100 * SIMILAR:
        return "similar_name"
    return None
