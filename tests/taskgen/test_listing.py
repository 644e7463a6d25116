"""The ``patterns`` column of ``compoworld services list``, filled by ``taskgen.listing``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hub.core import Hub
from taskgen import listing, pattern
from taskgen.coverage import service_patterns


def test_listed_patterns_are_the_coverage_of_the_default_hub(hub: Hub) -> None:
    done = subprocess.run([sys.executable, "-m", "training.cli", "services", "list", "--json"], capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    listed = {row["name"]: row["patterns"] for row in json.loads(done.stdout)}
    assert listed == service_patterns(hub.registry)


def test_the_patterns_directory_is_the_pattern_loader_s() -> None:
    assert listing.PATTERNS_DIR == pattern.PATTERNS_DIR


def test_a_new_pattern_file_changes_the_cache_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listing, "PATTERNS_DIR", tmp_path)
    (tmp_path / "a.json").write_text('{"patterns": []}')
    before = listing.inputs_key()
    assert listing.inputs_key() == before  # nothing changed: the cached answer is used
    (tmp_path / "b.json").write_text('{"patterns": []}')
    assert listing.inputs_key() != before
