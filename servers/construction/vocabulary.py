"""The shared semantic types of ``servers.types`` as data: alias name, Python type, enum, constraints.

The template compiler imports these aliases into generated modules (``EmailAddress``), the
scenario generator draws values for them, and spec validation checks field types against them.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import Any, get_args, get_origin

from pydantic.fields import FieldInfo

import servers.types as types_module
from servers.types import SEMANTIC_KEY


@dataclass(frozen=True)
class SharedType:
    semantic: str
    alias: str  # name in servers.types
    python: str  # "str", "int", "float", "bool", "datetime", "date"
    description: str
    enum: list[str] | None = None
    constraints: dict[str, Any] = field(default_factory=dict)


def _shared() -> dict[str, SharedType]:
    found: dict[str, SharedType] = {}
    for alias, value in vars(types_module).items():
        if get_origin(value) is not typing.Annotated or alias.startswith("_"):
            continue
        base, *meta = get_args(value)
        info = next((m for m in meta if isinstance(m, FieldInfo)), None)
        extra = info.json_schema_extra if info is not None else None
        if not isinstance(extra, dict) or SEMANTIC_KEY not in extra:
            continue
        enum = None
        if get_origin(base) is typing.Literal:
            enum, python = [str(a) for a in get_args(base)], "str"
        else:
            python = {"AwareDatetime": "datetime"}.get(base.__name__, base.__name__)
        constraints: dict[str, Any] = {}
        for item in info.metadata if info is not None else []:
            for key in ("ge", "le", "gt", "lt", "pattern", "min_length", "max_length"):
                if getattr(item, key, None) is not None:
                    constraints[key] = getattr(item, key)
        semantic = str(extra[SEMANTIC_KEY])
        description = str(info.description) if info is not None else ""
        found.setdefault(semantic, SharedType(semantic, alias, python, description, enum, constraints))
    return found


#: Semantic name → shared type, for every top-level alias of ``servers.types``.
SHARED: dict[str, SharedType] = _shared()
