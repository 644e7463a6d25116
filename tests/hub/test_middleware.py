"""Recording and seeded, replayable fault injection, as wrappers around worlds."""

from __future__ import annotations

from typing import Any

from hub.core import Hub
from hub.middleware import FaultConfig, FaultInjector, Recorder, find
from hub.surfaces import gateway_call
from servers.registry import get_service

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("email__list_messages", {"limit": 2}),
    ("email__send_message", {"to": ["a@b.co"], "subject": "s", "body": "b"}),
    ("email__get_message", {"message_id": "nope"}),
] * 20


def _hub(config: FaultConfig | None = None, replay: Any = None) -> Hub:
    factories: list[Any] = [lambda world: Recorder()]
    if config is not None or replay is not None:
        factories.append(lambda world: FaultInjector(config or FaultConfig(), replay=replay, sleep=lambda s: None))
    return Hub.native([get_service("email")], middleware=factories)


def test_recorder_records_calls_with_diffs_for_writes() -> None:
    world = _hub().open_world(seed=1)
    for tool, args in CALLS[:3]:
        world.call(tool, args)
    records = find(world, Recorder).records
    assert [r.tool for r in records] == [c[0] for c in CALLS[:3]]
    assert records[0].diff is None and records[0].kind == "read"
    assert records[1].kind == "write" and any(c.path.startswith("/messages/") for c in records[1].diff or [])
    assert records[2].envelope["error"]["code"] == 404
    assert all(r.latency_ms >= 0 and r.service == "email" for r in records)


def test_faults_are_seeded_recorded_and_replayable() -> None:
    config = FaultConfig(seed=7, latency=0.1, error=0.2, rate_limit=0.1, drift=0.2)
    first, second = _hub(config).open_world(seed=1), _hub(config).open_world(seed=1)
    for world in (first, second):
        for tool, args in CALLS:
            world.call(tool, args)
    one, two = find(first, Recorder).records, find(second, Recorder).records
    assert [r.fault for r in one] == [r.fault for r in two]
    kinds = {r.fault["kind"] for r in one if r.fault}
    assert {"error", "rate_limit", "drift"} <= kinds
    codes = {r.envelope["error"]["code"] for r in one if r.fault and r.fault["kind"] in ("error", "rate_limit")}
    assert codes == {503, 429}
    assert first.hash() == second.hash()

    replayed = _hub(replay=[r.fault for r in one]).open_world(seed=1)
    for tool, args in CALLS:
        replayed.call(tool, args)
    again = find(replayed, Recorder).records
    assert [r.envelope for r in again] == [r.envelope for r in one]
    assert replayed.hash() == first.hash()


def test_injected_errors_do_not_change_state() -> None:
    world = _hub(FaultConfig(seed=1, error=1.0)).open_world(seed=1)
    before = world.hash()
    assert world.call(*CALLS[1])["error"]["code"] == 503
    assert world.hash() == before


def test_schema_drift_renames_a_result_field() -> None:
    world = _hub(FaultConfig(seed=1, drift=1.0)).open_world(seed=1)
    envelope = world.call("email__send_message", {"to": ["a@b.co"], "subject": "s", "body": "b"})
    fault = find(world, Recorder).records[0].fault
    old, new = fault["renamed"]
    assert new == f"{old}_v2" and new in envelope["data"] and old not in envelope["data"]


def test_a_surface_call_is_one_record_of_the_tool_behind_it() -> None:
    world = Hub.native([get_service("email")]).open_world(seed=1)
    recorder = Recorder()
    world.use(recorder)
    args = {"tool_name": "email__send_message", "arguments": {"to": ["a@b.co"], "subject": "s", "body": "b"}}
    sent = recorder.record("call_tool", args, lambda: gateway_call(world, "call_tool", args), meta=True)
    listed = recorder.record("list_services", {}, lambda: gateway_call(world, "list_services", {}), meta=True)
    assert recorder.records == [sent, listed]
    assert (sent.name, sent.service, sent.tool, sent.kind) == ("call_tool", "email", "email__send_message", "write")
    assert sent.envelope["success"] and any(c.path.startswith("/messages/") for c in sent.diff or [])
    assert (listed.index, listed.service, listed.tool, listed.kind, listed.diff) == (1, None, None, "meta", None)
