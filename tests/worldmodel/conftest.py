"""World-model fixtures: the test spec directory (the scripted OpenAI server lives in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ScriptedOpenAI

SPECS = Path(__file__).parent / "specs"

__all__ = ["SPECS", "ScriptedOpenAI"]
