"""The shared vocabulary of semantic value types.

Every tool parameter and every result field of every service is annotated with one of these
types. Two tools of different services connect when an output of one has the semantic type of
an input of the other; the task generator builds its dependency graph from exactly that.

A semantic type is a plain ``Annotated`` alias: the base Python type plus a pydantic ``Field``
carrying a default description and the JSON-schema key ``x-semantic-type``. Annotating a field
``to: EmailAddress`` therefore yields, in every JSON schema pydantic emits,
``{"type": "string", "format": "email", "x-semantic-type": "email_address", ...}``.
A field may still override the description: ``to: EmailAddress = Field(description="...")``.

Entity ids are semantic types too, one per entity and service (``id_type("crm", "deal")`` is
``crm.deal_id``), so a walk can only pass a deal id to a tool that takes a deal id.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Final, Literal

from pydantic import Field

SEMANTIC_KEY: Final = "x-semantic-type"

#: Every registered semantic type name → its description (entity ids included).
VOCABULARY: dict[str, str] = {}


def semantic(name: str, base: Any, description: str, **constraints: Any) -> Any:
    """Define a semantic type: ``base`` annotated with its name, a description and constraints."""
    if name in VOCABULARY and VOCABULARY[name] != description:
        raise ValueError(f"semantic type {name!r} is already defined with another description")
    VOCABULARY[name] = description
    return Annotated[base, Field(description=description, json_schema_extra={SEMANTIC_KEY: name}, **constraints)]


def id_type(service: str, entity: str) -> Any:
    """The id type of one entity of one service, e.g. ``id_type("crm", "deal")`` → ``crm.deal_id``."""
    return semantic(f"{service}.{entity}_id", str, f"Id of a {entity.replace('_', ' ')} in {service}.")


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
PersonName = semantic("person_name", str, "Full name of a person.", min_length=1, max_length=120)
EmailAddress = semantic(
    "email_address",
    str,
    "Email address of a person or mailbox.",
    pattern=r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$",
    max_length=254,
)
PhoneNumber = semantic(
    "phone_number", str, "Phone number in E.164 form, e.g. +14155550123.", pattern=r"^\+[1-9][0-9]{6,14}$"
)
JobTitle = semantic("job_title", str, "Job title or role of a person.", min_length=1, max_length=120)
Department = semantic("department", str, "Department or team within an organisation.", min_length=1)
CompanyName = semantic("company_name", str, "Name of a company or organisation.", min_length=1, max_length=160)
Domain = semantic("web_domain", str, "Internet domain name, e.g. example.com.", pattern=r"^[a-z0-9-]+(\.[a-z0-9-]+)+$")
Url = semantic("url", str, "Absolute http(s) URL.", pattern=r"^https?://[^\s]+$", max_length=2048)
StreetAddress = semantic("street_address", str, "Postal address on one line.", min_length=1, max_length=300)
City = semantic("city", str, "City name.", min_length=1, max_length=120)
CountryCode = semantic("country_code", str, "ISO 3166-1 alpha-2 country code.", pattern=r"^[A-Z]{2}$")
Username = semantic("username", str, "Login or handle of a user.", pattern=r"^[a-z0-9._-]{2,40}$")

# Time
Date = semantic("date", dt.date, "Calendar date (YYYY-MM-DD).")
DateTime = semantic("date_time", dt.datetime, "Date and time with timezone (ISO 8601).")
Minutes = semantic("duration_minutes", int, "Duration in minutes.", ge=0, le=100_000)
Days = semantic("duration_days", float, "Duration in days (half days allowed).", ge=0, le=365)

# Money and commerce
MoneyAmount = semantic("money_amount", float, "Amount of money in the given currency.", ge=0, le=1e9)
Currency = semantic("currency_code", str, "ISO 4217 currency code, e.g. USD.", pattern=r"^[A-Z]{3}$")
Percentage = semantic("percentage", float, "Percentage between 0 and 100.", ge=0, le=100)
Quantity = semantic("quantity", int, "Number of units.", ge=0, le=1_000_000)
Sku = semantic("product_sku", str, "Stock keeping unit of a product.", pattern=r"^[A-Z0-9-]{3,32}$")
ProductName = semantic("product_name", str, "Name of a product.", min_length=1, max_length=160)
Iban = semantic("bank_account", str, "Bank account number (IBAN).", pattern=r"^[A-Z]{2}[0-9A-Z]{10,32}$")

# Text
Title = semantic("title", str, "Short title or subject line.", min_length=1, max_length=300)
DocumentText = semantic("document_text", str, "Free-form body text.", max_length=100_000)
Note = semantic("note", str, "Short free-form note or comment.", max_length=5_000)
Tag = semantic("tag", str, "Short label used to categorise records.", pattern=r"^[a-z0-9][a-z0-9_-]{0,39}$")
Query = semantic("search_query", str, "Free-text search query (case-insensitive substring).", max_length=300)
FileName = semantic("file_name", str, "Name of a file including its extension.", min_length=1, max_length=255)
MimeType = semantic("mime_type", str, "Media type of a file, e.g. text/plain.", pattern=r"^[a-z]+/[a-z0-9.+-]+$")
ChannelName = semantic("channel_name", str, "Name of a chat channel.", pattern=r"^[a-z0-9][a-z0-9_-]{0,79}$")
CellRef = semantic("cell_ref", str, "Spreadsheet cell reference in A1 notation.", pattern=r"^[A-Z]{1,3}[1-9][0-9]{0,5}$")
CellValue = semantic("cell_value", str, "Text content of a spreadsheet cell.", max_length=10_000)
EventName = semantic("event_name", str, "Name of an automation trigger event, e.g. deal.won.", min_length=1)

# Counting, paging and flags
Count = semantic("count", int, "Number of records.", ge=0)
Limit = semantic("page_limit", int, "Maximum number of records to return.", ge=1, le=200)
Offset = semantic("page_offset", int, "Number of records to skip (for pagination).", ge=0)
Flag = semantic("flag", bool, "Yes/no switch.")
Priority = semantic("priority", Literal["low", "normal", "high", "urgent"], "Priority level.")
Rating = semantic("rating", int, "Rating from 1 to 5.", ge=1, le=5)


# Communication, places and references
MessageText = semantic("message_text", str, "Text of a chat or SMS message.", min_length=1, max_length=4000)
Location = semantic("location", str, "Place such as a meeting room, office or address.", min_length=1, max_length=200)
TimeZone = semantic("time_zone", str, "IANA time zone name, e.g. Europe/Berlin.", pattern=r"^[A-Za-z]+(/[A-Za-z_+-]+)*$")
Hours = semantic("duration_hours", float, "Duration in hours.", ge=0, le=10_000)
ReferenceCode = semantic(
    "reference_code", str, "External reference such as a PO, order or invoice number.", pattern=r"^[A-Z]{2,5}-[0-9]{3,10}$"
)
PayloadText = semantic("payload_text", str, "JSON or text payload delivered to a webhook.", max_length=20_000)
