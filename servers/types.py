"""The shared vocabulary of semantic value types.

Every tool parameter and every result field of every service is annotated with one of these
types. Two tools of different services connect when an output of one has the semantic type of
an input of the other; the task generator builds its dependency graph from exactly that.

A semantic type is a plain ``Annotated`` alias, ``EmailAddress = Annotated[str, sem("email_address",
"...")]``: the base Python type plus a pydantic ``Field`` carrying a default description and the
JSON-schema key ``x-semantic-type``. Annotating a field
``to: EmailAddress`` therefore yields, in every JSON schema pydantic emits,
``{"type": "string", "x-semantic-type": "email_address", "description": ..., ...}``.
A field may still override the description: ``to: EmailAddress = Field(description="...")``.

Entity ids are semantic types too, one per entity and service
(``DealId = Annotated[str, ident("crm", "deal")]`` is ``crm.deal_id``), so a walk can only pass
a deal id to a tool that takes a deal id.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Final, Literal

from pydantic import AwareDatetime, Field

SEMANTIC_KEY: Final = "x-semantic-type"

#: Every registered semantic type name → its description (entity ids included).
VOCABULARY: dict[str, str] = {}


def sem(name: str, description: str, **constraints: Any) -> Any:
    """The ``Field`` that makes a type semantic: ``Annotated[str, sem("email_address", "...")]``.

    Written as an ``Annotated`` alias (not a call that returns a type) so that type checkers see
    ``EmailAddress`` as ``str``.
    """
    if VOCABULARY.get(name, description) != description:
        raise ValueError(f"semantic type {name!r} is already defined with another description")
    VOCABULARY[name] = description
    return Field(description=description, json_schema_extra={SEMANTIC_KEY: name}, **constraints)


def ident(service: str, entity: str) -> Any:
    """The id type of an entity of a service: ``Annotated[str, ident("crm", "deal")]`` is ``crm.deal_id``."""
    return sem(f"{service}.{entity}_id", f"Id of a {entity.replace('_', ' ')} in {service}.")


def semantic(name: str, base: Any, description: str, **constraints: Any) -> Any:
    """Runtime form of ``Annotated[base, sem(...)]``; prefer the alias form, which type checkers read."""
    return Annotated[base, sem(name, description, **constraints)]


def resolve_ref(schema: Any, defs: Any) -> dict[str, Any]:
    """A ``{"$ref": "#/$defs/Name"}`` schema replaced by its definition (other schemas as they are)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return dict(defs.get(ref.removeprefix("#/$defs/"), {}))
    return schema


def semantic_of(schema: dict[str, Any]) -> str | None:
    """The semantic type of a JSON-schema property, looking through arrays and ``anyOf`` (optional)."""
    if SEMANTIC_KEY in schema:
        return str(schema[SEMANTIC_KEY])
    if isinstance(schema.get("items"), dict):
        return semantic_of(schema["items"])
    for branch in schema.get("anyOf", []):
        if branch.get("type") != "null":
            found = semantic_of(branch)
            if found:
                return found
    return None


# People and organisations
PersonName = Annotated[str, sem("person_name", "Full name of a person.", min_length=1, max_length=120)]
EmailAddress = Annotated[
    str,
    sem(
        "email_address",
        "Email address of a person or mailbox.",
        pattern=r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$",
        max_length=254,
    ),
]
PhoneNumber = Annotated[
    str,
    sem("phone_number", "Phone number in E.164 form, e.g. +14155550123.", pattern=r"^\+[1-9][0-9]{6,14}$"),
]
JobTitle = Annotated[str, sem("job_title", "Job title or role of a person.", min_length=1, max_length=120)]
Department = Annotated[str, sem("department", "Department or team within an organisation.", min_length=1)]
CompanyName = Annotated[str, sem("company_name", "Name of a company or organisation.", min_length=1, max_length=160)]
Domain = Annotated[
    str, sem("web_domain", "Internet domain name, e.g. example.com.", pattern=r"^[a-z0-9-]+(\.[a-z0-9-]+)+$")
]
Url = Annotated[str, sem("url", "Absolute http(s) URL.", pattern=r"^https?://[^\s]+$", max_length=2048)]
StreetAddress = Annotated[str, sem("street_address", "Postal address on one line.", min_length=1, max_length=300)]
City = Annotated[str, sem("city", "City name.", min_length=1, max_length=120)]
CountryCode = Annotated[str, sem("country_code", "ISO 3166-1 alpha-2 country code.", pattern=r"^[A-Z]{2}$")]
Username = Annotated[str, sem("username", "Login or handle of a user.", pattern=r"^[a-z0-9._-]{2,40}$")]

