"""The CompoWorld rollout server, as this package reaches it (``python -m training.verifiers_server``)."""

from __future__ import annotations

import os
from typing import Any

import httpx

SERVER_ENV = "COMPOWORLD_SERVER"
TOKEN_ENV = "COMPOWORLD_TOKEN"
DEFAULT_SERVER = "http://127.0.0.1:8790"
TIMEOUT = httpx.Timeout(60.0, connect=10.0)


class ServerError(RuntimeError):
    """The rollout server answered with an error (its message names the bad field or id)."""


def default_server() -> str:
    return os.environ.get(SERVER_ENV, DEFAULT_SERVER)


def default_token() -> str:
    return os.environ.get(TOKEN_ENV, "")


def _checked(response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code >= 400:
        message = body.get("error") if isinstance(body, dict) else response.text
        raise ServerError(f"{response.request.method} {response.request.url.path}: {response.status_code} {message}")
    return body


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def tasks(server: str, token: str) -> list[dict[str, Any]]:
    """Every task the server serves, as an agent may see it (id, instruction, system prompt, services)."""
    with httpx.Client(timeout=TIMEOUT) as http:
        found: list[dict[str, Any]] = _checked(http.get(f"{server}/tasks", headers=_headers(token)))["tasks"]
        return found


async def post(server: str, token: str, path: str, body: dict[str, Any]) -> Any:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        return _checked(await http.post(f"{server}{path}", json=body, headers=_headers(token)))


async def delete(server: str, token: str, path: str) -> Any:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        return _checked(await http.delete(f"{server}{path}", headers=_headers(token)))
