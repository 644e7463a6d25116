"""FastMCP servers mounted in process: tools a user already wrote as a FastMCP server, as a service.

No subprocess and no MCP round trip: the hub calls the server's own ``call_tool`` (its middleware,
argument validation and result conversion included) on the background event loop that external
servers share. Its tools are in every world that mounts the service, named ``<service>__<tool>``,
and their calls pass through the world's middleware like any other call, so the
:class:`~hub.middleware.Recorder` records them and the :class:`~hub.middleware.FaultInjector`
injects faults into them. A tool is a read when it is annotated ``readOnlyHint``, a write otherwise.

In Python, a server object or an import path::

    hub = Hub.native(extra=[fastmcp_entry(mcp)])                     # service named mcp.name
    hub = Hub.native(extra=[fastmcp_entry("my_tools:mcp", name="notes", state="my_tools:notes")])

In a hub config (``compoworld hub serve --config hub.toml``)::

    [[external]]
    name = "notes"
    fastmcp = "my_tools:mcp"        # module:attribute of the FastMCP server
    state = "my_tools:notes"        # optional: the per-world state hook

**Per-world state.** A server whose tools keep state declares a hook — any object with
``create() -> state`` (``create(seed)`` also works: it gets the world's seed),
``snapshot(state) -> dict`` (JSON) and ``restore(dict) -> state`` (:class:`StateHook`;
:class:`DictState` is one for a plain dict) — and its tools reach the calling world's state with
:func:`world_state`. Every world then has its own state: it is part of ``world.snapshot()``,
``restore``, ``fork``, ``reset``, hashes, diffs and rubric scoring like a native service's, and
world A's calls never change world B's state (a world copies the state before its first call
of the service, whatever the tool's annotations say). A write that fails (an error envelope)
leaves the state as it was: it is restored from the snapshot taken before the call.

**Envelopes.** What a tool returns becomes ``{"success": true, "data": ...}`` (a tool that
returns an envelope itself is normalised as an external server's is: :func:`hub.external.normalise`).
Arguments that fail the tool's validation are a 400 naming the argument; a ``ToolError`` the tool
raises is a 400 with its message (the tool refused the call); any other exception a 500 naming
it; a call past ``timeout_s`` a 504. The server's lifespan is entered when it is first mounted
and lasts as long as the process (an in-memory client is held open on the background loop).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import copy
import importlib
import inspect
import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

import mcp_types as types
from fastmcp import Client, FastMCP
from fastmcp.exceptions import NotFoundError, ToolError, ValidationError
from fastmcp.tools import ToolResult
from pydantic import PrivateAttr, model_serializer
from pydantic import ValidationError as PydanticValidationError

from hub.external import (
    ExternalConfig,
    argument_problem,
    background_loop,
    clean,
    external_entry,
    normalise,
    to_envelope,
)
from hub.registry import ServiceEntry, ToolEntry, qualify
from hub.world import ServiceSlot, World
from servers.framework import Envelope, Service, ServiceState, error, ok

SERVICE_NAME_RE = re.compile(r"[a-z][a-z0-9_]{1,30}")


@runtime_checkable
class StateHook(Protocol):
    """How a FastMCP server's per-world state is made, saved and brought back."""

    @property
    def create(self) -> Callable[..., Any]:
        """``create() -> state``: a fresh state for a new world; ``create(seed)`` gets the world's seed."""
        ...

    def snapshot(self, state: Any) -> dict[str, Any]:
        """The state as a JSON object (the hub copies it; it may share data with ``state``)."""
        ...

    def restore(self, data: dict[str, Any]) -> Any:
        """A state from a snapshot (the hub passes a private copy; it may be kept as it is)."""
        ...


class DictState:
    """A :class:`StateHook` for a state that is a plain JSON dict, starting as ``initial``."""

    def __init__(self, initial: Mapping[str, Any]) -> None:
        self.initial = json_copy(dict(initial), "the initial state")

    def create(self) -> dict[str, Any]:
        return copy.deepcopy(self.initial)

    def snapshot(self, state: dict[str, Any]) -> dict[str, Any]:
        return state

    def restore(self, data: dict[str, Any]) -> dict[str, Any]:
        return data


