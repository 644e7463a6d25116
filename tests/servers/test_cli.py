"""The ``compoworld services`` commands, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from servers.cli import short_product
from servers.registry import python_names


def run(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    """``compoworld ARGS`` with tables printed ``columns`` wide (rich reads ``COLUMNS``)."""
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "training.cli", *args], capture_output=True, text=True, timeout=120,
                          env=env)  # fmt: skip


@pytest.fixture(scope="module")
def listed() -> list[dict[str, Any]]:
    """The rows of ``compoworld services list --json`` (one run for the module's tests)."""
    result = run("services", "list", "--json")
    assert result.returncode == 0, result.stderr
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def test_services_list_json_counts_services_and_tools(listed: list[dict[str, Any]]) -> None:
    rows = listed
    assert len(rows) >= 16
    assert sum(r["tools"] for r in rows) >= 200
    for row in rows:
        assert {"name", "category", "source", "tools", "read", "write"} <= row.keys()
        assert row["read"] + row["write"] == row["tools"]
        assert 5 <= row["tools"] <= 40


def test_services_list_json_gives_every_service_its_category_source_product_and_patterns(
    listed: list[dict[str, Any]],
) -> None:
    rows = listed
    for row in rows:
        assert {"category", "source", "modelled_on", "patterns"} <= row.keys(), row["name"]
        assert row["category"] and row["source"] in ("hand-written", "spec", "contrib", "simulated", "external")
        assert isinstance(row["patterns"], list) and all(isinstance(p, str) for p in row["patterns"])
    assert any(row["patterns"] for row in rows)


def test_hand_written_and_simulated_services_name_the_product_they_are_modelled_on(
    listed: list[dict[str, Any]],
) -> None:
    named = {r["name"]: r["modelled_on"] for r in listed if r["source"] in ("hand-written", "simulated")}
    assert set(python_names()) <= set(named)
    assert {n: m for n, m in named.items() if not m.strip()} == {}
    assert named["email"].startswith("Gmail API")


def test_services_list_table_has_a_total_row() -> None:
    result = run("services", "list")
    assert result.returncode == 0, result.stderr
    assert "email" in result.stdout and "services" in result.stdout


def test_services_list_table_shows_the_product_and_the_number_of_patterns() -> None:
    result = run("services", "list", "--source", "hand-written", columns=160)
    assert result.returncode == 0, result.stderr
    assert "modelled on" in result.stdout and "patterns" in result.stdout
    email = next(line for line in result.stdout.splitlines() if " email " in line)
    assert "Gmail API" in email and "(" not in email  # the product, without its API parts


def test_a_product_is_shortened_to_its_names() -> None:
    assert short_product("Gmail API (users.messages, labels)") == "Gmail API"
    assert short_product("HubSpot CRM API (companies) / Salesforce") == "HubSpot CRM API / Salesforce"
    assert short_product("A" * 40, width=10) == "A" * 9 + "…"


def test_services_show_prints_signatures() -> None:
    result = run("services", "show", "email")
    assert result.returncode == 0, result.stderr
    assert "send_message" in result.stdout


def test_unknown_service_is_a_clear_error() -> None:
    result = run("services", "show", "nosuch")
    assert result.returncode == 2
    assert "unknown service 'nosuch'" in result.stdout + result.stderr
