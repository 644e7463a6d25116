"""Shared fixtures: free ports and MCP server subprocesses."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
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
