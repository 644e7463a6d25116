"""The llm backend end to end against a real local HTTP server speaking chat completions."""

from __future__ import annotations

import json
from typing import Any

from servers.framework import Service
from tests.worldmodel.conftest import SPECS, ScriptedOpenAI
from worldmodel.catalog import make_backend, simulated_services
from worldmodel.llm import LLMBackend

SHIPMENT = {"recipient_name": "Ann Lee", "destination_city": "Berlin", "weight_kg": 2.5}
GOOD_CREATE = json.dumps({"status": "booked", "price": 12.5, "estimated_delivery": "2026-03-05"})
GOOD_RATES = json.dumps({"price": 9.9, "currency": "EUR", "days": 2})


def _service(server: ScriptedOpenAI, **kwargs: Any) -> tuple[Service[Any], LLMBackend]:
    backend = make_backend("llm", model="sim-1", base_url=server.url, **kwargs)
    assert isinstance(backend, LLMBackend)
    return simulated_services(SPECS, backend)[0], backend


def test_valid_reply_becomes_the_output_and_the_record(openai_server: ScriptedOpenAI) -> None:
    service, _ = _service(openai_server)
    state = service.seed_state(0)
    openai_server.replies = [GOOD_CREATE]
    created = service.call(state, "create_shipment", SHIPMENT)
    assert created["success"] is True
    assert created["data"]["price"] == 12.5 and created["data"]["recipient_name"] == "Ann Lee"
    request = openai_server.requests[0]
    assert request["model"] == "sim-1"
    assert request["response_format"]["type"] == "json_schema"
    prompt = json.loads(request["messages"][1]["content"])
    assert prompt["tool"]["name"] == "create_shipment" and prompt["arguments"] == SHIPMENT
    openai_server.replies = [json.dumps({"last_scan": "Leipzig"})]
    tracked = service.call(state, "track_shipment", {"tracking_number": created["data"]["tracking_number"]})
    assert tracked["data"]["recipient_name"] == "Ann Lee" and tracked["data"]["status"] == "booked"
    assert json.loads(openai_server.requests[1]["messages"][1]["content"])["records"][0]["price"] == 12.5


def test_schema_violating_reply_is_repaired_by_retry(openai_server: ScriptedOpenAI) -> None:
    service, _ = _service(openai_server)
    openai_server.replies = [json.dumps({"price": "cheap", "currency": "euro", "days": 0}), GOOD_RATES]
    envelope = service.call(service.seed_state(0), "get_rates", {"destination_city": "Paris", "weight_kg": 1})
    assert envelope == {
        "success": True,
        "data": {"destination_city": "Paris", "price": 9.9, "currency": "EUR", "days": 2},
    }
    assert len(openai_server.requests) == 2
    repair = openai_server.requests[1]["messages"][-1]["content"]
    assert "invalid" in repair and "price" in repair


def test_garbage_replies_end_in_a_clear_error_and_no_change(openai_server: ScriptedOpenAI) -> None:
    service, _ = _service(openai_server, attempts=3)
    state = service.seed_state(0)
    before = service.state_hash(state)
    openai_server.replies = ["I am a teapot", "```not json```", "[1, 2]"]
    envelope = service.call(state, "create_shipment", SHIPMENT)
    assert envelope["success"] is False and envelope["error"]["code"] == 502
    assert "create_shipment" in envelope["error"]["message"] and "3 attempts" in envelope["error"]["message"]
    assert len(openai_server.requests) == 3
    assert service.state_hash(state) == before


def test_down_endpoint_is_a_503_envelope() -> None:
    backend = make_backend("llm", model="sim-1", base_url="http://127.0.0.1:9/v1")
    service = simulated_services(SPECS, backend)[0]
    envelope = service.call(service.seed_state(0), "get_rates", {"destination_city": "Paris", "weight_kg": 1})
    assert envelope["success"] is False and envelope["error"]["code"] == 503
    assert "unreachable" in envelope["error"]["message"]


def test_replies_are_cached_by_tool_arguments_and_state(openai_server: ScriptedOpenAI, tmp_path: Any) -> None:
    cache = tmp_path / "cache.json"
    service, backend = _service(openai_server, cache_path=cache)
    state = service.seed_state(0)
    args = {"destination_city": "Paris", "weight_kg": 1}
    openai_server.replies = [GOOD_RATES]
    first = service.call(state, "get_rates", args)
    second = service.call(state, "get_rates", args)
    assert first == second and len(openai_server.requests) == 1 and backend.hits == 1
    openai_server.replies = [GOOD_CREATE, GOOD_RATES]
    service.call(state, "create_shipment", SHIPMENT)  # the state changes, so the cache key does too
    service.call(state, "get_rates", args)
    assert len(openai_server.requests) == 3
    replay, replay_backend = _service(openai_server, cache_path=cache)  # a new run reads the cache file
    assert replay.call(replay.seed_state(0), "get_rates", args) == first
    assert len(openai_server.requests) == 3 and replay_backend.hits == 1


def test_endpoint_without_json_schema_support_falls_back_to_json_mode(openai_server: ScriptedOpenAI) -> None:
    service, _ = _service(openai_server)
    openai_server.replies = [400, GOOD_RATES]
    envelope = service.call(service.seed_state(0), "get_rates", {"destination_city": "Oslo", "weight_kg": 3})
    assert envelope["success"] is True
    assert openai_server.requests[1]["response_format"] == {"type": "json_object"}
