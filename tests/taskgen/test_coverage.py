"""The reach of the pattern library: which patterns each service can join."""

from __future__ import annotations

import textwrap

from hub.core import Hub
from taskgen.coverage import MIN_PATTERNS, SHORT_OF_PATTERNS, service_patterns, short_of
from taskgen.pattern import Pattern, load_patterns


def _pattern(trigger: str, reaction_op: str, reaction_entity: str, categories: list[str] | None = None) -> Pattern:
    return Pattern.model_validate(
        {
            "id": "probe",
            "category": "sales",
            "personas": ["Sam, operations"],
            "trigger": {"entity": [trigger], "state": [], "situation": ["The {entity} '{anchor}' came in."]},
            "reactions": [
                {
                    "id": "act",
                    "op": [reaction_op],
                    "entity": [reaction_entity],
                    "categories": categories or [],
                    "ask": ["Do the thing."],
                },
                {"id": "other", "op": ["create"], "entity": ["no_such_kind"], "ask": ["And the other thing."]},
            ],
        }
    )


def test_a_service_joins_as_trigger_and_as_reaction(hub: Hub) -> None:
    joined = service_patterns(hub.registry, [_pattern("deal", "send", "message")])
    assert joined["crm"] == ["probe"]  # lists deals: the trigger
    assert joined["email"] == ["probe"]  # sends messages: the reaction
    assert joined["calendar"] == []


def test_a_reaction_limited_to_categories_joins_only_those(hub: Hub) -> None:
    category = hub.registry.services["email"].category
    other = "finance" if category != "finance" else "sales"
    assert service_patterns(hub.registry, [_pattern("deal", "send", "message", [other])])["email"] == []
    assert service_patterns(hub.registry, [_pattern("deal", "send", "message", [category])])["email"] == ["probe"]


def test_a_service_whose_records_are_never_in_the_trigger_state_does_not_join(hub: Hub) -> None:
    won = _pattern("deal", "send", "message").model_dump()
    won["trigger"]["state"] = ["won"]
    assert service_patterns(hub.registry, [Pattern.model_validate(won)])["crm"] == ["probe"]
    won["trigger"]["state"] = ["hibernating"]  # no deal of the CRM is ever in that state
    assert service_patterns(hub.registry, [Pattern.model_validate(won)])["crm"] == []


def test_a_write_that_cannot_take_a_linked_value_does_not_join(hub: Hub) -> None:
    data = _pattern("deal", "send", "message").model_dump()
    data["reactions"][0]["links"] = {"recipient": "trigger.contact:email_address"}
    assert service_patterns(hub.registry, [Pattern.model_validate(data)])["email"] == ["probe"]
    data["reactions"][0]["links"] = {"salary": "trigger.value"}  # no message carries a salary
    assert service_patterns(hub.registry, [Pattern.model_validate(data)])["email"] == []


def test_a_trigger_whose_records_lack_what_the_reactions_take_does_not_join(hub: Hub) -> None:
    data = _pattern("deal", "send", "message").model_dump()
    data["reactions"][0]["links"] = {"recipient": "trigger.owner:email_address"}
    assert service_patterns(hub.registry, [Pattern.model_validate(data)])["crm"] == ["probe"]
    data["reactions"][0]["links"] = {"recipient": "trigger.guardian:email_address"}  # deals have no guardian
    assert service_patterns(hub.registry, [Pattern.model_validate(data)])["crm"] == []


def test_the_library_s_patterns_reach_the_core_services(hub: Hub) -> None:
    joined = service_patterns(hub.registry, load_patterns())
    assert set(joined) == set(hub.registry.services)
    short = short_of(hub.registry)
    for core in ("crm", "email", "calendar", "helpdesk", "invoicing", "tracker"):
        assert core not in short and len(joined[core]) >= 3


def test_the_services_short_of_patterns_are_exactly_the_known_debt(hub: Hub) -> None:
    short = set(short_of(hub.registry))
    if short != SHORT_OF_PATTERNS:
        names = textwrap.fill(", ".join(f'"{n}"' for n in sorted(short)), 108, initial_indent="    ",
                              subsequent_indent="    ")  # fmt: skip
        raise AssertionError(
            f"the services joining fewer than {MIN_PATTERNS} patterns changed: newly short"
            f" {sorted(short - SHORT_OF_PATTERNS)}, no longer short {sorted(SHORT_OF_PATTERNS - short)}."
            f" A new service must join {MIN_PATTERNS} patterns (add patterns to taskgen/workflows/ or roles to"
            " its spec); once patterns are added, paste the current set into taskgen/coverage.py:"
            f"\n\nSHORT_OF_PATTERNS: frozenset[str] = frozenset({{\n{names}\n}})  # fmt: skip\n"
        )
