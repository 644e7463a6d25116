"""The main command runs the whole pipeline offline and says where everything is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = subprocess.run(
        [sys.executable, "-m", "training.cli", "demo", "--out", str(out), "-n", "4"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    for name in ("tasks.jsonl", "runs.db", "sft.jsonl", "report.html"):
        assert (out / name).exists(), name
        assert str(out / name) in result.stdout
    records = [json.loads(line) for line in (out / "sft.jsonl").read_text().splitlines()]
    assert len(records) == 4 and all(r["meta"]["rubric_score"] == 1.0 for r in records)
    assert {"tools", "messages", "meta", "source"} <= records[0].keys()
    assert records[0]["meta"]["discover_mode"] == "gateway"
    assert "<svg" in (out / "report.html").read_text()
    for agent in ("oracle", "null", "random"):
        assert agent in result.stdout
