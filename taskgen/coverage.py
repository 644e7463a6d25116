"""Which workflow patterns each service can take part in: the reach of the pattern library.

A service joins a pattern when the pattern can use it: as the trigger (the service lists records
of one of the trigger's entity kinds) or as a reaction (it has a write tool declaring one of the
reaction's ops on one of its entity kinds, in one of the reaction's categories when it names
some), the ``instead`` reactions of rules included. This is read from tool metadata alone (no
world is opened), so it is what a service *can* join; ``compoworld tasks patterns`` shows what
instantiates. A service that joins no pattern adds tools and no tasks.
"""

from __future__ import annotations

from collections.abc import Iterable

from hub.registry import Registry
from taskgen.pattern import Pattern, Reaction, load_patterns

MIN_PATTERNS = 3
"""Patterns every service should join (issue: the library at the paper's scale)."""

SHORT_OF_PATTERNS: frozenset[str] = frozenset({
    "flights", "fx", "geocoding", "news", "stocks", "translate", "weather", "websearch"
})  # fmt: skip
"""Known debt: the services of the default hub that join fewer than :data:`MIN_PATTERNS` patterns
today. A test checks this set is exact, both ways: a service that reaches three patterns must leave
it (so it only shrinks as patterns are added) and a new service short of patterns fails the test
instead of joining it silently. The test's failure message prints the current set to paste here."""


def _reactions(pattern: Pattern) -> list[Reaction]:
    return [*pattern.reactions, *(rule.instead for rule in pattern.rules if rule.instead is not None)]


def service_patterns(registry: Registry, patterns: Iterable[Pattern] | None = None) -> dict[str, list[str]]:
    """``{service: [pattern id, …]}`` for every service of ``registry`` (sorted ids; [] for none)."""
    writes: dict[tuple[str, str], set[str]] = {}  # (op, entity kind) -> services
    listings: dict[str, set[str]] = {}  # entity kind -> services that list it
    for entry in registry.tools.values():
        meta = entry.meta
        if meta is None or not meta.entity:
            continue
        if entry.kind == "write":
            writes.setdefault((meta.op, meta.entity), set()).add(entry.service)
        elif meta.op in ("list", "search"):
            listings.setdefault(meta.entity, set()).add(entry.service)
    joined: dict[str, set[str]] = {name: set() for name in registry.services}
    for pattern in load_patterns() if patterns is None else patterns:
        for entity in pattern.trigger.entity:
            for name in listings.get(entity, ()):
                joined[name].add(pattern.id)
        for reaction in _reactions(pattern):
            for op in reaction.op:
                for entity in reaction.entity:
                    for name in writes.get((op, entity), ()):
                        if not reaction.categories or registry.services[name].category in reaction.categories:
                            joined[name].add(pattern.id)
    return {name: sorted(ids) for name, ids in sorted(joined.items())}


def short_of(registry: Registry, minimum: int = MIN_PATTERNS) -> dict[str, list[str]]:
    """The services that join fewer than ``minimum`` patterns, with the ones they join."""
    return {name: ids for name, ids in service_patterns(registry).items() if len(ids) < minimum}
