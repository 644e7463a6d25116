"""FastMCP servers mounted in process: tools in every world, calls recorded, per-world state isolated."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Context, FastMCP
from mcp import Client

from hub.cli import build_hub
from hub.core import Hub
from hub.external import load_config
from hub.fastmcp_mount import config_entry, fastmcp_entry, world_state
from hub.middleware import FaultConfig, FaultInjector, Recorder, find
from hub.surfaces import world_server
from servers.registry import get_service
from tests.hub.fixtures import notes_server

NOTES = "tests.hub.fixtures.notes_server"


def _echo_server() -> FastMCP[Any]:
    server = FastMCP("echo")

    @server.tool(annotations={"readOnlyHint": True})
    def where() -> dict[str, Any]:
        """The process and thread the tool runs in."""
        return {"pid": os.getpid(), "thread": threading.current_thread().name}

    @server.tool
    def shout(text: str, times: int = 1) -> str:
        """The text in capitals."""
        return " ".join([text.upper()] * times)

    return server


@dataclass
class Ledger:
    entries: list[int]


class LedgerHook:
    """A user's own hook over a state that is an object, seeded from the world's seed."""

    def create(self, seed: int) -> Ledger:
        return Ledger([seed])

    def snapshot(self, state: Ledger) -> dict[str, Any]:
        return {"entries": state.entries}

    def restore(self, data: dict[str, Any]) -> Ledger:
        return Ledger(data["entries"])


def _ledger_server() -> FastMCP[Any]:
    server = FastMCP("ledger")

    @server.tool
    async def append(value: int) -> list[int]:
        """Append a value to this world's ledger (an async tool: it runs on the event loop)."""
        ledger: Ledger = world_state()
        ledger.entries.append(value)
        return ledger.entries

    return server


def _notes_hub(*middleware: Any) -> Hub:
    entry = fastmcp_entry(f"{NOTES}:mcp", state=f"{NOTES}:state")
    return Hub.native([get_service("email")], extra=[entry], middleware=list(middleware))


def test_a_server_object_is_mounted_in_process_with_kinds_from_annotations() -> None:
    hub = Hub.native([], extra=[fastmcp_entry(_echo_server())])
    assert hub.registry.tools["echo__where"].kind == "read"
    assert hub.registry.tools["echo__shout"].kind == "write"
    world = hub.open_world(seed=0)
    assert world.call("echo__where", {})["data"]["pid"] == os.getpid()
    assert world.call("echo__shout", {"text": "hi", "times": 2}) == {"success": True, "data": "HI HI"}


def test_tools_are_called_in_two_worlds_through_the_mcp_surface_and_recorded() -> None:
    hub = _notes_hub(lambda world: Recorder())
    first, second = hub.open_world(seed=0), hub.open_world(seed=0)

    async def main() -> None:
        async with Client(world_server(first, "direct")) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"notes__add_note", "notes__list_notes", "email__list_messages"} <= names
            added = await client.call_tool("notes__add_note", {"text": "buy milk"})
            assert added.structured_content == {
                "success": True,
                "data": {"id": "n1", "text": "buy milk", "pinned": False},
            }
        async with Client(world_server(second, "gateway")) as client:
            args = {"tool_name": "notes__add_note", "arguments": {"text": "call Pat", "pinned": True}}
            assert (await client.call_tool("call_tool", args)).structured_content["data"]["id"] == "n1"

    anyio.run(main)
    for world, text in ((first, "buy milk"), (second, "call Pat")):
        [record] = find(world, Recorder).records
        assert (record.service, record.kind, record.arguments["text"]) == ("notes", "write", text)
        assert record.envelope["data"]["text"] == text
        assert record.diff and all(c.path.startswith("/notes") for c in record.diff)


def test_with_the_state_hook_worlds_stay_isolated() -> None:
    hub = _notes_hub()
    first, second = hub.open_world(seed=0), hub.open_world(seed=0)
    first.call("notes__add_note", {"text": "only in the first world"})
    assert second.call("notes__list_notes", {}) == {"success": True, "data": []}
    second.call("notes__add_note", {"text": "only in the second world"})
    assert [n["text"] for n in first.call("notes__list_notes", {})["data"]] == ["only in the first world"]
    assert first.states(["notes"]) != second.states(["notes"])
    assert hub.open_world(seed=0).call("notes__list_notes", {})["data"] == []


