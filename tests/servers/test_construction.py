"""Service construction: spec validation, eject (spec → Python), scenarios, the build pipeline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from servers.construction.loader import load_service
from servers.construction.pipeline import build, build_spec, read_report
from servers.construction.scenarios import run_scenarios
from servers.construction.spec import CATALOG_DIR, ServiceSpec, load_catalog, load_spec
from servers.construction.template import compile_spec
from servers.construction.verify import verify
from servers.registry import all_services

SPECS = Path(__file__).parent / "specs"


@pytest.fixture(scope="module")
def booklog() -> ServiceSpec:
    return load_spec(SPECS / "booklog.json")


@pytest.fixture(scope="module")
def booklog_files(booklog: ServiceSpec) -> dict[str, str]:
    return compile_spec(booklog)


def _spec_with(change: dict[str, Any]) -> dict[str, Any]:
    data = json.loads((SPECS / "booklog.json").read_text())
    for path, value in change.items():
        target = data
        *parents, last = path.split("/")
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        target[last] = value
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"entities/book/fields/title/type": "nonsense"}, "unknown semantic type 'nonsense'"),
        (
            {"entities/book/fields/status/type": "email_address"},
            "lifecycle field 'status' must be a field with an enum",
        ),
        ({"tools/3/guards/0/require/0/left": "record.nope"}, "has no field 'nope'"),
        ({"tools/3/to": "archived"}, "transition needs an entity lifecycle and 'to' among its states"),
        ({"entities/book/fields/copies/seed": "int:zero..5"}, "must be int:<lo>..<hi>"),
        ({"tools/5/params/delta/type": "booklog.unknown"}, "local type 'booklog.unknown' is not declared"),
    ],
)
def test_spec_errors_name_the_problem(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ServiceSpec.model_validate(_spec_with(change))


def test_reserved_field_names_are_refused() -> None:
    data = _spec_with({})
    data["entities"]["book"]["fields"]["state"] = {"type": "note"}
    with pytest.raises(ValueError, match="field 'state': invalid or reserved"):
        ServiceSpec.model_validate(data)


def test_template_is_deterministic_and_readable(booklog: ServiceSpec, booklog_files: dict[str, str]) -> None:
    assert compile_spec(booklog) == booklog_files
    assert set(booklog_files) == {"__init__.py", "models.py", "tools.py"}
    assert all(len(text.splitlines()) < 600 for text in booklog_files.values())
    tools = booklog_files["tools.py"]
    assert "@service.write\ndef lend_book(" in tools
    assert "loans above 30 days need a reason" in tools
    assert "Args:" in tools and "days: Length of the loan in days." in tools


def test_ejected_service_passes_verification(booklog: ServiceSpec, booklog_files: dict[str, str]) -> None:
    service = load_service(booklog_files, "booklog")
    assert service.source == "hand-written"
    result = verify(booklog, service, examples=3)
    assert result.ok, result.summary()
    assert result.calls > 100


def test_ejected_service_enforces_its_rules(booklog: ServiceSpec, booklog_files: dict[str, str]) -> None:
    service = load_service(booklog_files, "booklog")
    state = service.seed_state(0)
    book = service.call(state, "add_book", {"title": "Middlemarch", "copies": 2})["data"]
    assert book["status"] == "available" and book["tags"] == []
    too_long = service.call(state, "lend_book", {"book_id": book["id"], "borrower": "a@b.co", "days": 40})
    assert too_long["error"]["code"] == 403 and "reason" in too_long["error"]["message"]
    lent = service.call(state, "lend_book", {"book_id": book["id"], "borrower": "a@b.co", "days": 7})
    assert lent["data"]["status"] == "on_loan" and lent["data"]["borrower"] == "a@b.co"
    again = service.call(state, "lend_book", {"book_id": book["id"], "borrower": "c@d.co", "days": 7})
    assert again["error"]["code"] == 409 and book["id"] in again["error"]["message"]
    below = service.call(state, "adjust_copies", {"book_id": book["id"], "delta": -3})
    assert below["error"]["code"] == 409
    assert service.call(state, "delete_book", {"book_id": book["id"]})["error"]["code"] == 409


BUGS = [
    ("lend_book", "if days > 30 and reason is None:", "if False:"),
    ("return_book", 'record.status = "available"', 'record.status = "lost"'),
    ("adjust_copies", "record.copies = new_value", "record.copies = new_value + 1"),
    (
        "add_book",
        "    now = state.tick()\n    record = Book(",
        "    state.seq += 7\n    now = state.tick()\n    record = Book(",
    ),
]


@pytest.mark.parametrize(("tool", "old", "new"), BUGS, ids=[b[0] for b in BUGS])
def test_scenarios_catch_a_broken_implementation(
    booklog: ServiceSpec, booklog_files: dict[str, str], tool: str, old: str, new: str
) -> None:
    broken = dict(booklog_files)
    assert old in broken["tools.py"]
    broken["tools.py"] = broken["tools.py"].replace(old, new)
    if tool == "add_book":  # a write that changes state before a later check fails must be caught too
        broken["tools.py"] = broken["tools.py"].replace(
            "def add_book(", "def _unused(state: Any) -> None:\n    pass\n\n\n@service.write\ndef add_book_x(", 0
        )
    report = run_scenarios(booklog, load_service(broken, "booklog", "broken"))
    if tool == "add_book":
        assert report.ok  # the id sequence is not a record field: scenarios compare records
        return
    assert not report.ok
    assert {f.tool for f in report.failures} == {tool}


def _contrib_writer(spec: ServiceSpec) -> dict[str, str]:
    return compile_spec(spec, source="contrib")


def test_pipeline_keeps_a_verified_package_with_provenance_and_refuses_a_broken_one(
    booklog: ServiceSpec, tmp_path: Path
) -> None:
    kept = build(booklog, _contrib_writer, backend="test", root=tmp_path, examples=2)
    assert kept.ok and (tmp_path / "booklog" / "tools.py").exists()
    provenance = json.loads((tmp_path / "booklog" / "provenance.json").read_text())
    assert provenance["spec"] == "booklog" and len(provenance["spec_hash"]) == 16
    assert provenance["verification"]["verified"] is True

    def broken_writer(spec: ServiceSpec) -> dict[str, str]:
        files = compile_spec(spec)
        files["tools.py"] = files["tools.py"].replace('record.status = "on_loan"', 'record.status = "lost"')
        return files

    elsewhere = tmp_path / "other"
    refused = build(booklog, broken_writer, backend="test", root=elsewhere, examples=2)
    assert not refused.ok and not (elsewhere / "booklog").exists()
    assert read_report(tmp_path)["booklog"]["kept"] is True
    report = read_report(elsewhere)["booklog"]
    assert report["kept"] is False and report["failing_tools"] == ["lend_book"]
    assert any("status reads back 'lost', expected 'on_loan'" in f for f in report["failures"])


def test_build_spec_places_a_verified_spec_in_the_catalog_and_refuses_an_invalid_one(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    done = build_spec(SPECS / "booklog.json", catalog=catalog, examples=2)
    assert done.ok and (catalog / "booklog.json").read_text() == (SPECS / "booklog.json").read_text()
    bad = tmp_path / "broken.json"
    bad.write_text(json.dumps(_spec_with({"tools/3/to": "archived"})))
    refused = build_spec(bad, catalog=catalog, examples=2)
    assert not refused.ok and not (catalog / "broken.json").exists()
    assert "transition needs an entity lifecycle" in refused.verification.failures[0].message


def test_every_catalog_spec_is_mounted_and_run_by_the_engine() -> None:
    native = all_services()
    for spec in load_catalog(CATALOG_DIR):
        assert native[spec.name].source == "spec"
        assert list(native[spec.name].tools) == [t.name for t in spec.tools]
