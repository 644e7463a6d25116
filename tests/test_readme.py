"""The README's promises: two Quickstart lines, CI runs the test line, the walkthrough works."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import anyio
from mcp import Client

from servers.conformance import check_service
from servers.serving import ServiceRuntime

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _section(title: str) -> str:
    start = README.index(f"## {title}")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def _load_walkthrough(tmp_path: Path) -> ModuleType:
    code = re.search(r"```python\n(.*?)```", _section("Add a new tool server in 5 minutes"), re.S)
    assert code is not None
    path = tmp_path / "readme_bookmarks.py"
    path.write_text(code.group(1))
    spec = importlib.util.spec_from_file_location("readme_bookmarks", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic generics resolve their module by name
    spec.loader.exec_module(module)
    return module


def test_quickstart_has_exactly_two_lines() -> None:
    block = re.search(r"```bash\n(.*?)```", _section("Quickstart"), re.S)
    assert block is not None
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(lines) == 2
    assert lines[0].endswith("compoworld demo")
    assert lines[1].endswith("pytest")


def test_ci_runs_the_readme_test_line() -> None:
    block = re.search(r"```bash\n(.*?)```", _section("Quickstart"), re.S)
    assert block is not None
    test_line = block.group(1).splitlines()[1]
    ci = (ROOT / ".ci" / "run").read_text()
    pattern = re.search(r"grep -m1 -E '([^']+)' README.md", ci)
    assert pattern is not None
    assert re.search(pattern.group(1), test_line)
    assert not re.search(pattern.group(1), block.group(1).splitlines()[0])


def test_ci_script_fails_when_the_test_line_fails(tmp_path: Path) -> None:
    (tmp_path / ".ci").mkdir()
    (tmp_path / ".ci" / "run").write_text((ROOT / ".ci" / "run").read_text())
    (tmp_path / "README.md").write_text("```bash\npython3 -m venv .venv && false && pytest\n```\n")
    result = subprocess.run(["bash", str(tmp_path / ".ci" / "run")], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0


def test_walkthrough_service_passes_conformance(tmp_path: Path) -> None:
    module = _load_walkthrough(tmp_path)
    report = check_service(module.service)
    assert report.ok, str(report)


def test_walkthrough_service_works_over_mcp(tmp_path: Path) -> None:
    module = _load_walkthrough(tmp_path)

    async def main() -> None:
        async with Client(ServiceRuntime.seeded(module.service).server()) as client:
            added = await client.call_tool("add_bookmark", {"url": "https://example.org", "title": "Example"})
            assert added.structured_content is not None and added.structured_content["success"] is True
            again = await client.call_tool("add_bookmark", {"url": "https://example.org", "title": "Again"})
            assert again.structured_content is not None
            assert again.structured_content["error"]["code"] == 409

    anyio.run(main)
