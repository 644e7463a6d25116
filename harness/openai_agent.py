"""An agent loop for any OpenAI-compatible chat-completions endpoint (vLLM, SGLang, Ollama, hosted).

Tools are offered as functions (every task tool on the direct surface, the four meta-tools on
the gateway); tool calls — several per turn when the model makes parallel calls — are executed in
order and answered with their envelopes. The loop ends when the model replies without tool
calls (its last JSON object is the report), after ``max_turns``, or when the endpoint keeps
failing after ``retries`` attempts with exponential backoff.
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import Any

import openai

from harness.agents import AgentResult, parse_report, system_prompt, world_today
from harness.env import ToolEnv
from servers.framework import Envelope, error
from taskgen.task import Task

RETRYABLE = (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError, openai.InternalServerError)


class OpenAIAgent:
    name = "openai"
    model: str | None

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        max_turns: int = 30,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        retries: int = 3,
        backoff_s: float = 1.0,
        parallel_tool_calls: bool = True,
        timeout_s: float = 120.0,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.max_turns = max_turns
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.retries = retries
        self.backoff_s = backoff_s
        self.parallel_tool_calls = parallel_tool_calls
        self.client = openai.OpenAI(
            base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
            max_retries=0,
            timeout=timeout_s,
        )

    def _complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "tools": tools,
            "temperature": self.temperature,
        }
        if self.max_tokens:
            kwargs["max_tokens"] = self.max_tokens
        if not self.parallel_tool_calls:
            kwargs["parallel_tool_calls"] = False
        for attempt in range(self.retries + 1):
            try:
                return self.client.chat.completions.create(**kwargs)
            except RETRYABLE:
                if attempt == self.retries:
                    raise
                time.sleep(self.backoff_s * (2**attempt))
        raise AssertionError("unreachable")

    def run(self, task: Task, env: ToolEnv, rng: random.Random) -> AgentResult:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(env.surface, world_today(env.world, task.services))},
            {"role": "user", "content": task.instruction},
        ]
        tools = env.tools()
        for _ in range(self.max_turns):
            try:
                response = self._complete(messages, tools)
            except openai.OpenAIError as exc:
                return AgentResult(messages, {}, "error", f"{type(exc).__name__}: {exc}")
            if not response.choices:
                return AgentResult(messages, {}, "error", "the endpoint returned no choices")
            message = response.choices[0].message
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
            calls = message.tool_calls or []
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments or "{}"},
                    }
                    for c in calls
                ]
            messages.append(entry)
            if not calls:
                return AgentResult(messages, parse_report(message.content), "completed")
            for call in calls:
                envelope: Envelope
                try:
                    arguments = json.loads(call.function.arguments or "{}")
                except ValueError as exc:
                    envelope = error(400, f"arguments of {call.function.name!r} are not valid JSON: {exc}")
                else:
                    envelope = env.call(call.function.name, arguments)
                reply = {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "name": call.function.name,
                    "content": json.dumps(envelope),
                }
                messages.append(reply)
        return AgentResult(messages, {}, "max_turns")
