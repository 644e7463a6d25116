"""Agents behind one small interface: ``run(task, env, rng) -> AgentResult``.

- ``oracle`` executes the task's plan (on the gateway it discovers services and tools first, as
  the published trajectories do), then reports the expected values;
- ``oracle-recovery`` is the oracle that first gets one step wrong — a required argument left out
  (400) or an id mistyped (404) —, reads the error envelope and makes the right call: SFT data
  with recovered errors, as real trajectories have them, that still scores 1.0 (a refused call
  changes nothing);
- ``null`` does nothing (every rubric scores it 0);
- ``random`` is a seeded baseline that calls plausible tools with plausible arguments;
- ``openai`` is an agent loop for any OpenAI-compatible chat-completions endpoint.

Every agent leaves OpenAI-format chat messages behind, so any trajectory can become SFT data.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.env import ToolEnv
from harness.trajectory import FinishReason
from hub.registry import ToolEntry
from hub.world import World
from servers.framework import Envelope
from servers.state import WORLD_EPOCH
from servers.types import semantic_of
from taskgen.task import Task, resolve

HOUSE_RULES = (
    "Change nothing the request does not ask for: every record you create, edit, delete, cancel or close "
    "beyond what it asks for counts as damage, and so does repeating an action."
)
"""The rule every rubric's collateral-damage criterion checks, stated to every agent."""

SYSTEM_PROMPT = (
    "Today's date is {today}.\n\n"
    "You are an assistant that completes tasks for a user by calling tools of their business applications.\n"
    'Every tool answers with an envelope: {"success": true, "data": ...} on success, or {"success": false, '
    '"error": {"code": ..., "message": ...}} on failure (400 bad arguments, 403 not allowed, 404 unknown id, '
    "409 conflict, 429/503 try again).\n\n"
    "Rules:\n"
    "- Read before you write: look records up instead of guessing ids or values.\n"
    "- Correct a 400 error by supplying the missing or wrong argument on the next call; correct a 404 error "
    "by checking where you took the id or name from.\n"
    "- " + HOUSE_RULES + "\n"
    "- When the task is done, reply with a short summary and end your reply with one JSON object on its own "
    "line holding the values the user asked you to report, under the keys the user names, one value each, "
    'for example {"invoice_total": 1250.0}. Use {} when nothing is to be reported.\n\n'
    "{surface_help}"
)
"""Opens like the published CompoWorld trajectories' prompt ("Today's date is …"), then the rules."""
GATEWAY_HELP = (
    "The tools are behind a gateway: call list_services to see the applications, list_tools(service) to "
    "see an application's tools, describe_tool(tool) for a tool's full input schema, then "
    "call_tool(tool_name, arguments) to use it. Tool names look like '<service>__<tool>'."
)
DIRECT_HELP = "Tool names look like '<service>__<tool>'."


def system_prompt(surface: str, today: str | None = None) -> str:
    """The system prompt for ``surface``; ``today`` is the world's date (ISO), by default the epoch every
    seeded world starts at."""
    return SYSTEM_PROMPT.replace("{today}", today or WORLD_EPOCH.date().isoformat()).replace(
        "{surface_help}", GATEWAY_HELP if surface == "gateway" else DIRECT_HELP
    )


def world_today(world: World, services: Iterable[str] = ()) -> str:
    """The world's date (ISO) on its clock, read off the first of ``services`` (default: any mounted)
    that keeps state; call it before the agent acts (writes move the clock on). Pass the services the
    task uses: their states are read anyway, where a distractor's would be built only for this."""
    stateful = world.stateful_services
    for name in [*[s for s in services if s in stateful], *sorted(stateful)]:
        return world.slot(name).read_state().clock.date().isoformat()
    return WORLD_EPOCH.date().isoformat()


@dataclass
class AgentResult:
    messages: list[dict[str, Any]] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    finish_reason: FinishReason = "completed"
    error: str | None = None


class Agent(Protocol):
    name: str
    model: str | None

    def run(self, task: Task, env: ToolEnv, rng: random.Random) -> AgentResult: ...


