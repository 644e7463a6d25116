"""World-model fixtures: the test spec directory, and the scripted OpenAI server of tests/conftest.py
taught a few misbehaviours (a raw body of any content type, a body cut short, a slow answer)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ScriptedOpenAI

SPECS = Path(__file__).parent / "specs"


@dataclass(frozen=True)
class Raw:
    """A reply sent as is: HTTP ``status``, ``content_type`` and ``body``, optionally announcing
    ``missing`` more bytes in ``Content-Length`` than it sends (the connection then closes)."""

    body: bytes
    content_type: str = "application/json"
    status: int = 200
    missing: int = 0


@dataclass(frozen=True)
class Slow:
    """The next scripted reply, after ``seconds``."""

    seconds: float
    reply: object = "{}"


class MisbehavingOpenAI(ScriptedOpenAI):
    """:class:`ScriptedOpenAI` whose script may also hold :class:`Raw` and :class:`Slow` replies."""

    def __init__(self) -> None:
        super().__init__()
        owner = self
        scripted = self.server.RequestHandlerClass

        class Handler(scripted):  # type: ignore[valid-type,misc]
            def do_POST(self) -> None:
                head = owner.replies[0] if owner.replies else None
                if isinstance(head, Slow):
                    time.sleep(head.seconds)
                    owner.replies[0] = head.reply
                    head = head.reply
                if not isinstance(head, Raw):
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a client that gave up
                        super().do_POST()
                    return
                owner.replies.pop(0)
                length = int(self.headers["Content-Length"])
                owner.requests.append({"raw": self.rfile.read(length)})
                self.send_response(head.status)
                self.send_header("Content-Type", head.content_type)
                self.send_header("Content-Length", str(len(head.body) + head.missing))
                self.end_headers()
                self.wfile.write(head.body)
                self.wfile.flush()
                self.close_connection = True

        self.server.RequestHandlerClass = Handler


@pytest.fixture
def misbehaving_openai() -> Iterator[MisbehavingOpenAI]:
    server = MisbehavingOpenAI()
    yield server
    server.close()


__all__ = ["SPECS", "MisbehavingOpenAI", "Raw", "ScriptedOpenAI", "Slow"]
