"""Every tool declares what it does (ToolMeta), and what it declares fits its service.

Hand-written services declare their metadata in their decorators; simulated services derive it
from each tool's effect. The declarations are checked against the services' own models: a
collection is a field of the state, and every field a tool reads or sets is a field of that
collection's records (``a.b`` names field ``b`` of the records nested in field ``a``).
"""

from __future__ import annotations

import json
import pkgutil
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

import servers.native
from hub.registry import native_entry
from servers.cli import app
from servers.construction.spec import load_spec as load_catalog_spec
from servers.framework import Service, ServiceState, Tool
from servers.registry import load_services
from worldmodel.catalog import simulated_specs
from worldmodel.engine import build_service
from worldmodel.fromspec import simulated_spec
from worldmodel.rules import RulesBackend
from worldmodel.spec import SimSpec

TESTS = Path(__file__).parents[1]
NATIVE_NAMES = [m.name for m in pkgutil.iter_modules(servers.native.__path__) if not m.name.startswith("_")]
NATIVE = load_services(NATIVE_NAMES)
SIM_SPECS: list[SimSpec] = [
    *simulated_specs(),
    *simulated_specs(TESTS / "worldmodel" / "specs"),
    simulated_spec(load_catalog_spec(TESTS / "servers" / "specs" / "booklog.json")),
]
SIMULATED = {spec.name: (spec, build_service(spec, RulesBackend())) for spec in SIM_SPECS}
EVERY: list[Service[Any]] = [*NATIVE.values(), *(service for _, service in SIMULATED.values())]
NO_SETS = ("delete", "send", "action")


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (through lists, dicts, optionals and Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models(arg)]


def _record_model(state: type[ServiceState], collection: str) -> type[BaseModel] | None:
    models = _models(state.model_fields[collection].annotation)
    return models[0] if models else None


def _is_field(model: type[BaseModel] | None, path: str) -> bool:
    """Whether ``path`` (``a`` or ``a.b``) names a field of ``model``'s records."""
    head, _, rest = path.partition(".")
    if model is None or head not in model.model_fields:
        return False
    if not rest:
        return True
    nested = _models(model.model_fields[head].annotation)
    return bool(nested) and _is_field(nested[0], rest)


def _sim_record_fields(spec: SimSpec, collection: str) -> set[str]:
    """What a simulated record holds: what the spec's tools store into it or show of it."""
    fields: set[str] = set()
    for tool in spec.tools:
        effect = tool.effect
        if effect.collection != collection:
            continue
        inputs = set(tool.input_schema.get("properties", {}))
        outputs = tool.output_schema.get("properties", {})
        if effect.op == "create":
            fields |= inputs | set(outputs)
        elif effect.op == "update":
            fields |= inputs - {effect.key} | set(effect.set)
        elif effect.op == "get":
            fields |= set(outputs)
        elif effect.op == "list":
            fields |= set(outputs[effect.items_field or ""]["items"].get("properties", {}))
    return fields


def _tools(service: Service[Any]) -> list[Tool]:
    return list(service.tools.values())


def test_every_hand_written_service_is_checked() -> None:
    assert len(NATIVE) == len(NATIVE_NAMES) >= 16
    assert all(service.source == "hand-written" for service in NATIVE.values())


@pytest.mark.parametrize("service", EVERY, ids=lambda s: s.name)
def test_every_tool_declares_its_meta(service: Service[Any]) -> None:
    assert [t.name for t in _tools(service) if t.meta is None] == []


@pytest.mark.parametrize("service", EVERY, ids=lambda s: s.name)
def test_the_declared_op_is_of_the_tools_kind(service: Service[Any]) -> None:
    assert [(t.name, t.kind, t.meta.op) for t in _tools(service) if t.meta and t.meta.kind != t.kind] == []


@pytest.mark.parametrize("service", NATIVE.values(), ids=lambda s: s.name)
def test_a_hand_written_tools_collection_is_a_field_of_the_state(service: Service[Any]) -> None:
    fields = service.state_type.model_fields
    bad = [(t.name, t.meta.collection) for t in _tools(service) if t.meta and t.meta.collection not in (None, *fields)]
    assert bad == []


@pytest.mark.parametrize("service", NATIVE.values(), ids=lambda s: s.name)
def test_a_hand_written_tool_reads_and_sets_fields_of_its_collections_records(service: Service[Any]) -> None:
    bad = []
    for tool in _tools(service):
        meta = tool.meta
        if meta is None or not (meta.reads or meta.sets):
            continue
        if meta.collection not in service.state_type.model_fields:
            bad.append((tool.name, "reads or sets fields but names no collection of the state"))
            continue
        model = _record_model(service.state_type, meta.collection)
        bad += [(tool.name, name) for name in (*meta.reads, *meta.sets) if not _is_field(model, name)]
    assert bad == []


@pytest.mark.parametrize("service", NATIVE.values(), ids=lambda s: s.name)
def test_a_hand_written_write_sets_no_system_field(service: Service[Any]) -> None:
    bad = [
        (t.name, name)
        for t in _tools(service)
        if t.meta
        for name in t.meta.sets
        if name.split(".")[-1] in service.system_fields
    ]
    assert bad == []


