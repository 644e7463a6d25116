"""Shared fixtures: free ports, MCP server subprocesses, a scripted OpenAI-compatible server."""

from __future__ import annotations

import functools
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from hub.core import Hub


@functools.cache
def full_hub() -> Hub:
    """The default hub (every service), built once per test process: building one imports and
    describes ~130 services (seconds), and tests only open their own worlds on it."""
    from taskgen.generate import default_hub

    return default_hub()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"server exited early with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''!r}"
            )
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port} after {timeout}s")


@pytest.fixture
def cli_server() -> Iterator[object]:
    """Start ``compoworld <args>`` as an HTTP server subprocess; yields a starter returning the port."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> int:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "training.cli", *args, "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        procs.append(proc)
        wait_for_port(port, proc)
        return port

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


class ScriptedOpenAI:
    """A real HTTP server speaking /v1/chat/completions; replies come from a script, in order."""

    def __init__(self) -> None:
        # Each reply: str content, {"content": ..., "tool_calls": [...]}, or an int HTTP status.
        self.replies: list[Any] = []
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                reply = owner.replies.pop(0) if owner.replies else "{}"
                if isinstance(reply, int):
                    payload = {"error": {"message": "response_format json_schema is not supported", "type": "invalid"}}
                    self._send(reply, payload)
                    return
                if isinstance(reply, str):
                    message = {"role": "assistant", "content": reply}
                else:
                    message = {
                        "role": "assistant",
                        "content": reply.get("content"),
                        "tool_calls": reply.get("tool_calls"),
                    }
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(owner.requests)}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", "scripted"),
                        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    },
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAI]:
    server = ScriptedOpenAI()
    yield server
    server.close()
