"""The typed dependency graph over every tool of a hub.

Nodes are qualified tool names. An edge A → B (``kind="output"``) means a result field of A has
the semantic type of a required parameter of B, so B can consume what A produced; the edge
carries the shared types. A ``kind="state"`` edge W → R means a write W stores a value of a type
(one of its parameters) that a read R of another service requires: the value reaches R through
the world rather than through W's result. Types that carry no identity (counts, paging, flags,
free text) do not link tools.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx

from hub.registry import Registry, ToolEntry
from servers.types import SEMANTIC_KEY, resolve_ref

NON_LINKING = frozenset(
    {
        "count",
        "page_limit",
        "page_offset",
        "flag",
        "search_query",
        "note",
        "document_text",
        "message_text",
        "title",
        "priority",
        "rating",
        "percentage",
        "duration_minutes",
        "duration_days",
        "duration_hours",
        "tag",
        "payload_text",
        "cell_value",
        "quantity",
    }
)


def field_types(schema: Mapping[str, Any], defs: Mapping[str, Any] | None = None, depth: int = 0) -> set[str]:
    """Every semantic type found anywhere in a (result) schema."""
    defs = defs if defs is not None else schema.get("$defs", {})
    found: set[str] = set()
    if depth > 6:
        return found
    schema = resolve_ref(schema, defs)
    if SEMANTIC_KEY in schema:
        found.add(str(schema[SEMANTIC_KEY]))
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            found |= field_types(schema[key], defs, depth + 1)
    for branch in schema.get("anyOf", []):
        found |= field_types(branch, defs, depth + 1)
    for prop in schema.get("properties", {}).values():
        found |= field_types(prop, defs, depth + 1)
    return found


def required_types(entry: ToolEntry) -> dict[str, str]:
    """Required parameter → its semantic type."""
    props = entry.input_schema.get("properties", {})
    out = {}
    for name in entry.input_schema.get("required", []):
        kind = field_types(props.get(name, {}), entry.input_schema.get("$defs", {}))
        if kind:
            out[name] = sorted(kind)[0]
    return out


def param_types(entry: ToolEntry) -> dict[str, str]:
    """Every parameter → its semantic type."""
    schema = entry.input_schema
    found = _PARAM_TYPES.get(id(schema))
    if found is None or found[0] is not schema:
        props = schema.get("properties", {})
        out = {}
        for name, prop in props.items():
            kind = field_types(prop, schema.get("$defs", {}))
            if kind:
                out[name] = sorted(kind)[0]
        found = _PARAM_TYPES[id(schema)] = (schema, out)
    return dict(found[1])


_PARAM_TYPES: dict[int, tuple[Mapping[str, Any], dict[str, str]]] = {}
"""Per input schema (read-only, kept alive by its tool, so its id is not reused): its parameter
types, which task generation asks for thousands of times per batch."""


def output_types(entry: ToolEntry) -> set[str]:
    data = (entry.output_schema or {}).get("properties", {}).get("data", {})
    return field_types(data, (entry.output_schema or {}).get("$defs", {}))


@dataclass(frozen=True)
class ToolTypes:
    """The linkable types one tool consumes and produces."""

    entry: ToolEntry
    requires: Mapping[str, str]
    produces: frozenset[str]


def tool_types(registry: Registry, services: Iterable[str] | None = None) -> dict[str, ToolTypes]:
    names = set(services) if services is not None else set(registry.services)
    out = {}
    for entry in registry.tools.values():
        if entry.service in names:
            out[entry.qualified] = ToolTypes(entry, required_types(entry), frozenset(output_types(entry)))
    return out


def build_graph(registry: Registry, services: Iterable[str] | None = None) -> nx.MultiDiGraph:
    """The dependency graph of the tools of ``services`` (default: every service of the registry)."""
    types = tool_types(registry, services)
    graph = nx.MultiDiGraph()
    consumers: dict[str, list[str]] = {}
    for name, info in types.items():
        graph.add_node(name, service=info.entry.service, kind=info.entry.kind)
        for kind in set(info.requires.values()) - NON_LINKING:
            consumers.setdefault(kind, []).append(name)
    for name, info in types.items():
        for kind in sorted(info.produces - NON_LINKING):
            for target in consumers.get(kind, []):
                if target != name:
                    graph.add_edge(
                        name, target, type=kind, kind="output", cross=types[target].entry.service != info.entry.service
                    )
        if info.entry.kind == "write":
            stored = set(param_types(info.entry).values()) - NON_LINKING
            for kind in sorted(stored):
                for target in consumers.get(kind, []):
                    other = types[target].entry
                    if other.kind == "read" and other.service != info.entry.service:
                        graph.add_edge(name, target, type=kind, kind="state", cross=True)
    return graph


def summary(graph: nx.MultiDiGraph, top: int = 10) -> dict[str, Any]:
    """Size of the graph and its most connected services (by cross-service edges)."""
    cross = [(u, v) for u, v, d in graph.edges(data=True) if d.get("cross")]
    by_service: Counter[str] = Counter()
    for u, v in cross:
        by_service[graph.nodes[u]["service"]] += 1
        by_service[graph.nodes[v]["service"]] += 1
    return {
        "tools": graph.number_of_nodes(),
        "edges": graph.number_of_edges(),
        "cross_service_edges": len(cross),
        "state_edges": sum(1 for *_, d in graph.edges(data=True) if d.get("kind") == "state"),
        "services": len({d["service"] for _, d in graph.nodes(data=True)}),
        "most_connected": by_service.most_common(top),
    }
