"""Catalog services routed to the world model keep the interface a native build would have."""

from __future__ import annotations

import shutil
from pathlib import Path

from hub.core import Hub
from hub.registry import native_entry
from servers.construction.loader import load_service
from servers.construction.spec import load_spec
from servers.construction.template import compile_spec
from worldmodel.engine import build_service
from worldmodel.fromspec import routed_services, routed_specs, simulated_spec
from worldmodel.rules import RulesBackend

SPEC = Path(__file__).parents[1] / "servers" / "specs" / "booklog.json"


def test_simulated_fallback_has_the_native_interface() -> None:
    spec = load_spec(SPEC)
    native = load_service(compile_spec(spec, formatted=False), "booklog", "native")
    simulated = build_service(simulated_spec(spec), RulesBackend())
    assert simulated.source == "simulated"
    assert list(simulated.tools) == list(native.tools)
    for name, tool in native.tools.items():
        assert set(simulated.tools[name].input_schema["properties"]) == set(tool.input_schema["properties"])
        assert simulated.tools[name].kind == tool.kind


def test_simulated_services_declare_only_the_base_system_fields() -> None:
    service = build_service(simulated_spec(load_spec(SPEC)), RulesBackend())
    assert service.system_fields == {"seq", "clock"}  # the engine stamps nothing on the records it stores
    state = service.seed_state(0)
    book_id = service.call(state, "add_book", {"title": "Middlemarch", "copies": 2})["data"]["id"]
    before = dict(state.collections["books"][book_id])
    arguments = {"book_id": book_id, "delta": 1}
    assert service.call(state, "adjust_copies", arguments)["success"]
    after = state.collections["books"][book_id]
    # an update merges its arguments into the record and stamps nothing (updated_at stays as it was)
    assert {k for k in after if after[k] != before.get(k)} <= set(arguments) - {"book_id"}


def test_simulated_fallback_reads_what_it_wrote() -> None:
    service = build_service(simulated_spec(load_spec(SPEC)), RulesBackend())
    state = service.seed_state(0)
    made = service.call(state, "add_book", {"title": "Middlemarch", "copies": 2})
    assert made["success"] and made["data"]["title"] == "Middlemarch"
    read = service.call(state, "get_book", {"book_id": made["data"]["id"]})
    assert read["data"] == made["data"]
    assert service.call(state, "get_book", {"book_id": "bk_9999"})["error"]["code"] == 404
    groups = service.call(state, "books_by_status", {})
    assert isinstance(groups["data"]["groups"], list)


def test_a_simulated_transition_moves_the_record_to_its_target_state() -> None:
    service = build_service(simulated_spec(load_spec(SPEC)), RulesBackend())
    state = service.seed_state(0)
    book_id = service.call(state, "add_book", {"title": "Middlemarch", "copies": 2})["data"]["id"]
    lent = service.call(state, "lend_book", {"book_id": book_id, "borrower": "ann@example.com", "days": 7})
    assert lent["success"], lent
    assert state.collections["books"][book_id]["status"] == "on_loan"
    assert service.call(state, "return_book", {"book_id": book_id})["success"]
    assert state.collections["books"][book_id]["status"] == "available"


def test_unbuilt_catalog_specs_are_routed_and_mount_in_a_hub(tmp_path: Path) -> None:
    shutil.copy(SPEC, tmp_path / "booklog.json")
    assert [s.name for s in routed_specs(tmp_path)] == ["booklog"]
    (service,) = routed_services(directory=tmp_path)
    hub = Hub.native([], extra=[native_entry(service)])
    world = hub.open_world(seed=1)
    made = world.call("booklog__add_book", {"title": "Emma", "copies": 1})
    assert made["success"]
    assert world.call("booklog__get_book", {"book_id": made["data"]["id"]})["success"]
