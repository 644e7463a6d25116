"""Optional LLM rewrite of instructions into fluent prose, with the leak check run again.

Any OpenAI-compatible chat-completions endpoint, through the ``openai`` client. The model sees
only the templated instruction (which holds no carried values) and is asked to keep every quoted
name and literal exactly. A rewrite that leaks a carried value, drops a quoted literal or fails
is discarded and the templated text kept; the caller learns which happened. For pattern tasks
the dates, amounts, emails, report key and a trap's qualifier must survive too
(:func:`kept_literals`), so the rewrite names the same records, deadlines and thresholds.
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
    "report, every date, time, amount and email address exactly as written, add no new facts and no "
    "numbers. Reply with the rewritten text only.\n\n"
)

Outcome = Literal["rewritten", "leak", "dropped_literal", "failed"]


def kept_literals(task: Task) -> list[str]:
    """What a rewrite must keep word for word: quoted names, the report key, dates and amounts (a
    deadline, a threshold), email addresses, and the values that tell a trap's record apart."""
    text = task.instruction
    found = re.findall(r"'([^']{3,})'", text) + re.findall(r"`([^`]+)`", text)
    found += re.findall(
        r"\b\d{1,2} (?:January|February|March|April|May|June|July|August|September|October|"
        r"November|December) \d{4}\b",
        text,
    )
    found += re.findall(r"\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b|\b\d{2}:\d{2}\b", text)
    found += re.findall(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", text)
    for trap in task.meta.get("traps", []):
        value = str(trap.get("value", ""))
        spoken = value.replace("_", " ") if re.fullmatch(r"[a-z0-9_]+", value) else value
        if spoken and spoken in text:
            found.append(spoken)
    return list(dict.fromkeys(found))


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
        if any(literal.casefold() not in text.casefold() for literal in kept_literals(task)):
            return task, "dropped_literal"
        candidate = task.model_copy(update={"instruction": text, "meta": {**task.meta, "templated": task.instruction}})
        if leaks(candidate):
            return task, "leak"
        return candidate, "rewritten"