_CURRENT: contextvars.ContextVar[Any] = contextvars.ContextVar("compoworld_fastmcp_state")
_NO_STATE = object()


def world_state() -> Any:
    """The calling world's state of this service, inside a tool of a server mounted with a hook."""
    found = _CURRENT.get(_NO_STATE)
    if found is _NO_STATE:
        raise LookupError(
            "world_state() is only available inside a tool called through a CompoWorld world, "
            "of a FastMCP server mounted with a state hook (fastmcp_entry(..., state=...))"
        )
    return found


@contextlib.contextmanager
def bound_state(state: Any) -> Iterator[Any]:
    """Make ``state`` what :func:`world_state` answers in this context (how the hub calls a tool;
    also for a user's own unit tests of a tool, without a hub)."""
    token = _CURRENT.set(state)
    try:
        yield state
    finally:
        _CURRENT.reset(token)


def json_copy(value: Any, what: str) -> Any:
    """A private JSON copy of ``value``; a ``TypeError`` naming ``what`` when it is not JSON."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} is not JSON: {exc}") from None


class HookState(ServiceState):
    """A hook's state inside a world slot: dumps as the hook's snapshot, so worlds hash and diff it."""

    _hook: Any = PrivateAttr(default=None)
    _label: str = PrivateAttr(default="")
    _value: Any = PrivateAttr(default=None)

    @classmethod
    def holding(cls, hook: StateHook, label: str, value: Any) -> HookState:
        state = cls()
        state._hook, state._label, state._value = hook, label, value
        return state

    @property
    def value(self) -> Any:
        return self._value

    @model_serializer(mode="plain")
    def dump(self) -> dict[str, Any]:
        return self.snapshot_json()

    def snapshot_json(self) -> dict[str, Any]:
        """The hook's snapshot of the state, as a private copy: the world caches snapshots and
        diffs them after later calls have changed the live state in place."""
        data = json_copy(self._hook.snapshot(self._value), f"the snapshot of {self._label}")
        if not isinstance(data, dict):
            raise TypeError(f"the snapshot of {self._label} is a {type(data).__name__}, not a JSON object")
        return data


def _no_seed(*_: Any) -> HookState:
    raise AssertionError("seed_state is overridden")  # never called: HookService seeds from its hook


class HookService(Service[HookState]):
    """The world-state side of a FastMCP server with a hook: seeds, restores and copies its state."""

    def __init__(self, name: str, hook: StateHook, category: str, description: str) -> None:
        super().__init__(
            name,
            version=1,
            category=category,
            description=description,
            state=HookState,
            seed=_no_seed,
            source="external",
        )
        self.hook = hook
        self.label = f"the state hook of FastMCP service {name!r}"
        try:
            self._seeded = len(inspect.signature(hook.create).parameters) == 1
        except (TypeError, ValueError):  # a builtin without a signature takes no seed
            self._seeded = False

    def seed_state(self, seed: int) -> HookState:
        created = self.hook.create(seed) if self._seeded else self.hook.create()
        return HookState.holding(self.hook, self.label, created)

    def empty_state(self) -> HookState:
        return self.seed_state(0)

    def restore(self, data: dict[str, Any]) -> HookState:
        private = json_copy(data, f"a snapshot for {self.label}")
        return HookState.holding(self.hook, self.label, self.hook.restore(private))

    def check(self) -> None:
        """Fail at mount time, not mid-episode, when the hook cannot round-trip its state."""
        first = self.seed_state(0).snapshot_json()
        again = self.restore(first).snapshot_json()
        if again != first:
            raise ValueError(f"{self.label} does not round-trip: restore(snapshot) gives {again!r}, not {first!r}")


class FastMCPBackend:
    """Runs one mounted FastMCP server's tools for the worlds (a :class:`hub.registry.ToolBackend`)."""

    def __init__(self, name: str, server: FastMCP[Any], stateful: bool, timeout_s: float) -> None:
        self.name = name
        self.server = server
        self.stateful = stateful
        self.timeout_s = timeout_s
        self.loop = background_loop()
        self.kinds: dict[str, str] = {}

    def run(self, coro: Any, timeout: float) -> Any:
        """Run ``coro`` on the background loop and wait for it (``TimeoutError`` after ``timeout``)."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError from None

    async def _call(self, tool: str, arguments: dict[str, Any], state: Any) -> ToolResult:
        with bound_state(state):  # this task's own context: other worlds' calls never see it
            return await self.server.call_tool(tool, arguments)

    def call(self, world: World[Any], tool: str, arguments: dict[str, Any]) -> Envelope:
        """Call ``tool`` with the world's state (on a copy for a write, dropped if it fails)."""
        arguments = {} if arguments is None else arguments
        problem = argument_problem(arguments)
        if problem is not None:
            return error(400, f"invalid arguments for {qualify(self.name, tool)!r}: {problem}")
        if not self.stateful:
            return self._invoke(tool, arguments, None)
        slot = world.slot(self.name)
        # A write runs in place (on this world's own copy) and is undone from the snapshot before it,
        # which the world keeps cached (the Recorder takes it too), so a write that succeeds pays no copy.
        before = slot.snapshot() if self.kinds.get(tool) == "write" else None
        state = slot.write_state()
        assert isinstance(state, HookState)
        envelope = self._invoke(tool, arguments, state.value)
        if before is not None and not envelope.get("success"):
            world.rollback(self.name, ServiceSlot(slot.service, None, before, owned=True))
        return envelope

    def _invoke(self, tool: str, arguments: dict[str, Any], state: Any) -> Envelope:
        qualified = qualify(self.name, tool)
        try:
            if asyncio.get_running_loop() is self.loop:  # waiting on our own loop would never end
                return error(500, f"{qualified!r} was called from the hub's background loop itself")
        except RuntimeError:
            pass  # no loop in this thread: the usual case
        try:
            result = self.run(self._call(tool, dict(arguments), state), self.timeout_s)
        except TimeoutError:
            return error(504, f"{qualified!r} did not answer within {self.timeout_s:g}s; retry the call")
        except ValidationError as exc:
            return error(400, f"invalid arguments for {qualified!r}: {validation_problem(exc)}")
        except NotFoundError:
            return error(404, f"unknown tool {qualified!r}: the FastMCP server no longer has {tool!r}")
        except ToolError as exc:
            if exc.__cause__ is None:  # raised by the tool itself: its message is for the agent
                return error(400, clean(str(exc)) or f"{qualified!r} refused the call")
            return error(500, f"{qualified!r} failed: {describe(exc.__cause__)}")
        except Exception as exc:
            return error(500, f"{qualified!r} failed: {describe(exc)}")
        return result_envelope(result)


