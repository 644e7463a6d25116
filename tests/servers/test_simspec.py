"""The simulated subset of the catalog format: what a simulated spec may say, and the schemas it serves."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from servers.construction.pipeline import build_spec
from servers.construction.simspec import input_schema, output_schema
from servers.construction.spec import ServiceSpec

BOOKLOG = json.loads((Path(__file__).parent / "specs" / "booklog.json").read_text())

FERRY: dict[str, Any] = {
    "name": "ferry",
    "category": "travel",
    "simulated": True,
    "description": "Ferry timetables, fares and bookings.",
    "types": {
        "port_code": {"description": "Code of a port.", "pattern": "^[A-Z]{5}$"},
        "geocoding.latitude": {"description": "Latitude.", "type": "number", "minimum": -90, "maximum": 90},
    },
    "entities": {
        "booking": {
            "description": "Ferry bookings.",
            "plural": "bookings",
            "id_prefix": "fb",
            "id_field": "booking_id",
            "fields": {
                "booking_id": {"type": "ref:booking", "description": "Id of the booking."},
                "passenger_name": {"type": "person_name", "description": "Who travels.", "role": "guest"},
                "fare": {"type": "money_amount", "description": "Fare paid.", "role": "amount_paid", "maximum": None},
                "created_at": {"type": "date_time", "description": "When it was booked.", "role": "system"},
            },
        }
    },
    "shapes": {
        "sailing": {
            "description": "One sailing.",
            "fields": {
                "departs_at": {"type": "date_time", "description": "Departure."},
                "fare": {"type": "money_amount", "description": "Fare.", "minimum": 5, "maximum": 900},
                "stops": {"type": "ferry.port_code", "description": "Ports called at.", "list": True, "max_items": 4},
            },
        }
    },
    "tools": [
        {
            "name": "find_sailings",
            "op": "compute",
            "description": "Sailings between two ports.",
            "params": {
                "origin": {"type": "ferry.port_code", "description": "From."},
                "query": {"type": "search_query", "description": "Words.", "min_length": 1, "optional": True},
                "limit": {"type": "page_limit", "description": "At most.", "maximum": 20, "default": 5},
                "near": {"type": "geocoding.latitude", "description": "Near this latitude.", "optional": True},
            },
            "returns": {
                "sailings": {"type": "shape:sailing", "description": "Sailings.", "list": True, "min_items": 1},
                "total": {"type": "count", "description": "How many."},
            },
        },
        {
            "name": "book",
            "op": "create",
            "entity": "booking",
            "description": "Book a seat.",
            "params": {"passenger_name": {"type": "person_name", "description": "Who travels."}},
        },
        {
            "name": "get_booking",
            "op": "get",
            "entity": "booking",
            "description": "One booking.",
            "params": {"booking_id": {"type": "ref:booking", "description": "Id of the booking."}},
        },
        {
            "name": "list_bookings",
            "op": "list",
            "entity": "booking",
            "description": "Bookings.",
            "params": {"passenger_name": {"type": "person_name", "description": "Only theirs.", "optional": True}},
            "returns": {
                "bookings": {"type": "shape:booking", "description": "Bookings.", "list": True},
                "total": {"type": "count", "description": "How many."},
            },
        },
        {
            "name": "cancel_booking",
            "op": "delete",
            "entity": "booking",
            "description": "Cancel a booking.",
            "params": {"booking_id": {"type": "ref:booking", "description": "Id of the booking."}},
            "returns": {
                "booking_id": {"type": "ref:booking", "description": "Id of the booking."},
                "cancelled": {"type": "flag", "description": "Always true.", "const": True},
            },
        },
    ],
}


def _ferry(change: Any = None) -> dict[str, Any]:
    data = copy.deepcopy(FERRY)
    if change is not None:
        change(data)
    return data


def test_a_simulated_spec_serves_the_schemas_it_declares() -> None:
    spec = ServiceSpec.model_validate(_ferry())
    find = input_schema(spec, spec.tool("find_sailings"))
    assert find["required"] == ["origin"] and find["additionalProperties"] is False
    props = find["properties"]
    assert props["origin"] == {
        "type": "string",
        "description": "From.",
        "x-semantic-type": "ferry.port_code",
        "pattern": "^[A-Z]{5}$",
    }
    assert props["query"]["minLength"] == 1 and props["query"]["maxLength"] == 300  # bound added, type's kept
    assert (props["limit"]["minimum"], props["limit"]["maximum"], props["limit"]["default"]) == (1, 20, 5)
    assert props["near"]["x-semantic-type"] == "geocoding.latitude" and props["near"]["maximum"] == 90
    sailings = output_schema(spec, spec.tool("find_sailings"))["properties"]["sailings"]
    assert sailings["minItems"] == 1 and "x-semantic-type" not in sailings
    item = sailings["items"]
    assert item["required"] == ["departs_at", "fare", "stops"]
    assert (item["properties"]["fare"]["minimum"], item["properties"]["fare"]["maximum"]) == (5, 900)
    assert item["properties"]["stops"]["maxItems"] == 4
    assert item["properties"]["stops"]["items"] == {"type": "string", "x-semantic-type": "ferry.port_code",
                                                   "pattern": "^[A-Z]{5}$"}  # fmt: skip
    record = output_schema(spec, spec.tool("get_booking"))
    assert list(record["properties"]) == ["booking_id", "passenger_name", "fare", "created_at"]
    assert record["properties"]["booking_id"]["x-semantic-type"] == "ferry.booking_id"
    assert "maximum" not in record["properties"]["fare"] and record["properties"]["fare"]["x-role"] == "amount_paid"
    listed = output_schema(spec, spec.tool("list_bookings"))["properties"]["bookings"]["items"]
    assert listed == record
    assert output_schema(spec, spec.tool("cancel_booking"))["properties"]["cancelled"]["const"] is True


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["tools"][0].update(entity="booking"), "every op but compute names a known entity"),
        (lambda d: d["tools"][2]["params"].clear(), "get takes the record's id field 'booking_id'"),
        (lambda d: d["tools"][3]["returns"].pop("bookings"), "list returns its records in a list field"),
        (lambda d: d["tools"][1].update(returns={}), "create, get and update answer the record"),
        (
            lambda d: d["tools"][1].update(
                guards=[{"require": [{"left": "passenger_name", "op": "present"}], "code": 409, "message": "no name"}]
            ),
            "'guards' is for spec-run",
        ),
        (lambda d: d["tools"][1].update(op="transition"), "op 'transition' is not simulated"),
        (lambda d: d["entities"]["booking"].pop("id_field"), "names its id field"),
        (lambda d: d["types"].pop("geocoding.latitude"), "needs a copy under 'types' by its full name"),
        (lambda d: d["tools"][1]["params"]["passenger_name"].update(max_items=2), "need a list field"),
        (lambda d: d["tools"][1]["params"]["passenger_name"].update(minimum=2), "need a numeric type"),
        (
            lambda d: d["shapes"]["sailing"]["fields"].update(next={"type": "shape:sailing", "description": "Next."}),
            "shape 'sailing' contains itself",
        ),
        (
            lambda d: d["tools"][1]["params"].update(x={"type": "shape:sailing", "description": "A sailing."}),
            "a shape is a result's nested record",
        ),
    ],
)
def test_what_a_simulated_spec_cannot_say_is_refused_by_name(change: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ServiceSpec.model_validate(_ferry(change))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["tools"][0].update(op="compute", entity=""), "op 'compute' is for simulated services"),
        (lambda d: d["tools"][0].update(returns={}), "returns is for simulated services"),
        (lambda d: d["entities"]["book"].update(id_field="isbn"), "id_field is for simulated services"),
        (lambda d: d["entities"]["book"]["fields"]["title"].update(min_length=3), "bounds is for simulated"),
        (lambda d: d["entities"]["book"]["fields"]["title"].update(type="shape:book"), "shape types are for simulated"),
        (lambda d: d.update(entities={}), "a service needs at least one entity"),
    ],
)
def test_the_simulated_subset_is_refused_in_a_spec_run_spec(change: Any, message: str) -> None:
    data = copy.deepcopy(BOOKLOG)
    change(data)
    with pytest.raises(ValueError, match=message):
        ServiceSpec.model_validate(data)


def test_a_simulated_spec_is_not_built_into_the_catalog(tmp_path: Path) -> None:
    path = tmp_path / "ferry.json"
    path.write_text(json.dumps(FERRY))
    result = build_spec(path, catalog=tmp_path / "catalog")
    assert not result.ok and "no offline implementation" in str(result.verification.failures[0])
    assert not (tmp_path / "catalog").exists()
