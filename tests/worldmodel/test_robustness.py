"""Simulated tools never answer 500 and never change state on bad input (issue 15, point 7).

Regression tests for what fuzzing found — flights bookings that always failed (a date compared
with a time that has an offset), lone surrogates, dates at the edge of the calendar — and a quick
seeded fuzz over every simulated tool that keeps it that way.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from servers.framework import Envelope, Service
from servers.population import Population
from worldmodel.catalog import simulated_services
from worldmodel.rules import Synthesizer, _order_times

SERVICES = {s.name: s for s in simulated_services()}
SYNTH = Synthesizer(Population.generate(0))


def _valid(envelope: Any) -> bool:
    if not isinstance(envelope, dict):
        return False
    if envelope.get("success") is True:
        return set(envelope) == {"success", "data"}
    problem = envelope.get("error")
    return (
        envelope.get("success") is False
        and set(envelope) == {"success", "error"}
        and isinstance(problem, dict)
        and isinstance(problem.get("code"), int)
        and isinstance(problem.get("message"), str)
    )


def _args(tool: Any, salt: int = 0) -> dict[str, Any]:
    value = SYNTH.value(tool.input_schema, random.Random(f"{tool.name}:{salt}"))
    assert isinstance(value, dict)
    return value


def _text_params(schema: dict[str, Any]) -> list[tuple[str, bool]]:
    """(name, is an array of strings) for every string-typed argument."""
    out = []
    for name, prop in schema.get("properties", {}).items():
        if prop.get("type") == "string":
            out.append((name, False))
        elif prop.get("type") == "array" and prop.get("items", {}).get("type") == "string":
            out.append((name, True))
    return out


BOOKING = {
    "flight_number": "LH400",
    "departure_date": "2026-04-12",
    "passenger_name": "Ann Lee",
    "passenger_email": "ann.lee@example.com",
    "passengers": 2,
}


def test_flights_can_be_booked_listed_read_and_cancelled() -> None:
    flights = SERVICES["flights"]
    state = flights.seed_state(0)
    booked = flights.call(state, "book_flight", BOOKING)
    assert booked["success"] is True, booked
    data = booked["data"]
    assert data["flight_number"] == "LH400" and data["departure_date"] == "2026-04-12"
    assert data["arrival_time"] > data["departure_time"] >= "2026-04-12"
    listed = flights.call(state, "list_bookings", {"passenger_email": "ann.lee@example.com"})
    assert listed["success"] is True, listed
    assert [b["booking_id"] for b in listed["data"]["bookings"]] == [data["booking_id"]]
    assert flights.call(state, "list_bookings", {})["success"] is True
    got = flights.call(state, "get_booking", {"booking_id": data["booking_id"]})
    assert got["success"] is True and got["data"]["passenger_name"] == "Ann Lee"
    cancelled = flights.call(state, "cancel_booking", {"booking_id": data["booking_id"]})
    assert cancelled["success"] is True and cancelled["data"]["status"] == "cancelled"


def test_end_times_are_ordered_after_start_dates_and_times_with_or_without_offsets() -> None:
    rng = random.Random(0)
    record = {"departure_date": "2026-04-12", "arrival_time": "2026-04-11T22:00:00+02:00"}
    _order_times(record, rng)  # was: TypeError, naive date vs aware time
    assert record["arrival_time"].endswith("Z") and record["arrival_time"] > "2026-04-12T00"
    record = {"departure_time": "2026-04-12T10:00:00Z", "arrival_time": "2026-04-12T09:00:00"}
    _order_times(record, rng)
    arrival = record["arrival_time"]
    assert "+" not in arrival and not arrival.endswith("Z") and arrival > "2026-04-12T10:00"
    record = {"start_time": "2026-04-12T10:00:00+00:00", "end_date": "2026-04-11"}
    _order_times(record, rng)
    assert record["end_date"] in ("2026-04-12", "2026-04-13")  # a date stays a date
    record = {"departure_time": "9999-12-31T23:59:00Z", "arrival_time": "9999-12-31T00:00:00Z"}
    _order_times(record, rng)  # nothing later to move to: left as is, no OverflowError
    assert record["arrival_time"] == "9999-12-31T00:00:00Z"


def _surrogate_cases() -> list[tuple[str, str, str, bool]]:
    return [
        (service.name, tool.name, param, is_array)
        for service in SERVICES.values()
        for tool in service.tools.values()
        for param, is_array in _text_params(tool.input_schema)
    ]


@pytest.mark.parametrize("service_name", sorted(SERVICES))
def test_a_lone_surrogate_in_any_text_argument_is_a_400_naming_it(service_name: str) -> None:
    service: Service[Any] = SERVICES[service_name]
    state = service.seed_state(0)
    for tool in service.tools.values():  # a record in every collection, so reads reach the backend too
        service.call(state, tool.name, _args(tool))
    cases = [c for c in _surrogate_cases() if c[0] == service_name]
    assert cases
    for _, tool_name, param, is_array in cases:
        tool = service.tools[tool_name]
        for bad in ("\ud800", "ok \udfff then"):
            arguments = {**_args(tool), param: [bad] if is_array else bad}
            before = service.state_hash(state)
            envelope = service.call(state, tool_name, arguments)
            assert _valid(envelope) and envelope["success"] is False, (tool_name, param, envelope)
            assert envelope["error"]["code"] == 400, (tool_name, param, envelope)
            message = envelope["error"]["message"]
            assert f"'{param}" in message and "Unicode" in message, message
            message.encode("utf-8")  # the answer itself can be written to any transport
            json.dumps(envelope, ensure_ascii=False).encode("utf-8")
            assert service.state_hash(state) == before
    tool = next(iter(service.tools.values()))
    envelope = service.call(state, tool.name, {**_args(tool), "\ud800": 1})  # an unknown key, unencodable
    assert envelope["error"]["code"] == 400
    envelope["error"]["message"].encode("utf-8")


def test_arguments_nested_without_end_are_a_400_not_a_crash() -> None:
    weather = SERVICES["weather"]
    state = weather.seed_state(0)
    for value in (_nested(10_000), _nested(65)):
        for arguments in ({"city": value}, {"city": "Berlin", "extra": value}):
            envelope = weather.call(state, "get_forecast", arguments)  # was: RecursionError raised
            assert envelope["error"]["code"] == 400 and "nests deeper" in envelope["error"]["message"], envelope


@pytest.mark.parametrize("moment", ["9999-12-31", "9999-12-31T23:59:59Z", "0001-01-01", "0001-01-01T00:00:00+14:00"])
def test_dates_at_the_edge_of_the_calendar_never_break_a_tool(moment: str) -> None:
    for service in SERVICES.values():
        state = service.seed_state(0)
        for tool in service.tools.values():
            for param, is_array in _text_params(tool.input_schema):
                arguments = {**_args(tool), param: [moment] if is_array else moment}
                before = service.state_hash(state)
                envelope = service.call(state, tool.name, arguments)
                assert _valid(envelope), envelope
                if not envelope["success"]:
                    assert envelope["error"]["code"] in (400, 404), (service.name, tool.name, param, envelope)
                    assert service.state_hash(state) == before


ODD: list[Any] = [
    "\ud800",
    "\x00",
    "x" * 20_000,
    "",
    "\u202eevil",
    "😀",
    "9999-12-31",
    "2026-02-30",
    "NaN",
    None,
    True,
    0,
    -1,
    1.5,
    [],
    {},
    [None],
    10**30,
    -(10**30),
    1e308,
    float("inf"),
    float("nan"),
    2**64 + 1,
]


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


ODD += [{1: "int key"}, _nested(10_000)]


def _check(service: Service[Any], state: Any, tool: str, arguments: Any) -> Envelope:
    before = service.state_hash(state)
    envelope = service.call(state, tool, arguments)  # must not raise
    assert _valid(envelope), (tool, arguments, envelope)
    if envelope["success"]:
        json.dumps(envelope, allow_nan=False).encode("utf-8")
    else:
        assert envelope["error"]["code"] < 500, (service.name, tool, str(arguments)[:200], envelope)
        assert service.state_hash(state) == before, (service.name, tool, str(arguments)[:200])
    return envelope


def test_fuzz_odd_values_wrong_types_and_huge_numbers() -> None:
    """A few thousand seeded calls over every simulated tool: no exception, no 5xx, no change on error."""
    rng = random.Random(15)
    calls = 0
    for service in SERVICES.values():
        state = service.seed_state(0)
        for tool in service.tools.values():
            for salt in range(2):
                _check(service, state, tool.name, _args(tool, salt))
                calls += 1
        for tool in service.tools.values():
            base = _args(tool, 7)
            for param in tool.input_schema.get("properties", {}):
                for value in rng.sample(ODD, 6):
                    _check(service, state, tool.name, {**base, param: value})
                    calls += 1
            wholes: list[Any] = [None, [], "x", 1, {"zzz": 1}]
            for whole in wholes:
                _check(service, state, tool.name, whole)
                calls += 1
            names = list(tool.input_schema.get("properties", {}))
            for _ in range(8):
                mixed = dict(base)
                for param in rng.sample(names, min(len(names), rng.randint(1, 3))):
                    mixed[param] = rng.choice(ODD)
                _check(service, state, tool.name, mixed)
                calls += 1
    assert calls > 2000
