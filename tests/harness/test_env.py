"""The environment owns its world's recorder: every call is recorded once, through it."""

from __future__ import annotations

from harness.env import InProcessEnv
from hub.core import Hub
from hub.middleware import Recorder
from servers.registry import get_service


def test_an_environment_records_its_calls_without_a_recorder_on_the_hub() -> None:
    world = Hub.native([get_service("email")]).open_world(seed=1)
    env = InProcessEnv(world, "gateway")
    env.call_tool("email__send_message", {"to": ["a@b.co"], "subject": "s", "body": "b"})
    env.call("list_tools", {"service": "email"})
    assert env.calls is env.recorder.records
    assert [(c.name, c.tool, c.kind) for c in env.calls] == [
        ("call_tool", "email__send_message", "write"),
        ("list_tools", None, "meta"),
    ]
    assert env.calls[0].diff


def test_a_given_recorder_numbers_on_from_an_earlier_recording() -> None:
    world = Hub.native([get_service("email")]).open_world(seed=1)
    env = InProcessEnv(world, "direct", Recorder(first_index=5))
    envelope = env.call("email__list_messages", {"limit": 1})
    assert envelope["success"] and [c.index for c in env.calls] == [5]
    assert env.calls[0].envelope is envelope
