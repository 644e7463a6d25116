"""The spec engine, operation by operation, against states computed by hand; the fleet rules; laziness."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from servers.construction.lint import rule_problems, seed_problems
from servers.construction.loader import load_service
from servers.construction.scenarios import holds
from servers.construction.spec import CATALOG_DIR, ServiceSpec, load_spec
from servers.construction.template import compile_spec
from servers.engine import SpecService, build_service, load
from servers.framework import Service
from servers.state import snapshot

SPEC: dict[str, Any] = {
    "name": "depot",
    "category": "operations",
    "description": "A test depot: vans and their runs.",
    "types": {
        "van_status": {"description": "Van status.", "enum": ["ready", "repair"]},
        "run_status": {"description": "Run status.", "enum": ["planned", "done"]},
        "km": {"description": "Kilometres.", "type": "number", "minimum": 0, "maximum": 1000},
    },
    "entities": {
        "van": {
            "plural": "vans", "id_prefix": "van", "description": "A van.",
            "fields": {"plate": {"type": "title", "unique": True}, "status": {"type": "depot.van_status"},
                       "km": {"type": "depot.km", "default": 0}, "tags": {"type": "tag", "list": True}},
            "lifecycle": {"field": "status", "initial": "ready",
                          "transitions": {"ready": ["repair"], "repair": ["ready"]}},
            "seed": {"count": 2},
        },
        "run": {
            "plural": "runs", "id_prefix": "run", "description": "A run of one van.",
            "fields": {"van_id": {"type": "ref:van"}, "city": {"type": "city"}, "status": {"type": "depot.run_status"},
                       "distance": {"type": "depot.km", "optional": True, "create": False}},
            "lifecycle": {"field": "status", "initial": "planned", "transitions": {"planned": ["done"], "done": []}},
            "seed": {"count": 1},
        },
    },
    "tools": [
        {"name": "list_vans", "op": "list", "entity": "van", "description": "List vans.", "filters": ["status"],
         "search": ["plate"], "sort": "-plate"},
        {"name": "get_van", "op": "get", "entity": "van", "description": "Get a van."},
        {"name": "add_van", "op": "create", "entity": "van", "description": "Add a van.", "fields": ["plate", "tags"]},
        {"name": "rename_van", "op": "update", "entity": "van", "description": "Rename a van.", "fields": ["plate"],
         "frozen": ["repair"]},
        {"name": "to_repair", "op": "transition", "entity": "van", "to": "repair", "description": "Repair a van."},
        {"name": "add_km", "op": "adjust", "entity": "van", "field": "km", "description": "Add km.",
         "params": {"delta": {"type": "depot.km", "description": "Km to add."}}},
        {"name": "tag_van", "op": "append", "entity": "van", "field": "tags", "description": "Tag a van.",
         "params": {"tag": {"type": "tag", "description": "The tag."}}},
        {"name": "untag_van", "op": "remove", "entity": "van", "field": "tags", "description": "Untag a van.",
         "params": {"tag": {"type": "tag", "description": "The tag."}}},
        {"name": "delete_van", "op": "delete", "entity": "van", "description": "Delete a van.", "blocked_by": ["run"]},
        {"name": "vans_by_status", "op": "aggregate", "entity": "van", "group_by": "status", "field": "km",
         "description": "Vans per status."},
        {"name": "get_run", "op": "get", "entity": "run", "description": "Get a run."},
        {"name": "plan_run", "op": "create", "entity": "run", "description": "Plan a run.",
         "fields": ["van_id", "city"],
         "guards": [{"id": "van_ready", "require": [{"left": "van_id->status", "op": "==", "value": "ready"}],
                     "code": 409, "message": "the van is in repair"}]},
        {"name": "finish_run", "op": "transition", "entity": "run", "to": "done", "description": "Finish a run.",
         "params": {"km": {"type": "depot.km", "description": "Km driven.", "field": "distance"}},
         "effects": [{"id": "van_km", "via": "record.van_id", "add": {"km": "km"}}]},
    ],
    "rules": [{"text": "A run adds its distance to its van's km.", "by": ["van_km"]},
              {"text": "Only a ready van is planned on a run.", "by": ["van_ready"]}],
}  # fmt: skip


@pytest.fixture
def depot() -> tuple[Service[Any], Any]:
    service = build_service(ServiceSpec.model_validate(SPEC))
    return service, service.empty_state()


def _records(state: Any, plural: str) -> dict[str, dict[str, Any]]:
    return {k: {f: v for f, v in r.items() if f not in ("created_at", "updated_at")}
            for k, r in snapshot(state)[plural].items()}  # fmt: skip


def test_create_stores_given_fields_the_initial_state_and_defaults(depot: tuple[Service[Any], Any]) -> None:
    service, state = depot
    made = service.call(state, "add_van", {"plate": "Blue van"})
    assert made["success"]
    assert _records(state, "vans") == {
        "van_0001": {"id": "van_0001", "plate": "Blue van", "status": "ready", "km": 0.0, "tags": []}
    }
    assert made["data"]["created_at"] == made["data"]["updated_at"] == "2026-03-02T09:01:00Z"


def test_create_refuses_a_duplicate_unique_value_and_changes_nothing(depot: tuple[Service[Any], Any]) -> None:
    service, state = depot
    service.call(state, "add_van", {"plate": "Blue van"})
    before = snapshot(state)
    again = service.call(state, "add_van", {"plate": "Blue van"})
    assert again["error"] == {"code": 409, "message": "a van with plate 'Blue van' already exists"}
    assert snapshot(state) == before


def test_update_sets_given_fields_and_refuses_frozen_states(depot: tuple[Service[Any], Any]) -> None:
    service, state = depot
    service.call(state, "add_van", {"plate": "Blue van"})
    assert service.call(state, "rename_van", {"van_id": "van_0001"})["error"]["code"] == 400
    assert service.call(state, "rename_van", {"van_id": "van_0001", "plate": "Red van"})["success"]
    assert _records(state, "vans")["van_0001"]["plate"] == "Red van"
    assert service.call(state, "to_repair", {"van_id": "van_0001"})["data"]["status"] == "repair"
    frozen = service.call(state, "rename_van", {"van_id": "van_0001", "plate": "Green van"})
    assert frozen["error"] == {"code": 409, "message": "van 'van_0001' is 'repair' and cannot be changed"}
    again = service.call(state, "to_repair", {"van_id": "van_0001"})
    assert again["error"]["message"] == "van 'van_0001' is 'repair'; to_repair needs one of ['ready']"


def test_adjust_adds_within_the_range_and_refuses_outside_it(depot: tuple[Service[Any], Any]) -> None:
    service, state = depot
    service.call(state, "add_van", {"plate": "Blue van"})
    assert service.call(state, "add_km", {"van_id": "van_0001", "delta": 600})["data"]["km"] == 600.0
    over = service.call(state, "add_km", {"van_id": "van_0001", "delta": 500})
    assert over["error"] == {"code": 409, "message": "van 'van_0001': km would become 1100.0, outside [0, 1000]"}
    assert _records(state, "vans")["van_0001"]["km"] == 600.0


def test_append_and_remove_change_a_list_field_once(depot: tuple[Service[Any], Any]) -> None:
    service, state = depot
    service.call(state, "add_van", {"plate": "Blue van", "tags": ["city"]})
    assert service.call(state, "tag_van", {"van_id": "van_0001", "tag": "cold"})["data"]["tags"] == ["city", "cold"]
    assert service.call(state, "tag_van", {"van_id": "van_0001", "tag": "cold"})["error"]["code"] == 409
    assert service.call(state, "untag_van", {"van_id": "van_0001", "tag": "city"})["data"]["tags"] == ["cold"]
    assert service.call(state, "untag_van", {"van_id": "van_0001", "tag": "city"})["error"]["code"] == 404


def test_list_filters_searches_sorts_and_pages(depot: tuple[Service[Any], Any]) -> None:
    service, state = depot
    for plate in ("Alpha", "Bravo", "Charlie"):
        service.call(state, "add_van", {"plate": plate})
    service.call(state, "to_repair", {"van_id": "van_0002"})
    page = service.call(state, "list_vans", {"status": "ready", "limit": 1})["data"]
    assert [r["plate"] for r in page["items"]] == ["Charlie"] and page["total"] == 2 and page["next_offset"] == 1
    assert [r["plate"] for r in service.call(state, "list_vans", {"query": "ALP"})["data"]["items"]] == ["Alpha"]


def test_aggregate_counts_and_sums_per_group(depot: tuple[Service[Any], Any]) -> None:
    service, state = depot
    for plate, km in (("Alpha", 10), ("Bravo", 20), ("Charlie", 5)):
        van = service.call(state, "add_van", {"plate": plate})["data"]
        service.call(state, "add_km", {"van_id": van["id"], "delta": km})
    service.call(state, "to_repair", {"van_id": "van_0003"})
    rows = service.call(state, "vans_by_status", {})["data"]
    assert rows == [
        {"status": "ready", "count": 2, "total_km": 30.0},
        {"status": "repair", "count": 1, "total_km": 5.0},
    ]


def test_guards_read_linked_records_and_unknown_ids_are_404(depot: tuple[Service[Any], Any]) -> None:
    service, state = depot
    service.call(state, "add_van", {"plate": "Blue van"})
    assert service.call(state, "plan_run", {"van_id": "van_0009", "city": "Oslo"})["error"]["code"] == 404
    service.call(state, "to_repair", {"van_id": "van_0001"})
    refused = service.call(state, "plan_run", {"van_id": "van_0001", "city": "Oslo"})
    assert refused["error"] == {"code": 409, "message": "the van is in repair"}


def test_an_effect_adds_to_the_linked_record_and_delete_is_blocked_by_references(
    depot: tuple[Service[Any], Any],
) -> None:
    service, state = depot
    service.call(state, "add_van", {"plate": "Blue van"})
    run = service.call(state, "plan_run", {"van_id": "van_0001", "city": "Oslo"})["data"]
    done = service.call(state, "finish_run", {"run_id": run["id"], "km": 120.5})
    assert done["data"]["status"] == "done" and done["data"]["distance"] == 120.5
    assert _records(state, "vans")["van_0001"]["km"] == 120.5
    blocked = service.call(state, "delete_van", {"van_id": "van_0001"})
    assert blocked["error"] == {"code": 409, "message": "van 'van_0001' still has runs; it cannot be deleted"}


def test_an_effect_out_of_range_refuses_the_whole_write(depot: tuple[Service[Any], Any]) -> None:
    service, state = depot
    service.call(state, "add_van", {"plate": "Blue van"})
    service.call(state, "add_km", {"van_id": "van_0001", "delta": 950})
    run = service.call(state, "plan_run", {"van_id": "van_0001", "city": "Oslo"})["data"]
    before = snapshot(state)
    over = service.call(state, "finish_run", {"run_id": run["id"], "km": 100})
    assert over["error"]["code"] == 409 and "van_km" in over["error"]["message"]
    assert snapshot(state) == before


def test_every_write_declares_what_it_does() -> None:
    service = build_service(ServiceSpec.model_validate(SPEC))
    meta = {name: tool.meta for name, tool in service.tools.items()}
    assert meta["add_van"] is not None and meta["add_van"].op == "create" and meta["add_van"].collection == "vans"
    assert meta["add_van"].sets == ("plate", "tags", "status")
    assert meta["finish_run"] is not None and meta["finish_run"].sets == ("status", "distance")
    assert meta["list_vans"] is not None and meta["list_vans"].reads == ("status", "plate")


def test_fleet_completing_a_trip_adds_its_distance_to_the_odometer() -> None:
    fleet = load("fleet")
    state = fleet.seed_state(0)
    trip = next(t for t in state.trips.values() if t.status == "underway")
    vehicle = state.vehicles[trip.vehicle_id]
    before = vehicle.odometer
    assert fleet.call(state, "complete_trip", {"trip_id": trip.id, "distance_km": 312.4})["success"]
    assert state.vehicles[trip.vehicle_id].odometer == pytest.approx(before + 312.4)


def test_a_spec_may_not_keep_its_records_under_a_reserved_state_field() -> None:
    # "collections" is where simulated services keep theirs: the rubric's diffs read it as such, so a
    # spec entity of that plural made every record created in it go unchecked
    spec = copy.deepcopy(SPEC)
    entity = next(iter(spec["entities"].values()))
    entity["plural"] = "collections"
    with pytest.raises(ValueError, match="plural 'collections' is reserved"):
        ServiceSpec.model_validate(spec)


def test_a_text_seed_whose_optional_field_is_empty_leaves_no_dangling_separator() -> None:
    # ledger memos are "Reclass - {counterparty}"; an entry without a counterparty was "Reclass -"
    state = load("ledger").seed_state(0)
    bare = [e.memo for e in state.journal_entries.values() if not e.counterparty]
    assert bare and all(memo.strip() == memo and not memo.endswith(("-", ":")) for memo in bare), bare
    assert any(" - " in e.memo for e in state.journal_entries.values() if e.counterparty)


def test_fleet_a_driver_without_a_licence_cannot_start_a_trip() -> None:
    fleet = load("fleet")
    state = fleet.seed_state(0)
    trip = next(t for t in state.trips.values() if t.status == "planned"
                and state.vehicles[t.vehicle_id].status == "active")  # fmt: skip
    state.drivers[trip.driver_id].licence = None  # the licence lapsed after the trip was planned
    refused = fleet.call(state, "start_trip", {"trip_id": trip.id})
    assert refused["error"]["code"] == 403 and "licence" in refused["error"]["message"]
    assert state.trips[trip.id].status == "planned"


def test_spec_lint_refuses_an_unbacked_rule_and_a_citation_of_nothing() -> None:
    data = copy.deepcopy(SPEC)
    data["rules"] = ["Vans are washed weekly.", {"text": "Runs end in a city.", "by": ["no_such_guard"]}]
    problems = rule_problems(ServiceSpec.model_validate(data))
    assert len(problems) == 2
    assert "rule 0" in problems[0] and "not backed" in problems[0]
    assert "no_such_guard" in problems[1]
    assert rule_problems(ServiceSpec.model_validate(SPEC)) == []


@pytest.mark.parametrize("name", ["fleet", "pharmacy", "payroll", "grants"])
def test_engine_and_ejected_code_agree_on_schemas_seeds_and_calls(name: str) -> None:
    path = CATALOG_DIR / f"{name}.json"
    if not path.exists():
        pytest.skip(f"no catalog spec {name}")
    spec = load_spec(path)
    engine, ejected = build_service(spec), load_service(compile_spec(spec, formatted=False), name, "eq")
    assert list(engine.tools) == list(ejected.tools)
    for tool_name, tool in engine.tools.items():
        other = ejected.tools[tool_name]
        assert list(tool.input_schema["properties"]) == list(other.input_schema["properties"]), tool_name
        assert tool.input_schema["required"] == other.input_schema["required"], tool_name
        assert json.dumps(tool.output_schema["properties"]["data"], sort_keys=True) == json.dumps(
            other.output_schema["properties"]["data"], sort_keys=True
        ), tool_name
    for seed in (0, 3):
        assert engine.state_hash(engine.seed_state(seed)) == ejected.state_hash(ejected.seed_state(seed))


def test_listing_tools_and_their_schemas_builds_no_model() -> None:
    service = build_service(load_spec(Path(CATALOG_DIR) / "fleet.json"))
    assert all(tool.input_schema["type"] == "object" for tool in service.tools.values())
    assert not service.models.built
    service.seed_state(0)
    assert service.models.built


def test_ejected_code_answers_every_operation_as_the_engine_does() -> None:
    spec = ServiceSpec.model_validate(SPEC)
    engine, ejected = build_service(spec), load_service(compile_spec(spec, formatted=False), "depot", "script")
    script: list[tuple[str, dict[str, Any]]] = [
        ("add_van", {"plate": "Alpha", "tags": ["city"]}), ("add_van", {"plate": "Alpha"}),
        ("add_van", {"plate": "Bravo"}), ("rename_van", {"van_id": "van_0002", "plate": "Charlie"}),
        ("add_km", {"van_id": "van_0001", "delta": 950}), ("add_km", {"van_id": "van_0001", "delta": 100}),
        ("tag_van", {"van_id": "van_0001", "tag": "cold"}), ("untag_van", {"van_id": "van_0001", "tag": "x"}),
        ("plan_run", {"van_id": "van_0001", "city": "Oslo"}), ("finish_run", {"run_id": "run_0003", "km": 100}),
        ("finish_run", {"run_id": "run_0003", "km": 20}), ("to_repair", {"van_id": "van_0002"}),
        ("plan_run", {"van_id": "van_0002", "city": "Rome"}), ("delete_van", {"van_id": "van_0001"}),
        ("delete_van", {"van_id": "van_0002"}), ("vans_by_status", {}), ("list_vans", {"query": "a"}),
    ]  # fmt: skip
    states = engine.empty_state(), ejected.empty_state()
    for tool, arguments in script:
        assert engine.call(states[0], tool, arguments) == ejected.call(states[1], tool, arguments), tool
    assert snapshot(states[0]) == snapshot(states[1])


def test_spec_lint_refuses_seeds_that_break_an_invariant() -> None:
    data = copy.deepcopy(SPEC)
    data["entities"]["van"]["fields"]["km"]["seed"] = "number:0..900"
    rule = {"text": "A van in service has been driven less than 500 km.", "by": ["tool:add_km"],
            "holds": {"entity": "van", "require": [{"left": "record.km", "op": "<", "value": 500}]}}  # fmt: skip
    data["rules"] = [*SPEC["rules"], rule]
    spec = ServiceSpec.model_validate(data)
    problems = seed_problems(spec, build_service(spec), seeds=tuple(range(6)))
    assert problems and all(p.startswith("rule 2: seed ") and "breaks it" in p for p in problems)
    data["entities"]["van"]["fields"]["km"]["seed"] = "number:0..400"
    fixed = ServiceSpec.model_validate(data)
    assert seed_problems(fixed, build_service(fixed), seeds=tuple(range(6))) == []


def test_a_spec_file_is_checked_once_per_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import servers.construction.spec as spec_module
    from servers import schema_cache

    if schema_cache.shared() is None:
        pytest.skip("COMPOWORLD_NO_SCHEMA_CACHE: every load checks its spec")
    path = tmp_path / "depot.json"
    path.write_text(json.dumps(SPEC))
    load_spec(path)  # checked, then remembered as checked
    monkeypatch.setattr(spec_module, "spec_problems", lambda spec: ["checked again"])
    assert load_spec(path).name == "depot"  # the same content is not checked again
    path.write_text(json.dumps({**SPEC, "description": "A test depot: vans, runs and more."}))
    with pytest.raises(ValueError, match="checked again"):
        load_spec(path)  # new content is checked


def test_a_spec_service_is_listed_from_its_manifest_and_parses_its_spec_on_first_call(tmp_path: Path) -> None:
    copy_of = tmp_path / "fleet.json"
    copy_of.write_bytes((Path(CATALOG_DIR) / "fleet.json").read_bytes())
    first = load("fleet", tmp_path)  # makes the manifest (kept under the hash of the file's bytes)
    schemas = {name: (tool.input_schema, tool.output_schema) for name, tool in first.tools.items()}  # now cached
    stat = copy_of.stat()
    os.utime(copy_of, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # same bytes: read again, from the manifest
    listed = load("fleet", tmp_path)
    assert listed is not first and isinstance(listed, SpecService) and not listed.built
    for name, tool in first.tools.items():
        other = listed.tools[name]
        assert (other.kind, other.description, other.meta) == (tool.kind, tool.description, tool.meta), name
        assert (other.input_schema, other.output_schema) == schemas[name], name
    assert not listed.built
    calls = [("list_vehicles", {"limit": 3}), ("list_vehicles", {"limt": 3}), ("get_vehicle", {"vehicle_id": "nope"})]
    states = first.seed_state(2), listed.seed_state(2)
    for name, arguments in calls:
        assert listed.call(states[1], name, arguments) == first.call(states[0], name, arguments), name
    assert listed.built and listed.state_hash(states[1]) == first.state_hash(states[0])


def test_an_edited_spec_is_listed_with_its_new_tools(tmp_path: Path) -> None:
    copy_of = tmp_path / "fleet.json"
    data = json.loads((Path(CATALOG_DIR) / "fleet.json").read_text())
    copy_of.write_text(json.dumps(data))
    assert "list_vehicles" in load("fleet", tmp_path).tools
    renamed = next(t for t in data["tools"] if t["name"] == "list_vehicles")
    renamed["name"] = "list_all_vehicles"
    copy_of.write_text(json.dumps(data, indent=1))
    tools = load("fleet", tmp_path).tools
    assert "list_all_vehicles" in tools and "list_vehicles" not in tools


def test_a_guard_comparing_a_date_with_now_compares_days_and_the_interpreter_agrees() -> None:
    spec = copy.deepcopy(SPEC)
    spec["entities"]["run"]["fields"]["due"] = {"type": "date", "role": "due", "optional": True}
    spec["tools"].append(
        {"name": "book_run", "op": "create", "entity": "run", "description": "Book a run on a day.",
         "fields": ["van_id", "city", "due"],
         "guards": [{"id": "not_in_past", "require": [{"left": "due", "op": ">=", "right": "now"}],
                     "code": 400, "message": "due must not be in the past"}]}
    )  # fmt: skip
    spec["rules"].append({"text": "A run is not booked in the past.", "by": ["not_in_past"]})
    parsed = ServiceSpec.model_validate(spec)
    ejected = load_service(compile_spec(parsed, formatted=False), "depot", "script")
    for service in (build_service(parsed), ejected):
        state = service.empty_state()
        service.call(state, "add_van", {"plate": "Blue van"})
        today = service.call(state, "book_run", {"van_id": "van_0001", "city": "Oslo", "due": "2026-03-02"})
        past = service.call(state, "book_run", {"van_id": "van_0001", "city": "Oslo", "due": "2026-03-01"})
        assert today["success"]  # the clock is 09:00 on 2 March: that day is not in the past
        assert past["error"] == {"code": 400, "message": "due must not be in the past"}
    # the scenario interpreter predicts the same from the JSON state (ISO strings)
    assert holds(">=", "2026-03-02", "2026-03-02T09:05:00Z") is True
    assert holds(">=", "2026-03-01", "2026-03-02T09:05:00Z") is False


def test_a_transition_storing_a_unique_field_refuses_a_taken_value_and_changes_nothing() -> None:
    spec = copy.deepcopy(SPEC)
    spec["entities"]["run"]["fields"]["ticket"] = {"type": "title", "optional": True, "create": False, "unique": True}
    spec["tools"].append(
        {"name": "close_run", "op": "transition", "entity": "run", "to": "done", "description": "Close with a ticket.",
         "params": {"ticket": {"type": "title", "description": "Ticket number.", "field": "ticket"}}}
    )  # fmt: skip
    parsed = ServiceSpec.model_validate(spec)
    ejected = load_service(compile_spec(parsed, formatted=False), "depot", "script")
    for service in (build_service(parsed), ejected):
        state = service.empty_state()
        service.call(state, "add_van", {"plate": "Blue van"})
        service.call(state, "plan_run", {"van_id": "van_0001", "city": "Oslo"})
        service.call(state, "plan_run", {"van_id": "van_0001", "city": "Rome"})
        assert service.call(state, "close_run", {"run_id": "run_0002", "ticket": "T-1"})["success"]
        before = snapshot(state)
        refused = service.call(state, "close_run", {"run_id": "run_0003", "ticket": "T-1"})
        assert refused["error"]["code"] == 409, refused  # type: ignore[typeddict-item]
        assert snapshot(state) == before
