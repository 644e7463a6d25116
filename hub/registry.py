"""The hub's registry: one flat, immutable table of every tool from every source, built once.

Sources are native services (``servers``), external MCP servers (``hub.external``) and, later,
the world model. Each tool is known by its qualified name ``<service>__<tool>``; lookups are one
dict access and every listing the MCP surfaces serve is computed once at build time.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol

from servers.framework import Envelope, Service, Source, Tool, ToolMeta

if TYPE_CHECKING:  # the MCP SDK is imported when a listing is first served, not to build a hub
    import mcp_types as types

TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SEPARATOR = "__"


class RegistryError(ValueError):
    """The registry cannot be built (name collision, invalid tool name, …)."""


def qualify(service: str, tool: str) -> str:
    return f"{service}{SEPARATOR}{tool}"


class ToolBackend(Protocol):
    """How a world runs the tools of a source without state in the world (an external server)."""

    def call(self, world: Any, tool: str, arguments: dict[str, Any]) -> Envelope: ...


@dataclass(frozen=True)
class ToolEntry:
    """One tool of the registry."""

    qualified: str
    service: str
    name: str
    kind: Literal["read", "write"]
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None
    native: Tool | None = None
    external: types.Tool | None = None
    meta: ToolMeta | None = None
    """What the tool does (op, entity, fields read and set), as its service declared it; None for
    external tools, which declare nothing of the kind."""

    @functools.cached_property
    def mcp(self) -> types.Tool:
        """The MCP description with the output schema (built on first use, then kept)."""
        if self.external is not None:
            return self.external
        # Imported here, not at module level, for start-up speed: serving imports the MCP SDK
        # (~1 s), which an in-process hub never needs.
        from servers.serving import mcp_tool

        assert self.native is not None
        return mcp_tool(self.native, self.qualified)

    @functools.cached_property
    def mcp_lean(self) -> types.Tool:
        """The MCP description without the output schema: what large listings serve.

        A client validates every structured result against the tool's output schema; at 10,000
        tools the Python SDK client then spends ~2 ms per call and the listing triples in size
        (bench/hub.py), so hub listings leave output schemas out by default; describe_tool and
        ``output_schemas=True`` still give them.
        """
        return self.mcp.model_copy(update={"output_schema": None})


@dataclass(frozen=True)
class ServiceEntry:
    """One mounted service: its metadata, its tools and how to run them."""

    name: str
    source: Source
    category: str
    description: str
    version: str
    tools: tuple[ToolEntry, ...]
    origin: str
    native: Service[Any] | None = None
    backend: ToolBackend | None = None

    @property
    def stateful(self) -> bool:
        return self.native is not None

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "category": self.category,
            "description": self.description,
            "tools": len(self.tools),
            "read": sum(t.kind == "read" for t in self.tools),
            "write": sum(t.kind == "write" for t in self.tools),
            "origin": self.origin,
        }


def native_entry(service: Service[Any]) -> ServiceEntry:
    tools = []
    for tool in service.tools.values():
        qualified = qualify(service.name, tool.name)
        tools.append(
            ToolEntry(
                qualified=qualified,
                service=service.name,
                name=tool.name,
                kind=tool.kind,
                description=tool.description,
                input_schema=tool.input_schema,
                output_schema=tool.output_schema,
                native=tool,
                meta=tool.meta,
            )
        )
    return ServiceEntry(
        name=service.name,
        source=service.source,
        category=service.category,
        description=service.description,
        version=str(service.version),
        tools=tuple(tools),
        origin=f"servers:{service.name}",
        native=service,
    )


@dataclass(frozen=True)
class Registry:
    """Every service and tool, by name; immutable once built."""

    services: Mapping[str, ServiceEntry]
    tools: Mapping[str, ToolEntry]
    _listings: dict[tuple[frozenset[str], bool], list[types.Tool]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @classmethod
    def build(cls, entries: Iterable[ServiceEntry]) -> Registry:
        services: dict[str, ServiceEntry] = {}
        tools: dict[str, ToolEntry] = {}
        owners: dict[str, str] = {}
        for entry in entries:
            if entry.name in services:
                raise RegistryError(
                    f"service name {entry.name!r} is provided twice: {services[entry.name].origin} and {entry.origin}"
                )
            if SEPARATOR in entry.name:
                raise RegistryError(f"service name {entry.name!r} ({entry.origin}) must not contain {SEPARATOR!r}")
            for tool in entry.tools:
                if not TOOL_NAME_RE.match(tool.qualified):
                    raise RegistryError(
                        f"tool name {tool.qualified!r} ({entry.origin}) is not valid for MCP clients: "
                        "use letters, digits, '_' or '-', at most 64 characters"
                    )
                if tool.qualified in tools:
                    raise RegistryError(
                        f"tool {tool.qualified!r} is provided twice: {owners[tool.qualified]} and {entry.origin}"
                    )
                tools[tool.qualified] = tool
                owners[tool.qualified] = entry.origin
            services[entry.name] = entry
        return cls(services=MappingProxyType(services), tools=MappingProxyType(tools))

    @classmethod
    def from_services(cls, services: Iterable[Service[Any]], extra: Iterable[ServiceEntry] = ()) -> Registry:
        return cls.build([*(native_entry(s) for s in services), *extra])

    def listing(self, services: Sequence[str], output_schemas: bool = False) -> list[types.Tool]:
        """The direct surface's tool list for a set of mounted services (computed once per set)."""
        key = (frozenset(services), output_schemas)
        cached = self._listings.get(key)
        if cached is None:
            tools = [t for name in sorted(key[0]) for t in self.services[name].tools]
            cached = [t.mcp if output_schemas else t.mcp_lean for t in tools]
            self._listings[key] = cached
        return cached

    def require_services(self, names: Iterable[str]) -> list[str]:
        names = list(dict.fromkeys(names))
        unknown = [n for n in names if n not in self.services]
        if unknown:
            raise KeyError(f"unknown service(s) {unknown}; known: {', '.join(self.services)}")
        return names