class _Transcript:
    """Builds OpenAI-format messages while an agent calls tools."""

    def __init__(self, task: Task, env: ToolEnv) -> None:
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(env.surface, world_today(env.world, task.services))},
            {"role": "user", "content": task.instruction},
        ]
        self.count = 0

    def call(self, env: ToolEnv, name: str, arguments: dict[str, Any], reasoning: str | None = None) -> Envelope:
        """Call a tool as one assistant turn; ``reasoning`` is what the agent thought before it."""
        self.count += 1
        call_id = f"call_{self.count}"
        turn: dict[str, Any] = {"role": "assistant", "content": ""}
        if reasoning:
            turn["reasoning_content"] = reasoning
        turn["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ]
        self.messages.append(turn)
        envelope = env.call(name, arguments)
        self.messages.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": json.dumps(envelope)})
        return envelope

    def finish(self, report: dict[str, Any], summary: str = "Done.") -> None:
        self.messages.append({"role": "assistant", "content": f"{summary}\n{json.dumps(report)}"})


class OracleAgent:
    """Executes the task's plan. With ``recovery`` it first gets one step of the plan wrong (a step drawn
    from the episode's rng, among those :func:`mistakes` can spoil), reads the error and makes the right call.
    """

    model: str | None = None

    def __init__(self, recovery: bool = False) -> None:
        self.recovery = recovery
        self.name = "oracle-recovery" if recovery else "oracle"

    def run(self, task: Task, env: ToolEnv, rng: random.Random) -> AgentResult:
        transcript = _Transcript(task, env)
        envelopes: list[Envelope] = []
        listed: set[str] = set()
        described: set[str] = set()
        registry = env.world.hub.registry
        spoiled = _spoiled_step(task, registry.tools, rng) if self.recovery else None
        if env.surface == "gateway":
            transcript.call(env, "list_services", {})
        for index, step in enumerate(task.plan):
            arguments = resolve(step.arguments, envelopes)
            if env.surface == "gateway":
                service = step.tool.split("__", 1)[0]
                if service not in listed:
                    transcript.call(env, "list_tools", {"service": service})
                    listed.add(service)
                if step.tool not in described:
                    transcript.call(env, "describe_tool", {"tool": step.tool})
                    described.add(step.tool)
            reasoning = None
            found = mistakes(registry.tools[step.tool], arguments) if index == spoiled else []
            if found:
                kind = rng.choice(sorted({m.code for m in found}))
                mistake = rng.choice([m for m in found if m.code == kind])
                failed = _call_plan_tool(transcript, env, step.tool, mistake.arguments)
                body = failed.get("error")
                error = body if isinstance(body, dict) else {}
                reasoning = f"The call failed with {error.get('code')} ({error.get('message')}). {mistake.fix}"
            envelopes.append(_call_plan_tool(transcript, env, step.tool, arguments, reasoning))
        transcript.finish(dict(task.expected_report), "All steps are done.")
        return AgentResult(transcript.messages, dict(task.expected_report))


def _call_plan_tool(
    transcript: _Transcript, env: ToolEnv, tool: str, arguments: dict[str, Any], reasoning: str | None = None
) -> Envelope:
    if env.surface == "gateway":
        return transcript.call(env, "call_tool", {"tool_name": tool, "arguments": arguments}, reasoning)
    return transcript.call(env, tool, arguments, reasoning)


@dataclass(frozen=True)
class Mistake:
    """A wrong version of a correct call, which the service refuses without changing anything."""

    arguments: dict[str, Any]
    code: int  # the error it draws: 400 or 404
    fix: str  # what the agent, having read the error, does about it


PADDED_ID = re.compile(r"(?P<prefix>[A-Za-z][\w-]*_)0+(?P<number>[1-9]\d*)")
"""Ids services give (``new_id``: ``env_0004``); one written without its zero padding names no record."""


def mistakes(entry: ToolEntry, arguments: dict[str, Any]) -> list[Mistake]:
    """The realistic mistakes one can make in calling ``entry`` with ``arguments``: leaving out a required
    argument (400, refused before the tool runs) or writing an id without its zero padding (404: no record
    has that id, and tools check everything before they change anything)."""
    found = []
    for name in entry.input_schema.get("required", []):
        if name in arguments:
            wrong = {k: v for k, v in arguments.items() if k != name}
            found.append(Mistake(wrong, 400, f"I left out {name!r}; calling again with it."))
    properties = entry.input_schema.get("properties", {})
    for name, value in arguments.items():
        semantic = semantic_of(properties.get(name, {})) or ""
        if not (name == "id" or name.endswith("_id") or semantic.endswith("_id")) or not isinstance(value, str):
            continue
        match = PADDED_ID.fullmatch(value)
        if match:
            wrong_id = match["prefix"] + match["number"]
            fix = f"{wrong_id!r} is not the id: the record's id is {value!r}; calling again with it."
            found.append(Mistake({**arguments, name: wrong_id}, 404, fix))
    return found


def _spoiled_step(task: Task, tools: Mapping[str, ToolEntry], rng: random.Random) -> int | None:
    """The plan step the recovering oracle gets wrong: one whose tool has a required argument or takes an id."""
    candidates = []
    for index, step in enumerate(task.plan):
        schema = tools[step.tool].input_schema
        if any(name in step.arguments for name in schema.get("required", [])) or any(
            name == "id" or name.endswith("_id") for name in step.arguments
        ):
            candidates.append(index)
    return rng.choice(candidates) if candidates else None


class NullAgent:
    name = "null"
    model: str | None = None

    def run(self, task: Task, env: ToolEnv, rng: random.Random) -> AgentResult:
        transcript = _Transcript(task, env)
        transcript.finish({}, "I did nothing.")
        return AgentResult(transcript.messages, {}, "no_action")


class RandomAgent:
    """A seeded baseline: a few calls to tools of the task's services with plausible arguments."""

    name = "random"
    model: str | None = None

    def __init__(self, calls: tuple[int, int] = (2, 6)) -> None:
        self.calls = calls

    def run(self, task: Task, env: ToolEnv, rng: random.Random) -> AgentResult:
        # Imported here, not at module level, for start-up speed: the population (faker) and the
        # world model's synthesizer take ~0.3 s to import, and only this agent needs them.
        from servers.population import Population
        from servers.values import state_values
        from worldmodel.rules import Synthesizer

        synth = Synthesizer(Population.generate(task.seed))
        world = env.world
        values: dict[str, list[Any]] = {}
        for name in sorted(world.stateful_services):
            native = world.hub.registry.services[name].native
            for semantic, found in state_values(native, world.slot(name).read_state()).items():
                values.setdefault(semantic, []).extend(found)
        entries = [t for s in task.mounted for t in world.hub.registry.services[s].tools]
        transcript = _Transcript(task, env)
        for _ in range(rng.randint(*self.calls)):
            entry = rng.choice(entries)
            arguments = synth.record(dict(entry.input_schema), rng)
            for key, prop in entry.input_schema.get("properties", {}).items():
                kind = semantic_of(prop)
                if kind in values and rng.random() < 0.8:
                    arguments[key] = rng.choice(values[kind])
            arguments = {
                k: v for k, v in arguments.items() if k in entry.input_schema.get("required", []) or rng.random() < 0.3
            }
            if env.surface == "gateway":
                transcript.call(env, "call_tool", {"tool_name": entry.qualified, "arguments": arguments})
            else:
                transcript.call(env, entry.qualified, arguments)
        transcript.finish({}, "I tried a few things.")
        return AgentResult(transcript.messages, {})


def parse_report(text: str | None) -> dict[str, Any]:
    """The last JSON object in a final message (the report the system prompt asks for)."""
    if not text:
        return {}
    for match in reversed(list(re.finditer(r"\{.*\}", text, re.S))):
        candidate = match.group(0)
        for start in [i for i, ch in enumerate(candidate) if ch == "{"]:
            try:
                value = json.loads(candidate[start:])
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return {}