# Time


# Tool arguments of these types must be ISO 8601 text; the framework refuses numbers (which pydantic
# would read as Unix timestamps) at the envelope boundary, so stored records validate at full speed.
Date = Annotated[dt.date, sem("date", "Calendar date (YYYY-MM-DD).")]
DateTime = Annotated[AwareDatetime, sem("date_time", "Date and time with timezone (ISO 8601).")]
Minutes = Annotated[int, sem("duration_minutes", "Duration in minutes.", ge=0, le=100_000)]
Days = Annotated[float, sem("duration_days", "Duration in days (half days allowed).", ge=0, le=365)]

# Money and commerce
MoneyAmount = Annotated[float, sem("money_amount", "Amount of money in the given currency.", ge=0, le=1e9)]
Currency = Annotated[str, sem("currency_code", "ISO 4217 currency code, e.g. USD.", pattern=r"^[A-Z]{3}$")]
Percentage = Annotated[float, sem("percentage", "Percentage between 0 and 100.", ge=0, le=100)]
Quantity = Annotated[int, sem("quantity", "Number of units.", ge=0, le=1_000_000)]
Sku = Annotated[str, sem("product_sku", "Stock keeping unit of a product.", pattern=r"^[A-Z0-9-]{3,32}$")]
ProductName = Annotated[str, sem("product_name", "Name of a product.", min_length=1, max_length=160)]
Iban = Annotated[str, sem("bank_account", "Bank account number (IBAN).", pattern=r"^[A-Z]{2}[0-9A-Z]{10,32}$")]

# Text
Title = Annotated[str, sem("title", "Short title or subject line.", min_length=1, max_length=300)]
DocumentText = Annotated[str, sem("document_text", "Free-form body text.", max_length=100_000)]
Note = Annotated[str, sem("note", "Short free-form note or comment.", max_length=5_000)]
Tag = Annotated[str, sem("tag", "Short label used to categorise records.", pattern=r"^[a-z0-9][a-z0-9_-]{0,39}$")]
Query = Annotated[str, sem("search_query", "Free-text search query (case-insensitive substring).", max_length=300)]
FileName = Annotated[str, sem("file_name", "Name of a file including its extension.", min_length=1, max_length=255)]
MimeType = Annotated[str, sem("mime_type", "Media type of a file, e.g. text/plain.", pattern=r"^[a-z]+/[a-z0-9.+-]+$")]
ChannelName = Annotated[str, sem("channel_name", "Name of a chat channel.", pattern=r"^[a-z0-9][a-z0-9_-]{0,79}$")]
CellRef = Annotated[
    str, sem("cell_ref", "Spreadsheet cell reference in A1 notation.", pattern=r"^[A-Z]{1,3}[1-9][0-9]{0,5}$")
]
CellValue = Annotated[str, sem("cell_value", "Text content of a spreadsheet cell.", max_length=10_000)]
EventName = Annotated[str, sem("event_name", "Name of an automation trigger event, e.g. deal.won.", min_length=1)]

# Counting, paging and flags
Count = Annotated[int, sem("count", "Number of records.", ge=0)]
Limit = Annotated[int, sem("page_limit", "Maximum number of records to return.", ge=1, le=200)]
Offset = Annotated[int, sem("page_offset", "Number of records to skip (for pagination).", ge=0)]
Flag = Annotated[bool, sem("flag", "Yes/no switch.")]
Priority = Annotated[Literal["low", "normal", "high", "urgent"], sem("priority", "Priority level.")]
Rating = Annotated[int, sem("rating", "Rating from 1 to 5.", ge=1, le=5)]


# Communication, places and references
MessageText = Annotated[str, sem("message_text", "Text of a chat or SMS message.", min_length=1, max_length=4000)]
Location = Annotated[
    str, sem("location", "Place such as a meeting room, office or address.", min_length=1, max_length=200)
]
TimeZone = Annotated[
    str, sem("time_zone", "IANA time zone name, e.g. Europe/Berlin.", pattern=r"^[A-Za-z]+(/[A-Za-z_+-]+)*$")
]
Hours = Annotated[float, sem("duration_hours", "Duration in hours.", ge=0, le=10_000)]
ReferenceCode = Annotated[
    str,
    sem(
        "reference_code",
        "External reference such as a PO, order or invoice number.",
        pattern=r"^[A-Z]{2,5}-[0-9]{3,10}$",
    ),
]
PayloadText = Annotated[str, sem("payload_text", "JSON or text payload delivered to a webhook.", max_length=20_000)]
Total = Annotated[float, sem("total", "Sum of a numeric field over a group of records.")]