_LIVE: dict[int, asyncio.Task[None]] = {}
_LIVE_LOCK = threading.Lock()


async def _hold(server: FastMCP[Any], ready: asyncio.Future[None]) -> None:
    # An in-memory client, held open for the life of the process, is what runs the server's
    # lifespan (FastMCP counts its users, so a server mounted in many hubs starts it once).
    try:
        async with Client(server):
            ready.set_result(None)
            await asyncio.Event().wait()
    except BaseException as exc:
        if not ready.done():
            ready.set_exception(exc)
        raise


def start_lifespan(backend: FastMCPBackend) -> None:
    """Enter the server's lifespan, once per process: its tools see ``ctx.lifespan_context``."""
    server = backend.server

    async def start() -> None:
        ready = asyncio.get_running_loop().create_future()
        _LIVE[id(server)] = asyncio.ensure_future(_hold(server, ready))  # the task is kept alive here
        await ready

    with _LIVE_LOCK:
        if id(server) in _LIVE:
            return
        try:
            backend.run(start(), backend.timeout_s)
        except Exception as exc:
            _LIVE.pop(id(server), None)
            raise ValueError(f"FastMCP server {server.name!r} did not start: {describe(exc)}") from None


def describe(exc: BaseException) -> str:
    text = clean(str(exc))
    return f"{type(exc).__name__}: {text}"[:500] if text else type(exc).__name__


def validation_problem(exc: ValidationError) -> str:
    """The arguments FastMCP refused, by name (``argument 'x': Missing required argument``)."""
    cause = exc.__cause__
    if not isinstance(cause, PydanticValidationError):
        return clean(str(exc))[:500]
    parts = []
    for item in cause.errors()[:5]:
        where = ".".join(str(part) for part in item.get("loc", ())) or "arguments"
        parts.append(f"argument {where!r}: {item.get('msg', 'invalid')}")
    return "; ".join(parts)


