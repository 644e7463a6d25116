"""The ``llm`` backend: any OpenAI-compatible chat-completions endpoint simulates the tools.

The prompt carries the tool's spec, the arguments, the world's date and the records of the
simulated state the call is about; the reply is constrained to the tool's output schema
(``response_format`` with a JSON schema — endpoints that reject it are asked again with plain
JSON mode). Every reply is parsed and validated; an invalid one is sent back with the
validation errors for repair, up to ``attempts`` times, after which the call ends in a clear
error envelope (502). An unreachable endpoint (refused connection, timeout, HTTP 5xx) ends in a
503 envelope; an endpoint that answers HTTP 200 with something that is not a chat completion (a
``text/plain`` or HTML body, JSON cut short, a body that ends before its ``Content-Length``, no
choices) ends in a 502 envelope at once — a repair turn cannot fix the transport. Replies are
cached by (model, service, tool, arguments, state hash), in memory and optionally in a JSON file,
so a rollout replays identically and costs nothing the second time.

Timeout: each request to the endpoint may take ``timeout_s`` seconds (constructor argument, and
``timeout_s`` of :func:`worldmodel.catalog.make_backend`); when it is not given, the environment
variable ``COMPOWORLD_WORLDMODEL_TIMEOUT`` (seconds) sets it, else :data:`DEFAULT_TIMEOUT_S`
(60 s). A call can make up to ``attempts`` requests, so it may take ``attempts × timeout_s``;
keep that under the serving deadline (``COMPOWORLD_CALL_TIMEOUT``) when the tools are served.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import jsonschema
import openai

from servers.framework import BadGateway, Unavailable
from servers.state import canonical_json
from worldmodel.engine import GenerateRequest, schema_errors

DEFAULT_TIMEOUT_S = 60.0
"""Seconds one request to the model endpoint may take when neither the caller nor the environment says."""
TIMEOUT_ENV = "COMPOWORLD_WORLDMODEL_TIMEOUT"


def resolve_timeout(timeout_s: float | None = None) -> float:
    """``timeout_s``, else ``$COMPOWORLD_WORLDMODEL_TIMEOUT``, else 60 s; a positive number of seconds."""
    source = "timeout_s"
    if timeout_s is None:
        raw = os.environ.get(TIMEOUT_ENV, "").strip()
        if not raw:
            return DEFAULT_TIMEOUT_S
        source = TIMEOUT_ENV
        try:
            timeout_s = float(raw)
        except ValueError:
            raise ValueError(f"{TIMEOUT_ENV} must be a number of seconds, got {raw!r}") from None
    if not (isinstance(timeout_s, int | float) and 0 < timeout_s < float("inf")):
        raise ValueError(f"{source} must be a positive number of seconds, got {timeout_s!r}")
    return float(timeout_s)


SYSTEM_PROMPT = (
    "You simulate one tool of a software service for an agent-training environment. "
    "Given the tool's specification, its arguments and the relevant records of the service's "
    "state, reply with ONLY the JSON object the tool would return: it must validate against the "
    "output schema, be plausible and internally consistent, and agree with the given records. "
    "No prose, no code fences."
)


class LLMBackend:
    """Simulated tool outputs from a chat-completions model, validated, repaired and cached."""

    name = "llm"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        attempts: int = 3,
        timeout_s: float | None = None,
        cache_path: str | Path | None = None,
        json_schema_mode: bool = True,
    ) -> None:
        self.model = model
        self.attempts = attempts
        self.timeout_s = resolve_timeout(timeout_s)
        # Which status the endpoint answered the current thread's request with, set as soon as
        # the headers arrive: a connection error after that is a reply cut short (502), not an
        # unreachable endpoint (503).
        self._answered = threading.local()
        self.client = openai.OpenAI(
            base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
            timeout=self.timeout_s,
            max_retries=0,  # retries are ours: a repair turn, not a blind resend
            http_client=openai.DefaultHttpxClient(event_hooks={"response": [self._on_response]}),
        )
        self.json_schema_mode = json_schema_mode
        self.cache_path = Path(cache_path) if cache_path else None
        self.cache: dict[str, dict[str, Any]] = {}
        if self.cache_path and self.cache_path.exists():
            self.cache = json.loads(self.cache_path.read_text())
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    def cache_key(self, request: GenerateRequest) -> str:
        material = canonical_json(
            [self.model, request.spec.name, request.tool.name, request.arguments, request.state_hash()]
        )
        return hashlib.sha256(material.encode()).hexdigest()

    def generate(self, request: GenerateRequest) -> dict[str, Any]:
        key = self.cache_key(request)
        with self._lock:
            cached = self.cache.get(key)
        if cached is not None:
            self.hits += 1
            return dict(cached)
        self.misses += 1
        output = self._ask(request)
        with self._lock:
            self.cache[key] = output
            if self.cache_path:
                self.cache_path.write_text(json.dumps(self.cache, sort_keys=True))
        return dict(output)

    def _messages(self, request: GenerateRequest) -> list[dict[str, Any]]:
        tool = request.tool
        payload = {
            "service": {"name": request.spec.name, "description": request.spec.description},
            "tool": {
                "name": tool.name,
                "description": tool.description,
                "kind": tool.kind,
                "input_schema": tool.input_schema,
                "output_schema": tool.output_schema,
            },
            "arguments": request.arguments,
            "now": request.world.now.isoformat(),
            "records": request.records[:20],
        }
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
        ]

    def _complete(self, messages: list[dict[str, Any]], schema: dict[str, Any]) -> str:
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0}
        if self.json_schema_mode:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "tool_output", "schema": schema, "strict": False},
            }
        else:
            kwargs["response_format"] = {"type": "json_object"}
        self._answered.status = None
        try:
            response = self.client.chat.completions.create(**kwargs)
        except openai.BadRequestError as exc:
            if self.json_schema_mode and "response_format" in str(exc):
                self.json_schema_mode = False  # the endpoint does not do JSON schemas: plain JSON mode
                return self._complete(messages, schema)
            raise BadGateway(f"model endpoint rejected the request: {exc}") from None
        except openai.APITimeoutError:
            raise Unavailable(
                f"model endpoint did not answer within {self.timeout_s:g}s (APITimeoutError); "
                "the simulated tool cannot answer now"
            ) from None
        except openai.APIConnectionError as exc:
            status = getattr(self._answered, "status", None)
            if status is not None:
                raise BadGateway(
                    f"model endpoint's HTTP {status} reply was cut short ({_cause(exc)}); "
                    "the simulated tool got no answer"
                ) from None
            raise Unavailable(
                f"model endpoint unreachable ({type(exc).__name__}); the simulated tool cannot answer now"
            ) from None
        except openai.APIStatusError as exc:
            raise Unavailable(f"model endpoint answered HTTP {exc.status_code}") from None
        except ValueError as exc:  # a JSON body cut short or otherwise unparsable (JSONDecodeError)
            raise BadGateway(f"model endpoint answered with a body that is not valid JSON: {exc}") from None
        return _content(response)

    def _on_response(self, response: Any) -> None:
        self._answered.status = response.status_code

    def _ask(self, request: GenerateRequest) -> dict[str, Any]:
        schema = relaxed_schema(request)
        validator = jsonschema.Draft202012Validator(schema)
        messages = self._messages(request)
        problems: list[str] = []
        for _ in range(self.attempts):
            text = self._complete(messages, schema)
            try:
                value = json.loads(_strip_fences(text))
            except json.JSONDecodeError as exc:
                problems = [f"not JSON ({exc.msg} at position {exc.pos})"]
            else:
                problems = ["the reply is not a JSON object"] if not isinstance(value, dict) else []
                problems = problems or schema_errors(validator, value)
                if not problems:
                    return value
            messages = [
                *messages,
                {"role": "assistant", "content": text},
                {
                    "role": "user",
                    "content": "That reply is invalid: "
                    + "; ".join(problems)[:2000]
                    + ". Reply again with only the corrected JSON object.",
                },
            ]
        raise BadGateway(
            f"simulated tool {request.tool.name!r} got no valid output from model {self.model!r} after "
            f"{self.attempts} attempts; last problems: {'; '.join(problems)[:500]}"
        )


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__ or exc
    return f"{type(cause).__name__}: {cause}"[:300]


def _content(response: Any) -> str:
    """The first choice's message text; anything that is not a chat completion is a 502."""
    if isinstance(response, str | bytes):
        snippet = response[:200] if isinstance(response, str) else response[:200].decode("utf-8", "replace")
        raise BadGateway(f"model endpoint answered with a non-JSON body, not a chat completion: {snippet!r}")
    try:
        choices = response.choices
        message = choices[0].message if choices else None
        content = message.content if message is not None else None
    except (AttributeError, IndexError, KeyError, TypeError):
        raise BadGateway(
            f"model endpoint answered with something that is not a chat completion: {str(response)[:200]!r}"
        ) from None
    if not choices:
        raise BadGateway("model endpoint answered a chat completion with no choices")
    if message is None:
        raise BadGateway("model endpoint answered a chat completion whose first choice has no message")
    if content is None:
        return ""  # e.g. a refusal or a tool call: an invalid reply the repair turn explains
    if not isinstance(content, str):
        raise BadGateway(f"model endpoint answered a message whose content is not text: {str(content)[:200]!r}")
    return content


def _strip_fences(text: str) -> str:
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[-1].rsplit("```", 1)[0]
    return text


def relaxed_schema(request: GenerateRequest) -> dict[str, Any]:
    """The output schema minus the fields the engine fills itself (from arguments or state).

    The model is not asked to repeat what is already fixed: a record's id, the items of a
    listing, fields echoed from the arguments or read from the stored record.
    """
    tool = request.tool
    schema = dict(tool.output_schema)
    fixed = set(request.arguments) & set(schema.get("properties", {}))
    if tool.effect.op == "list" and tool.effect.items_field:
        fixed.add(tool.effect.items_field)
    if tool.effect.op in ("get", "update", "delete") and request.records:
        fixed |= set(request.records[0])
    if tool.effect.op == "create":
        fixed.add(request.spec.collections[tool.effect.collection or ""].id_field)
    schema["properties"] = {k: v for k, v in schema.get("properties", {}).items() if k not in fixed}
    schema["required"] = [k for k in schema.get("required", []) if k not in fixed]
    return schema
