"""Python names and literals for generated service code."""

from __future__ import annotations

import textwrap

from servers.construction.spec import ServiceSpec
from servers.construction.vocabulary import SHARED


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def lit(text: str, width: int = 90) -> str:
    """A string literal; long ones as implicitly concatenated pieces so no line passes 120."""
    if len(text) <= width:
        return repr(text)
    pieces = textwrap.wrap(text, width, drop_whitespace=False, break_long_words=True, break_on_hyphens=False)
    return " ".join(repr(p) for p in pieces)  # callers put it inside a call's parentheses


def wrap_doc(text: str, indent: int, width: int = 110) -> str:
    pad = " " * indent
    return "\n".join(textwrap.wrap(text, width - indent, initial_indent=pad, subsequent_indent=pad)) or pad


class Names:
    """The names of one spec's generated classes and aliases, and the imports they need."""

    def __init__(self, spec: ServiceSpec) -> None:
        self.spec = spec
        self.state = f"{camel(spec.name)}State"
        framework = {"Service", "Record", "ServiceState", "Page", "Field", "Population", "Slots", "Any", "Literal"}
        framework |= {s.alias for s in SHARED.values()}  # an entity called `location` must not hide Location
        self.cls = {e: camel(e) + ("Item" if camel(e) in framework else "") for e in spec.entities}
        self.id_alias = {e: f"{camel(e)}Id" for e in spec.entities}
        taken = set(self.cls.values()) | set(self.id_alias.values()) | {s.alias for s in SHARED.values()}
        taken |= {self.state, "Record", "Service", "Page", "Field", "Any", "Literal", "Annotated"}
        self.local: dict[str, str] = {}
        for key in spec.types:
            alias = camel(key)
            while alias in taken:
                alias += "Value"
            taken.add(alias)
            self.local[key] = alias
        self.row: dict[str, str] = {}
        for tool in spec.tools:
            if tool.op == "aggregate":
                alias = f"{camel(tool.name)}Row"
                while alias in taken:
                    alias += "Value"
                taken.add(alias)
                self.row[tool.name] = alias
        self.shared_used: set[str] = set()
        self.framework_used: set[str] = set()

    def type_of(self, type_name: str) -> str:
        """The alias that annotates a value of ``type_name`` (imported where needed)."""
        kind, _, _ = self.spec.field_type(type_name)
        if kind == "ref":
            return self.id_alias[type_name[4:]]
        if kind == "local":
            return self.local[type_name.split(".", 1)[1]]
        alias = SHARED[type_name].alias
        self.shared_used.add(alias)
        return alias
