"""A scripted policy for framework tests: a real HTTP server speaking OpenAI chat completions whose replies
replay each task's oracle plan as gateway ``call_tool`` calls, then answer with the expected report.

It finds the task from the instruction in the request, and how far the rollout is (and the envelopes its
``$ref`` arguments point into) from the tool results in the request, so concurrent rollouts of any tasks can
share it. ``steps`` caps the plan steps replayed (a partial rollout); the report is given only after a full
replay. Run it as ``python -m tests.integrations.oracle_model TASKS.jsonl PORT [STEPS]`` or in process.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from taskgen.task import Task, read_jsonl, resolve


def _envelope(content: Any) -> dict[str, Any]:
    """A tool result's envelope, from the text the framework put in the tool message."""
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    value = json.loads(content) if isinstance(content, str) else content
    return value if isinstance(value, dict) else {}


def next_message(tasks: list[Task], messages: list[dict[str, Any]], steps: int | None = None) -> dict[str, Any]:
    """The oracle's next assistant message for a conversation."""
    user = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
    task = next((t for t in tasks if t.instruction in user), None)
    if task is None:
        return {"role": "assistant", "content": "I do not know this task."}
    results: list[Any] = [_envelope(m.get("content")) for m in messages if m.get("role") == "tool"]
    done = len(results)
    limit = len(task.plan) if steps is None else min(steps, len(task.plan))
    if done >= limit:
        report = task.expected_report if done >= len(task.plan) else {}
        return {"role": "assistant", "content": f"Done.\n{json.dumps(report)}"}
    step = task.plan[done]
    arguments = {"tool_name": step.tool, "arguments": resolve(step.arguments, results)}
    call = {
        "id": f"call_{done}",
        "type": "function",
        "function": {"name": "call_tool", "arguments": json.dumps(arguments)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


USAGE = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}


def _finish(message: dict[str, Any]) -> str:
    return "tool_calls" if message.get("tool_calls") else "stop"


class OracleModel:
    """The server; ``url`` ends in ``/v1``. ``requests`` counts the completions served."""

    def __init__(self, tasks: list[Task], steps: int | None = None, port: int = 0) -> None:
        self.requests = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests += 1
                message = next_message(tasks, body.get("messages", []), steps)
                if body.get("stream"):
                    self._stream(message, body.get("model", "oracle"))
                    return
                payload = {
                    "id": f"chatcmpl-{owner.requests}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", "oracle"),
                    "choices": [{"index": 0, "finish_reason": _finish(message), "message": message}],
                    "usage": USAGE,
                }
                self._send("application/json", json.dumps(payload).encode())

            def _stream(self, message: dict[str, Any], model: str) -> None:
                """The reply as server-sent chunks: the whole delta, then the finish reason, then [DONE]."""
                delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
                if message.get("tool_calls"):
                    delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
                base = {
                    "id": f"chatcmpl-{owner.requests}",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                }
                chunks = [
                    base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                    base | {"choices": [{"index": 0, "delta": {}, "finish_reason": _finish(message)}]},
                    base | {"choices": [], "usage": USAGE},
                ]
                events = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                self._send("text/event-stream", events.encode())

            def _send(self, content_type: str, data: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


if __name__ == "__main__":
    model = OracleModel(
        list(read_jsonl(sys.argv[1])), int(sys.argv[3]) if len(sys.argv) > 3 else None, int(sys.argv[2])
    )
    model.thread.join()
