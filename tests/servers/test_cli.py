"""The ``compoworld services`` commands, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "training.cli", *args], capture_output=True, text=True, timeout=120)


def test_services_list_json_counts_services_and_tools() -> None:
    result = run("services", "list", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) >= 16
    assert sum(r["tools"] for r in rows) >= 200
    for row in rows:
        assert {"name", "category", "source", "tools", "read", "write"} <= row.keys()
        assert row["read"] + row["write"] == row["tools"]
        assert 5 <= row["tools"] <= 40


def test_services_list_table_has_a_total_row() -> None:
    result = run("services", "list")
    assert result.returncode == 0, result.stderr
    assert "email" in result.stdout and "services" in result.stdout


def test_services_show_prints_signatures() -> None:
    result = run("services", "show", "email")
    assert result.returncode == 0, result.stderr
    assert "send_message" in result.stdout


def test_unknown_service_is_a_clear_error() -> None:
    result = run("services", "show", "nosuch")
    assert result.returncode == 2
    assert "unknown service 'nosuch'" in result.stdout + result.stderr
