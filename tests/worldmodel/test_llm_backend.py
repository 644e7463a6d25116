"""The llm backend end to end against a real local HTTP server speaking chat completions."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from servers.framework import Service
from tests.worldmodel.conftest import SPECS, MisbehavingOpenAI, Raw, ScriptedOpenAI, Slow
from worldmodel.catalog import make_backend, simulated_services
from worldmodel.llm import DEFAULT_TIMEOUT_S, TIMEOUT_ENV, LLMBackend

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


COMPLETION_WITHOUT_CHOICES = json.dumps(
    {"id": "c1", "object": "chat.completion", "created": 0, "model": "m", "choices": []}
)


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (Raw(b"upstream says hello", content_type="text/plain"), "non-JSON body"),
        (Raw(b"<html><body>Bad gateway</body></html>", content_type="text/html"), "non-JSON body"),
        (Raw(b'{"id": "c1", "object": "chat.completion", "choices": [{"ind'), "not valid JSON"),
        (Raw(b'{"id": "c1", "object": "chat.completion", "choices": [{"ind', missing=200), "cut short"),
        (Raw(b""), "not valid JSON"),
        (Raw(b"[1, 2]"), "not a chat completion"),
        (Raw(COMPLETION_WITHOUT_CHOICES.encode()), "no choices"),
    ],
    ids=["text-plain", "html", "truncated-json", "short-body", "empty", "json-array", "no-choices"],
)
def test_a_200_reply_that_is_no_chat_completion_is_a_502_and_no_change(
    misbehaving_openai: MisbehavingOpenAI, reply: Raw, says: str
) -> None:
    service, _ = _service(misbehaving_openai, attempts=3)
    state = service.seed_state(0)
    before = service.state_hash(state)
    misbehaving_openai.replies = [reply]
    envelope = service.call(state, "create_shipment", SHIPMENT)
    assert envelope["success"] is False and envelope["error"]["code"] == 502, envelope
    assert says in envelope["error"]["message"]
    assert len(misbehaving_openai.requests) == 1  # no repair turn: the transport, not the model, failed
    assert service.state_hash(state) == before
    misbehaving_openai.replies = [GOOD_CREATE]  # the backend still works afterwards
    assert service.call(state, "create_shipment", SHIPMENT)["success"] is True


def test_timeout_is_a_constructor_argument(misbehaving_openai: MisbehavingOpenAI) -> None:
    service, backend = _service(misbehaving_openai, timeout_s=0.5)
    assert backend.timeout_s == 0.5
    misbehaving_openai.replies = [Slow(2.0, GOOD_RATES)]
    started = time.monotonic()
    envelope = service.call(service.seed_state(0), "get_rates", {"destination_city": "Paris", "weight_kg": 1})
    assert time.monotonic() - started < 1.8
    assert envelope["success"] is False and envelope["error"]["code"] == 503
    assert "0.5s" in envelope["error"]["message"]


def test_timeout_comes_from_the_environment_when_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert LLMBackend("sim-1", base_url="http://127.0.0.1:9/v1").timeout_s == DEFAULT_TIMEOUT_S == 60.0
    monkeypatch.setenv(TIMEOUT_ENV, "7.5")
    backend = make_backend("llm", model="sim-1", base_url="http://127.0.0.1:9/v1")
    assert isinstance(backend, LLMBackend) and backend.timeout_s == 7.5
    assert backend.client.timeout == 7.5
    explicit = make_backend("llm", model="sim-1", base_url="http://127.0.0.1:9/v1", timeout_s=3)
    assert isinstance(explicit, LLMBackend) and explicit.timeout_s == 3.0  # the argument wins
    for bad in ("soon", "0", "-1", "inf"):
        monkeypatch.setenv(TIMEOUT_ENV, bad)
        with pytest.raises(ValueError, match=TIMEOUT_ENV):
            make_backend("llm", model="sim-1", base_url="http://127.0.0.1:9/v1")
    monkeypatch.delenv(TIMEOUT_ENV)
    with pytest.raises(ValueError, match="timeout_s"):
        make_backend("llm", model="sim-1", timeout_s=0)