def test_worlds_calling_at_the_same_time_each_see_their_own_state() -> None:
    hub = _notes_hub()
    worlds = [hub.open_world(seed=0) for _ in range(4)]

    def run(index: int) -> None:
        for call in range(15):
            worlds[index].call("notes__add_note", {"text": f"w{index}-{call}"})

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(worlds))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index, world in enumerate(worlds):
        texts = [n["text"] for n in world.call("notes__list_notes", {})["data"]]
        assert texts == [f"w{index}-{call}" for call in range(15)]


def test_snapshot_restore_fork_and_reset_round_trip_the_hook_state() -> None:
    hub = _notes_hub()
    world = hub.open_world(seed=0)
    world.call("notes__add_note", {"text": "kept"})
    snap, digest = world.snapshot(), world.hash()
    assert snap["services"]["notes"] == {"notes": {"n1": {"id": "n1", "text": "kept", "pinned": False}}}
    branch = world.fork()
    world.call("notes__add_note", {"text": "dropped"})
    assert branch.call("notes__list_notes", {})["data"] == [snap["services"]["notes"]["notes"]["n1"]]
    world.restore(snap)
    assert world.hash() == digest and world.call("notes__list_notes", {})["data"][0]["text"] == "kept"
    reopened = hub.open_world(snapshot=snap)
    assert reopened.hash() == digest
    world.reset()
    assert world.call("notes__list_notes", {})["data"] == []
    assert branch.diff()["notes"] and "notes" not in hub.open_world(seed=0).diff()


def test_a_rubric_scores_the_hook_state_of_each_world() -> None:
    hub = _notes_hub()
    worked, idle = hub.open_world(seed=0), hub.open_world(seed=0)
    worked.call("notes__add_note", {"text": "Call Pat about the renewal"})
    rubric = {
        "criteria": [
            {
                "id": "c1",
                "description": "a note to call Pat",
                "kind": "record",
                "service": "notes",
                "collection": "notes",
                "contains": {"text": "call pat"},
                "expect": "created",
            }
        ]
    }
    assert worked.score(rubric).score == 1.0
    assert idle.score(rubric).score == 0.0


def test_bad_arguments_get_a_400_naming_the_argument_and_change_nothing() -> None:
    world = _notes_hub(lambda world: Recorder()).open_world(seed=0)
    world.call("notes__add_note", {"text": "first"})
    digest = world.hash()
    missing = world.call("notes__add_note", {})
    assert missing["success"] is False and missing["error"]["code"] == 400
    assert "'text'" in missing["error"]["message"] and "notes__add_note" in missing["error"]["message"]
    unknown = world.call("notes__add_note", {"text": "x", "colour": "red"})
    assert unknown["error"]["code"] == 400 and "'colour'" in unknown["error"]["message"]
    not_json = world.call("notes__add_note", {"text": "x", "pinned": float("nan")})
    assert not_json["error"]["code"] == 400 and "'pinned'" in not_json["error"]["message"]
    assert world.hash() == digest
    assert [r.envelope["success"] for r in find(world, Recorder).records] == [True, False, False, False]


def test_a_bad_argument_over_mcp_gets_the_error_envelope() -> None:
    world = _notes_hub().open_world(seed=0)

    async def main() -> Any:
        async with Client(world_server(world, "direct")) as client:
            return (await client.call_tool("notes__add_note", {"text": ["not", "text"]})).structured_content

    answer = anyio.run(main)
    assert answer["success"] is False and answer["error"]["code"] == 400 and "'text'" in answer["error"]["message"]


def test_a_write_that_fails_halfway_leaves_the_state_as_it_was() -> None:
    world = _notes_hub().open_world(seed=0)
    world.call("notes__add_note", {"text": "first"})
    digest = world.hash()
    crashed = world.call("notes__add_then_crash", {"text": "half"})
    assert crashed["error"]["code"] == 500 and "RuntimeError: disk full" in crashed["error"]["message"]
    refused = world.call("notes__delete_note", {"note_id": "n9"})
    assert refused == {"success": False, "error": {"code": 400, "message": "unknown note 'n9'"}}
    assert world.hash() == digest
    assert world.call("notes__delete_note", {"note_id": "n1"}) == {"success": True, "data": None}