def result_envelope(result: ToolResult) -> Envelope:
    """A FastMCP tool result as a valid envelope (an envelope the tool returned is normalised)."""
    structured = result.structured_content
    wrapped = isinstance(result.meta, dict) and (result.meta.get("fastmcp") or {}).get("wrap_result") is True
    if wrapped and isinstance(structured, dict) and not result.is_error:
        # FastMCP wraps a result that is not an object as {"result": value}; the agent gets the value.
        value = structured.get("result")
        if isinstance(value, dict) and isinstance(value.get("success"), bool):
            return normalise(value)
        return ok(clean(value))
    if structured is None and not result.content and not result.is_error:
        return ok(None)  # a tool that returned None
    return to_envelope(
        types.CallToolResult(
            content=list(result.content or []),
            structured_content=structured if isinstance(structured, dict) else None,
            is_error=result.is_error,
        )
    )


# -- mounting ----------------------------------------------------------------------------------


def load_object(path: str, what: str) -> Any:
    """The object at ``module:attribute`` (the attribute may be dotted); errors name the path."""
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"{what} {path!r} must be an import path 'module:attribute'")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"{what} {path!r}: cannot import {module_name!r} ({exc})") from None
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ValueError(f"{what} {path!r}: {module_name!r} has no attribute {attribute!r}") from None
    return found


def fastmcp_entry(
    server: FastMCP[Any] | str,
    name: str | None = None,
    state: StateHook | str | None = None,
    *,
    category: str = "external",
    description: str = "",
    timeout_s: float = 10.0,
) -> ServiceEntry:
    """A hub service over a FastMCP server (the object, or ``module:attribute``), run in process.

    ``name`` defaults to the server's name; ``state`` is the per-world state hook (an object or
    ``module:attribute``; see the module doc). Pass the entry to ``Hub.native(extra=[...])``.
    """
    origin = f"fastmcp:{server}" if isinstance(server, str) else f"fastmcp:{type(server).__module__}"
    if isinstance(server, str):
        server = load_object(server, "FastMCP server")
    if not isinstance(server, FastMCP):
        raise TypeError(f"{origin}: expected a fastmcp.FastMCP server, got {type(server).__name__}")
    name = name or server.name
    if not SERVICE_NAME_RE.fullmatch(name) or "__" in name:
        raise ValueError(f"service name {name!r} must be lower_snake_case without '__' (pass name=...)")
    hook = load_object(state, "state hook") if isinstance(state, str) else state
    if hook is not None and not isinstance(hook, StateHook):
        raise TypeError(f"state hook of {name!r} needs create(), snapshot(state) and restore(data) methods")
    text = description or server.instructions or f"FastMCP server {server.name!r}, in process."
    backend = FastMCPBackend(name, server, hook is not None, timeout_s)
    start_lifespan(backend)
    native = None
    if hook is not None:
        native = HookService(name, hook, category, text)
        native.check()
    tools = []
    for tool in backend.run(server.list_tools(), timeout_s):
        described = tool.to_mcp_tool()
        read_only = bool(described.annotations and described.annotations.read_only_hint)
        qualified = qualify(name, described.name)
        backend.kinds[described.name] = "read" if read_only else "write"
        tools.append(
            ToolEntry(
                qualified=qualified,
                service=name,
                name=described.name,
                kind="read" if read_only else "write",
                description=described.description or "",
                input_schema=described.input_schema,
                output_schema=None,  # results are envelopes, not the tool's own output
                external=described.model_copy(update={"name": qualified, "output_schema": None}),
            )
        )
    return ServiceEntry(
        name=name,
        source="external",
        category=category,
        description=text,
        version="fastmcp",
        tools=tuple(tools),
        origin=origin,
        native=native,
        backend=backend,
    )


def config_entry(config: ExternalConfig) -> ServiceEntry:
    """The service of one ``[[external]]`` config: in process for ``fastmcp``, else a connection."""
    if config.fastmcp:
        return fastmcp_entry(
            config.fastmcp,
            name=config.name,
            state=config.state,
            category=config.category,
            description=config.description,
            timeout_s=config.timeout_s,
        )
    return external_entry(config)
