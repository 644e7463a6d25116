"""Which workflow patterns each service can take part in: the reach of the pattern library.

A service joins a pattern when the pattern can use it: as the trigger (the service lists records
of one of the trigger's entity kinds that can be in one of the trigger's states) or as a reaction
(it has a write tool declaring one of the reaction's ops on one of its entity kinds, in one of the
reaction's categories when it names some, that can take every value the reaction links: the
people and amounts it carries), the ``instead`` reactions of rules included. This is read from tool metadata alone (no
world is opened), so it is what a service *can* join; ``compoworld tasks patterns`` shows what
instantiates. A service that joins no pattern adds tools and no tasks.
"""

from __future__ import annotations

from collections.abc import Iterable

from hub.registry import Registry
from taskgen.pattern import Pattern, Reaction, load_patterns
from taskgen.toolindex import ToolIndex, trigger_needs

MIN_PATTERNS = 3
"""Patterns every service should join (issue: the library at the paper's scale)."""

SHORT_OF_PATTERNS: frozenset[str] = frozenset()  # fmt: skip
"""Known debt: the services of the default hub that join fewer than :data:`MIN_PATTERNS` patterns
today: none. The six simulated services that were short (their questions no trigger record could
ask, or only records that already held the answer) joined three each on 2026-12-05 through the
lookups of ``workflows/lookups2.json``: parcels tracks a store order's carrier tracking number,
flights the flight of a ground-handling turn, stocks quotes the ticker it first finds for a
company (a lookup chained on another's answer), news gives a company's latest headline, websearch
a vendor's domain where the record holds none, and translate translates a given reply, a help
article or an intranet post into a language the ask names (its answer a translated text, never a
language code: language detection was dropped when the world model drew "he" for plain English).
(Since joins check trigger states and roles and the roles a reaction links (2026-12-04), 17 more
services joined three patterns only on paper; the patterns of ``workflows/short17.json`` bring each
of them to three.) A test checks this set is exact, both ways: a
service that reaches three patterns must leave it (so it only shrinks as patterns are added) and a new
service short of patterns fails the test instead of joining it silently. The test's failure message
prints the current set to paste here."""


def _reactions(pattern: Pattern) -> list[Reaction]:
    return [*pattern.reactions, *(rule.instead for rule in pattern.rules if rule.instead is not None)]


def service_patterns(registry: Registry, patterns: Iterable[Pattern] | None = None) -> dict[str, list[str]]:
    """``{service: [pattern id, …]}`` for every service of ``registry`` (sorted ids; [] for none)."""
    index = ToolIndex(registry)
    joined: dict[str, set[str]] = {name: set() for name in registry.services}
    for pattern in load_patterns() if patterns is None else patterns:
        for service, entity in index.listings:
            # a trigger is a record of the kind in one of the situation's states: a service whose
            # records never are (no 'won' among its deals) lists them and joins nothing
            if entity not in pattern.trigger.entity or not index.in_states(service, entity, pattern.trigger.state):
                continue
            if all(index.has_role(service, entity, role, kind) for role, kind in trigger_needs(pattern)):
                joined[service].add(pattern.id)  # and its records carry what the reactions take from them
        for reaction in _reactions(pattern):
            if reaction.lookup:  # a lookup joins where a read can answer it from its inputs
                joined.update({e.service: joined[e.service] | {pattern.id} for e, _, _ in index.lookup_tools(reaction)})
                continue
            for entry in index.writers(reaction):
                # a write joins only if it can take the people and amounts the reaction carries
                if set(reaction.links) <= index.link_roles(entry):
                    joined[entry.service].add(pattern.id)
    return {name: sorted(ids) for name, ids in sorted(joined.items())}


def short_of(registry: Registry, minimum: int = MIN_PATTERNS) -> dict[str, list[str]]:
    """The services that join fewer than ``minimum`` patterns, with the ones they join."""
    return {name: ids for name, ids in service_patterns(registry).items() if len(ids) < minimum}
