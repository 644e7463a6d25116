"""The registry: one flat table, valid names, collisions named at build time."""

from __future__ import annotations

import dataclasses

import pytest

from hub.registry import Registry, RegistryError, native_entry
from servers.registry import get_service


def test_tools_are_qualified_and_looked_up_by_name() -> None:
    registry = Registry.from_services([get_service("email"), get_service("crm")])
    entry = registry.tools["email__send_message"]
    assert entry.service == "email" and entry.name == "send_message" and entry.kind == "write"
    assert entry.mcp.name == "email__send_message"
    assert len(registry.tools) == sum(len(get_service(n).tools) for n in ("email", "crm"))


def test_listing_is_computed_once_per_service_set() -> None:
    registry = Registry.from_services([get_service("email"), get_service("crm")])
    first = registry.listing(["crm", "email"])
    assert registry.listing(["email", "crm"]) is first
    assert next(t.name for t in registry.listing(["email"])).startswith("email__")


def test_duplicate_service_names_both_sources() -> None:
    entry = native_entry(get_service("email"))
    other = dataclasses.replace(entry, origin="external:python fake_email.py")
    with pytest.raises(RegistryError, match=r"'email' is provided twice: servers:email and external:python fake_email"):
        Registry.build([entry, other])


def test_colliding_tool_names_are_an_error() -> None:
    entry = native_entry(get_service("email"))
    clash = dataclasses.replace(entry, name="email_copy", origin="external:copy", tools=entry.tools[:1])
    with pytest.raises(RegistryError, match="email__list_messages' is provided twice"):
        Registry.build([entry, clash])


def test_invalid_tool_names_are_rejected() -> None:
    entry = native_entry(get_service("email"))
    bad_tool = dataclasses.replace(entry.tools[0], qualified="email__bad name!")
    with pytest.raises(RegistryError, match="not valid for MCP clients"):
        Registry.build([dataclasses.replace(entry, tools=(bad_tool,))])


def test_registry_is_immutable() -> None:
    registry = Registry.from_services([get_service("email")])
    with pytest.raises(TypeError):
        registry.tools["x"] = registry.tools["email__send_message"]  # type: ignore[index]
