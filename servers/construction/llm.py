"""The ``llm`` backend: a coding model writes a service from its spec; the pipeline verifies it.

Any OpenAI-compatible chat-completions endpoint works (vLLM, SGLang, Ollama, hosted APIs) through
the ``openai`` client. The model gets the spec, the framework's rules and one hand-written service
as an example, and answers with fenced Python blocks, each starting with ``# file: <name>.py``
(a single unnamed block is the package's ``__init__.py``). When verification fails, the pipeline
sends the failing checks back once per repair round (:meth:`LLMWriter.revise`). Nothing the model
writes is trusted: it is mounted only after :func:`~servers.construction.verify.verify` passes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from servers.construction.spec import ServiceSpec
from servers.construction.template import format_source

EXAMPLE = Path(__file__).resolve().parents[1] / "native" / "helpdesk.py"
BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)
FILE = re.compile(r"^#\s*file:\s*([a-z_][a-z0-9_]*\.py)\s*$", re.MULTILINE)

SYSTEM = """You implement tool services for CompoWorld, a library of simulated business services.
Write a Python package that follows the framework exactly:
- `from servers.framework import Service, ServiceState, Record, Page, paginate, require, contains,
  BadRequest, Forbidden, NotFound, Conflict`; semantic types from `servers.types` (shared ones such as
  EmailAddress, MoneyAmount, DateTime; `ident(service, entity)` for ids; `sem("<service>.<name>", description)`
  for local types), records subclass `Record`, the state subclasses `ServiceState` with one dict per entity
  plural keyed by id, ids come from `state.new_id(prefix)`, writes stamp `state.tick()`.
- a module-level `service = Service(name, version=..., category=..., description=..., state=..., seed=seed,
  source="contrib")`; tools are functions decorated `@service.read` / `@service.write` taking `state` first
  and typed parameters, with a Google-style docstring whose Args describe every parameter.
- tool names, parameters, required parameters, semantic types and record fields exactly as the spec implies
  (get/update/transition/delete/adjust/append/remove take `<entity>_id`; list takes the filters, `query` when
  it searches, `offset` and `limit`; aggregates return one row per group with `count` and `total_<field>`).
- every rule (lifecycle transitions, frozen states, guards, unique fields, refs that must exist) is checked
  before the first mutation; errors raise BadRequest (400), Forbidden (403), NotFound (404), Conflict (409).
- `seed(rng, world)` builds the initial state from the shared population `world` with the given rng only.
Answer with fenced python blocks, each beginning with a line `# file: <name>.py`; nothing else."""


def parse_files(text: str) -> dict[str, str]:
    """File name → source from the model's answer; raises ValueError when there is no code."""
    blocks = BLOCK.findall(text or "")
    if not blocks:
        raise ValueError("the model's answer holds no fenced python block")
    files: dict[str, str] = {}
    for block in blocks:
        named = FILE.search(block.splitlines()[0] if block.strip() else "")
        name = named.group(1) if named else ("__init__.py" if len(blocks) == 1 else None)
        if name is None:
            raise ValueError("with several code blocks, each must begin with '# file: <name>.py'")
        body = block.split("\n", 1)[1] if named else block
        files[name] = body
    if "__init__.py" not in files:
        raise ValueError("the package needs an __init__.py")
    return files


class LLMWriter:
    """Writes a service package from a spec with a chat-completions model."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 300.0,
        temperature: float = 0.0,
    ) -> None:
        from openai import OpenAI

        self.model, self.temperature = model, temperature
        self.last_prompt: list[dict[str, Any]] | None = None
        key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self.client = OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=1)

    def _ask(self, messages: list[dict[str, Any]]) -> dict[str, str]:
        self.last_prompt = messages  # kept (hashed) in the package's provenance
        response = self.client.chat.completions.create(
            model=self.model,
            messages=messages,  # type: ignore[arg-type]
            temperature=self.temperature,
        )
        files = parse_files(response.choices[0].message.content or "")
        return {name: format_source(text) for name, text in files.items()}

    def prompt(self, spec: ServiceSpec) -> list[dict[str, Any]]:
        example = EXAMPLE.read_text()
        spec_json = spec.model_dump_json(by_alias=True, indent=1)
        user = (
            f"Implement the service of this spec.\n\nSpec:\n```json\n{spec_json}\n```\n\n"
            f"A hand-written service of the same framework, for style:\n```python\n{example}\n```"
        )
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]

    def __call__(self, spec: ServiceSpec) -> dict[str, str]:
        return self._ask(self.prompt(spec))

    def revise(self, spec: ServiceSpec, files: dict[str, str], failures: list[str]) -> dict[str, str]:
        """A second attempt that sees its first answer and the checks it failed."""
        previous = "\n\n".join(f"```python\n# file: {n}\n{t}```" for n, t in sorted(files.items()))
        feedback = "Verification failed:\n" + "\n".join(f"- {f}" for f in failures[:30])
        messages = [
            *self.prompt(spec),
            {"role": "assistant", "content": previous},
            {"role": "user", "content": feedback + "\n\nFix every failure and answer with the whole package again."},
        ]
        return self._ask(messages)
