"""Hub fixtures: a small native hub, and a real uvicorn server for the HTTP front."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn

from hub.core import Hub
from hub.http import HubHTTP
from servers.registry import get_service
from tests.conftest import free_port

SERVICES = ("email", "crm", "calendar")


@pytest.fixture
def hub() -> Hub:
    return Hub.native([get_service(name) for name in SERVICES])


@pytest.fixture
def http_hub(hub: Hub) -> Iterator[tuple[HubHTTP, str]]:
    front = HubHTTP(hub, admin_token="admin-secret")
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(front.app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise TimeoutError("uvicorn did not start")
        time.sleep(0.05)
    yield front, f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
