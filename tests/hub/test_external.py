"""External MCP servers: a real subprocess that is killed or hangs never takes the hub down."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from hub.core import Hub
from hub.external import ExternalConfig, external_entry, load_config
from servers.registry import get_service

pytestmark = pytest.mark.slow

COMMAND = (sys.executable, "-m", "tests.hub.external_server")


def _hub(timeout_s: float = 2.0) -> Hub:
    entry = external_entry(ExternalConfig(name="fake", command=COMMAND, timeout_s=timeout_s))
    return Hub.native([get_service("email")], extra=[entry])


def test_external_tools_are_mounted_with_their_kinds() -> None:
    hub = _hub()
    assert hub.registry.tools["fake__pid"].kind == "read"
    assert hub.registry.tools["fake__echo"].kind == "write"
    world = hub.open_world(seed=0)
    assert world.call("fake__echo", {"text": "hello"}) == {"success": True, "data": "hello"}


def test_killed_server_costs_one_error_envelope_then_restarts() -> None:
    world = _hub().open_world(seed=0)
    pid = world.call("fake__pid", {})["data"]["pid"]
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.3)
    failed = world.call("fake__pid", {})
    assert failed["success"] is False and failed["error"]["code"] == 503
    assert "'fake'" in failed["error"]["message"]
    again = world.call("fake__pid", {})
    assert again["success"] is True and again["data"]["pid"] != pid
    assert world.call("email__list_messages", {"limit": 1})["success"] is True


def test_hanging_server_times_out_and_restarts() -> None:
    world = _hub(timeout_s=1.0).open_world(seed=0)
    pid = world.call("fake__pid", {})["data"]["pid"]
    started = time.monotonic()
    hung = world.call("fake__hang", {})
    assert hung["error"]["code"] == 504 and time.monotonic() - started < 15
    after = world.call("fake__pid", {})
    assert after["success"] is True and after["data"]["pid"] != pid


def test_server_that_cannot_start_is_mounted_without_tools() -> None:
    entry = external_entry(ExternalConfig(name="broken", command=(sys.executable, "-c", "raise SystemExit(3)")))
    hub = Hub.native([get_service("email")], extra=[entry])
    assert hub.registry.services["broken"].tools == ()
    assert hub.open_world(seed=0).call("broken__anything", {})["error"]["code"] == 404


def test_config_file_declares_externals(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "hub.toml")
    with open(path, "w") as handle:
        handle.write('[hub]\nservices = ["email"]\n\n[[external]]\nname = "fake"\ncommand = ["python", "x.py"]\n')
    loaded = load_config(path)
    assert loaded["services"] == ["email"]
    assert loaded["external"][0].command == ("python", "x.py")
    with open(path, "w") as handle:
        handle.write('[[external]]\nname = "fake"\n')
    with pytest.raises(ValueError, match="exactly one of 'command' or 'url'"):
        load_config(path)