def test_faults_are_injected_into_fastmcp_calls_and_recorded() -> None:
    injector = FaultConfig(seed=1, error=1.0)
    hub = _notes_hub(lambda world: Recorder(), lambda world: FaultInjector(injector, sleep=lambda s: None))
    world = hub.open_world(seed=0)
    digest = world.hash()
    answer = world.call("notes__add_note", {"text": "never written"})
    assert answer["error"]["code"] == 503
    [record] = find(world, Recorder).records
    assert record.fault == {"kind": "error"} and record.service == "notes"
    assert world.hash() == digest


def test_a_hook_state_object_is_seeded_from_the_world_seed() -> None:
    hub = Hub.native([], extra=[fastmcp_entry(_ledger_server(), state=LedgerHook())])
    seven, eight = hub.open_world(seed=7), hub.open_world(seed=8)
    assert seven.call("ledger__append", {"value": 1})["data"] == [7, 1]
    assert eight.call("ledger__append", {"value": 2})["data"] == [8, 2]
    assert seven.snapshot()["services"]["ledger"] == {"entries": [7, 1]}


def test_the_server_lifespan_runs_once_and_its_tools_see_it() -> None:
    started: list[str] = []

    @asynccontextmanager
    async def lifespan(server: FastMCP[Any]) -> AsyncIterator[dict[str, str]]:
        started.append(server.name)
        yield {"greeting": "hello from the lifespan"}

    server = FastMCP("greeter", lifespan=lifespan)

    @server.tool(annotations={"readOnlyHint": True})
    def greet(ctx: Context) -> str:
        """The greeting the lifespan set up."""
        return str(ctx.lifespan_context["greeting"])

    first = Hub.native([], extra=[fastmcp_entry(server)])
    second = Hub.native([], extra=[fastmcp_entry(server)])
    for hub in (first, second):
        assert hub.open_world(seed=0).call("greeter__greet", {})["data"] == "hello from the lifespan"
    assert started == ["greeter"]


def test_a_server_whose_lifespan_fails_is_not_mounted() -> None:
    @asynccontextmanager
    async def lifespan(server: FastMCP[Any]) -> AsyncIterator[None]:
        raise ConnectionError("no database")
        yield

    with pytest.raises(ValueError, match=r"'broken' did not start: .*no database"):
        fastmcp_entry(FastMCP("broken", lifespan=lifespan))


def test_a_hub_config_mounts_a_fastmcp_server_by_import_path(tmp_path: Path) -> None:
    path = tmp_path / "hub.toml"
    path.write_text(
        '[hub]\nservices = ["email", "jot"]\n\n'
        f'[[external]]\nname = "jot"\nfastmcp = "{NOTES}:mcp"\nstate = "{NOTES}:state"\ntimeout_s = 5\n'
    )
    [config] = load_config(path)["external"]
    assert config_entry(config).name == "jot"
    hub, mounted = build_hub(None, path)
    world = hub.open_world(services=mounted, seed=0)
    assert world.call("jot__add_note", {"text": "from config"})["success"] is True
    assert hub.open_world(services=mounted, seed=0).call("jot__list_notes", {})["data"] == []


def test_mount_errors_name_what_is_wrong() -> None:
    with pytest.raises(ValueError, match=re.escape("'tests.hub.fixtures.nowhere'")):
        fastmcp_entry("tests.hub.fixtures.nowhere:mcp")
    with pytest.raises(ValueError, match="no attribute 'missing'"):
        fastmcp_entry(f"{NOTES}:missing")
    with pytest.raises(TypeError, match=re.escape("expected a fastmcp.FastMCP")):
        fastmcp_entry(f"{NOTES}:state")
    with pytest.raises(ValueError, match="lower_snake_case"):
        fastmcp_entry(notes_server.mcp, name="Notes")

    class NotJson(LedgerHook):
        def snapshot(self, state: Ledger) -> dict[str, Any]:
            return {"entries": {1, 2}}

    with pytest.raises(TypeError, match="not JSON"):
        fastmcp_entry(_ledger_server(), state=NotJson())


def test_world_state_outside_a_world_call_is_an_error() -> None:
    with pytest.raises(LookupError, match="world_state"):
        world_state()
