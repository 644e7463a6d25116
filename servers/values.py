"""Values found in a service state, grouped by semantic type.

The conformance checker draws realistic arguments from them, and the task generator uses them to
pick entities the instruction can name. No test-only dependencies here: it is product code.
"""

from __future__ import annotations

from typing import Any

from servers.framework import Service
from servers.state import snapshot
from servers.types import resolve_ref, semantic_of


def state_values(service: Service[Any] | None, state: Any) -> dict[str, list[Any]]:
    """Every value found in ``state`` grouped by semantic type (ids, emails, names, ...)."""
    model_schema = type(state).model_json_schema()
    defs = model_schema.get("$defs", {})
    found: dict[str, list[Any]] = {}

    def walk(schema: dict[str, Any], value: Any) -> None:
        schema = resolve_ref(schema, defs)
        kind = semantic_of(schema) if "properties" not in schema else None
        if kind and isinstance(value, str | int | float) and not isinstance(value, bool):
            bucket = found.setdefault(kind, [])
            if value not in bucket:
                bucket.append(value)
        if isinstance(value, dict):
            if "properties" in schema:
                for key, sub in value.items():
                    if key in schema["properties"]:
                        walk(schema["properties"][key], sub)
            elif isinstance(schema.get("additionalProperties"), dict):
                for sub in value.values():
                    walk(schema["additionalProperties"], sub)
            for branch in schema.get("anyOf", []):
                walk(branch, value)
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for sub in value:
                walk(schema["items"], sub)
        elif "anyOf" in schema:
            for branch in schema["anyOf"]:
                if branch.get("type") != "null":
                    walk(branch, value)

    walk(model_schema, snapshot(state))
    return found


def encodable(text: str) -> bool:
    """Whether ``text`` can be sent as UTF-8 (a lone surrogate such as ``"\\ud800"`` cannot)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
