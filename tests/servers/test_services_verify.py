"""``compoworld services verify --all`` over every mounted native service, and ``services list``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from servers.registry import all_services


def _compoworld(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    code = "from training.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.slow
def test_verify_all_passes_for_every_spec_service() -> None:
    # Hand-written services are checked by tests/servers/test_conformance.py, with more examples.
    done = _compoworld("services", "verify", "--all", "--source", "spec", "--examples", "2", "--workers", "2")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    built = [s for s in all_services().values() if s.source == "spec"]
    assert len(built) >= 100 and f"{len(built)} of {len(built)} verified" in done.stdout
    assert all(f"{s.name}: verified" in done.stdout for s in built)


def test_services_list_shows_every_source() -> None:
    done = _compoworld("services", "list", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    sources = {r["source"] for r in rows}
    assert {"hand-written", "spec", "simulated"} <= sources
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names))
    built = [r for r in rows if r["source"] == "spec"]
    assert all(r["tools"] >= 10 for r in built)
