"""The ``llm`` construction backend against a real local chat-completions server."""

from __future__ import annotations

import json
from pathlib import Path

from servers.construction.llm import LLMWriter, parse_files
from servers.construction.pipeline import build, read_report
from servers.construction.spec import ServiceSpec, load_spec
from servers.construction.template import compile_spec
from tests.conftest import ScriptedOpenAI

SPECS = Path(__file__).parent / "specs"


def _answer(files: dict[str, str]) -> str:
    blocks = [f"```python\n# file: {name}\n{text}```" for name, text in sorted(files.items())]
    return "Here is the package.\n\n" + "\n\n".join(blocks)


def _shelf() -> ServiceSpec:
    return ServiceSpec.model_validate(json.loads((SPECS / "booklog.json").read_text().replace("booklog", "shelf")))


def test_parse_files_reads_named_blocks_and_refuses_prose() -> None:
    files = parse_files("```python\n# file: models.py\nx = 1\n```\n```python\n# file: __init__.py\ny = 2\n```")
    assert files == {"models.py": "x = 1\n", "__init__.py": "y = 2\n"}
    assert parse_files("```python\nz = 3\n```") == {"__init__.py": "z = 3\n"}
    for bad in ("no code at all", "```python\n# file: models.py\nx = 1\n```"):
        try:
            parse_files(bad)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad!r}")


def test_llm_backend_keeps_a_correct_package_and_refuses_a_broken_one(
    openai_server: ScriptedOpenAI, tmp_path: Path
) -> None:
    good_spec, bad_spec = load_spec(SPECS / "booklog.json"), _shelf()
    broken = compile_spec(bad_spec)
    broken["tools.py"] = broken["tools.py"].replace("if days > 30 and reason is None:", "if False:")
    openai_server.replies = [_answer(compile_spec(good_spec)), _answer(broken), _answer(broken)]
    writer = LLMWriter("coder-test", base_url=openai_server.url)

    kept = build(good_spec, writer, backend="llm", root=tmp_path, examples=2)
    routed = build(bad_spec, writer, backend="llm", root=tmp_path, examples=2)

    assert kept.ok and (tmp_path / "booklog" / "tools.py").exists()
    assert not routed.ok and not (tmp_path / "shelf").exists()
    report = read_report(tmp_path)
    assert report["booklog"] == {**report["booklog"], "backend": "llm", "kept": True, "verified": True}
    assert report["shelf"]["kept"] is False and report["shelf"]["failing_tools"] == ["lend_book"]
    assert any("forbids this call ([403])" in f for f in report["shelf"]["failures"])
    # one request per spec, plus one repair round that showed the model its failing checks
    assert len(openai_server.requests) == 3
    first = openai_server.requests[0]["messages"]
    assert first[0]["role"] == "system" and '"name": "booklog"' in first[1]["content"]
    repair = openai_server.requests[2]["messages"]
    assert repair[-1]["role"] == "user" and "lend_book" in repair[-1]["content"]


def test_llm_backend_refuses_an_answer_without_code(openai_server: ScriptedOpenAI, tmp_path: Path) -> None:
    openai_server.replies = ["I cannot write that service."]
    result = build(load_spec(SPECS / "booklog.json"), LLMWriter("m", base_url=openai_server.url), root=tmp_path)
    assert not result.ok
    assert "no fenced python block" in read_report(tmp_path)["booklog"]["failures"][0]
