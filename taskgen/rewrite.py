"""Optional LLM rewrite of instructions into fluent prose, with the leak check run again.

Any OpenAI-compatible chat-completions endpoint, through the ``openai`` client. The model sees
only the templated instruction (which holds no carried values) and is asked to keep every quoted
name and literal exactly. A rewrite that leaks a carried value, drops a quoted literal or fails
is discarded and the templated text kept; the caller learns which happened.
"""

from __future__ import annotations

import os
import re
from typing import Literal

import openai

from taskgen.compose import leaks
from taskgen.task import Task

PROMPT = (
    "Rewrite this task instruction for an assistant as one fluent paragraph, as a busy colleague would write "
    "it. Keep every quoted value ('...') exactly as written, keep every step, constraint and the requested "
    "report, add no new facts and no numbers. Reply with the rewritten paragraph only.\n\n"
)

Outcome = Literal["rewritten", "leak", "dropped_literal", "failed"]


class Rewriter:
    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None) -> None:
        self.model = model
        self.client = openai.OpenAI(
            base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
            max_retries=1,
            timeout=60,
        )

    def rewrite(self, task: Task) -> tuple[Task, Outcome]:
        """The task with a fluent instruction, or unchanged (with the reason) when the rewrite is unsafe."""
        try:
            response = self.client.chat.completions.create(
                model=self.model,
                temperature=0,
                messages=[{"role": "user", "content": PROMPT + task.instruction}],
            )
            text = (response.choices[0].message.content or "").strip() if response.choices else ""
        except openai.OpenAIError:
            return task, "failed"
        if not text:
            return task, "failed"
        literals = re.findall(r"'([^']{3,})'", task.instruction)
        if any(literal.casefold() not in text.casefold() for literal in literals):
            return task, "dropped_literal"
        candidate = task.model_copy(update={"instruction": text, "meta": {**task.meta, "templated": task.instruction}})
        if leaks(candidate):
            return task, "leak"
        return candidate, "rewritten"