@pytest.mark.parametrize("name", SIMULATED)
def test_a_simulated_tools_collection_is_a_collection_of_its_spec(name: str) -> None:
    spec, service = SIMULATED[name]
    bad = [
        (t.name, t.meta.collection)
        for t in _tools(service)
        if t.meta and t.meta.collection not in (None, *spec.collections)
    ]
    assert bad == []


@pytest.mark.parametrize("name", SIMULATED)
def test_a_simulated_tool_reads_and_sets_fields_its_records_hold(name: str) -> None:
    spec, service = SIMULATED[name]
    bad = []
    for tool in _tools(service):
        meta = tool.meta
        if meta is None:
            continue
        fields = _sim_record_fields(spec, meta.collection) if meta.collection else set()
        id_field = spec.collections[meta.collection].id_field if meta.collection else None
        bad += [(tool.name, n) for n in (*meta.reads, *meta.sets) if n not in fields or n == id_field]
    assert bad == []


@pytest.mark.parametrize("name", SIMULATED)
def test_a_simulated_tool_follows_its_effect(name: str) -> None:
    spec, service = SIMULATED[name]
    for tool_spec in spec.tools:
        meta = service.tools[tool_spec.name].meta
        assert meta is not None
        effect = tool_spec.effect
        if effect.op == "none":
            assert (meta.op, meta.collection) == ("lookup" if tool_spec.kind == "read" else "action", None)
        else:
            assert (meta.op, meta.collection) == (effect.op, effect.collection)
            assert meta.entity and effect.collection and effect.collection.startswith(meta.entity[:-1])


def _has_fields(service: Service[Any], collection: str | None) -> bool:
    """Whether the records of ``collection`` have fields a tool can name (a spreadsheet's cells,
    plain values by cell reference, have none; simulated records are objects)."""
    if collection is None or service.source == "simulated":
        return True
    return _record_model(service.state_type, collection) is not None


@pytest.mark.parametrize("service", EVERY, ids=lambda s: s.name)
def test_a_write_sets_fields_unless_it_deletes_sends_or_acts(service: Service[Any]) -> None:
    bad = [
        t.name
        for t in _tools(service)
        if t.meta
        and t.kind == "write"
        and t.meta.op not in NO_SETS
        and not t.meta.sets
        and _has_fields(service, t.meta.collection)
    ]
    assert bad == []


@pytest.mark.parametrize("service", EVERY, ids=lambda s: s.name)
def test_a_read_sets_nothing(service: Service[Any]) -> None:
    assert [t.name for t in _tools(service) if t.meta and t.kind == "read" and t.meta.sets] == []


@pytest.mark.parametrize("service", EVERY, ids=lambda s: s.name)
def test_a_tool_with_a_collection_names_its_entity(service: Service[Any]) -> None:
    assert [t.name for t in _tools(service) if t.meta and bool(t.meta.collection) != bool(t.meta.entity)] == []


def _bare_service() -> Service[Any]:
    class State(ServiceState):
        pass

    return Service(
        "metacheck", version=1, category="test", description="A test service.", state=State, seed=lambda r, w: State()
    )


def test_a_read_op_on_a_write_tool_is_refused() -> None:
    service = _bare_service()
    with pytest.raises(TypeError, match="op 'list'"):

        @service.write(op="list", entity="deal", collection="deals")
        def list_deals(state: ServiceState) -> int:
            """List."""
            return 0


def test_a_write_op_on_a_read_tool_is_refused() -> None:
    service = _bare_service()
    with pytest.raises(TypeError, match="op 'create'"):

        @service.read(op="create", entity="deal", collection="deals")
        def create_deal(state: ServiceState) -> int:
            """Create."""
            return 0


def test_unknown_metadata_is_refused() -> None:
    service = _bare_service()
    with pytest.raises(TypeError, match="bad metadata"):

        @service.read(op="get", table="deals")
        def get_deal(state: ServiceState) -> int:
            """Get."""
            return 0


def test_a_hub_entry_carries_the_tools_meta() -> None:
    service = NATIVE["crm"]
    entries = {e.name: e for e in native_entry(service).tools}
    assert entries["move_deal_stage"].meta == service.tools["move_deal_stage"].meta
    assert entries["move_deal_stage"].meta is not None and entries["move_deal_stage"].meta.op == "transition"


def test_services_show_json_gives_each_tools_meta() -> None:
    result = CliRunner().invoke(app, ["show", "crm", "--json"])
    assert result.exit_code == 0, result.output
    tools = {t["name"]: t for t in json.loads(result.output)["tool_list"]}
    assert tools["list_deals"]["meta"]["op"] == "list"
    assert tools["list_deals"]["meta"]["collection"] == "deals"
    assert "stage" in tools["list_deals"]["meta"]["reads"]
    assert tools["create_deal"]["meta"]["kind"] == "write"
