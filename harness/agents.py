"""Agents behind one small interface: ``run(task, env, rng) -> AgentResult``.

- ``oracle`` executes the task's plan (on the gateway it discovers services and tools first, as
  the published trajectories do), then reports the expected values;
- ``null`` does nothing (every rubric scores it 0);
- ``random`` is a seeded baseline that calls plausible tools with plausible arguments;
- ``openai`` is an agent loop for any OpenAI-compatible chat-completions endpoint.

Every agent leaves OpenAI-format chat messages behind, so any trajectory can become SFT data.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.env import ToolEnv
from harness.trajectory import FinishReason
from taskgen.task import Task, resolve

HOUSE_RULES = (
    "Change nothing the request does not ask for: every record you create, edit, delete, cancel or close "
    "beyond what it asks for counts as damage, and so does repeating an action."
)
"""The rule every rubric's collateral-damage criterion checks, stated to every agent."""

SYSTEM_PROMPT = (
    "You are an assistant that completes tasks for a user by calling tools of their business applications.\n"
    'Every tool answers with an envelope: {"success": true, "data": ...} on success, or {"success": false, '
    '"error": {"code": ..., "message": ...}} on failure (400 bad arguments, 403 not allowed, 404 unknown id, '
    "409 conflict, 429/503 try again). Read before you write: look records up instead of guessing ids or "
    "values. " + HOUSE_RULES + "\n{surface_help}\n"
    "When the task is done, reply with a short summary and end your reply with one JSON object on its own "
    "line holding the values the user asked you to report, under the keys the user names, one value each, "
    'for example {"invoice_total": 1250.0}. Use {} when nothing is to be reported.'
)
GATEWAY_HELP = (
    "The tools are behind a gateway: call list_services to see the applications, list_tools(service) to "
    "see an application's tools, describe_tool(tool) for a tool's full input schema, then "
    "call_tool(tool_name, arguments) to use it. Tool names look like '<service>__<tool>'."
)
DIRECT_HELP = "Tool names look like '<service>__<tool>'."


def system_prompt(surface: str) -> str:
    return SYSTEM_PROMPT.replace("{surface_help}", GATEWAY_HELP if surface == "gateway" else DIRECT_HELP)


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

    def __init__(self, task: Task, surface: str) -> None:
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(surface)},
            {"role": "user", "content": task.instruction},
        ]
        self.count = 0

    def call(self, env: ToolEnv, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.count += 1
        call_id = f"call_{self.count}"
        self.messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
                ],
            }
        )
        envelope = env.call(name, arguments)
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(envelope)})
        return envelope

    def finish(self, report: dict[str, Any], summary: str = "Done.") -> None:
        self.messages.append({"role": "assistant", "content": f"{summary}\n{json.dumps(report)}"})


class OracleAgent:
    name = "oracle"
    model: str | None = None

    def run(self, task: Task, env: ToolEnv, rng: random.Random) -> AgentResult:
        transcript = _Transcript(task, env.surface)
        envelopes: list[dict[str, Any]] = []
        listed: set[str] = set()
        described: set[str] = set()
        if env.surface == "gateway":
            transcript.call(env, "list_services", {})
        for step in task.plan:
            arguments = resolve(step.arguments, envelopes)
            if env.surface == "gateway":
                service = step.tool.split("__", 1)[0]
                if service not in listed:
                    transcript.call(env, "list_tools", {"service": service})
                    listed.add(service)
                if step.tool not in described:
                    transcript.call(env, "describe_tool", {"tool": step.tool})
                    described.add(step.tool)
                envelope = transcript.call(env, "call_tool", {"tool_name": step.tool, "arguments": arguments})
            else:
                envelope = transcript.call(env, step.tool, arguments)
            envelopes.append(envelope)
        transcript.finish(dict(task.expected_report), "All steps are done.")
        return AgentResult(transcript.messages, dict(task.expected_report))


class NullAgent:
    name = "null"
    model: str | None = None

    def run(self, task: Task, env: ToolEnv, rng: random.Random) -> AgentResult:
        transcript = _Transcript(task, env.surface)
        transcript.finish({}, "I did nothing.")
        return AgentResult(transcript.messages, {}, "no_action")


class RandomAgent:
    """A seeded baseline: a few calls to tools of the task's services with plausible arguments."""

    name = "random"
    model: str | None = None

    def __init__(self, calls: tuple[int, int] = (2, 6)) -> None:
        self.calls = calls

    def run(self, task: Task, env: ToolEnv, rng: random.Random) -> AgentResult:
        from servers.population import Population
        from servers.types import semantic_of
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
        transcript = _Transcript(task, env.surface)
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
