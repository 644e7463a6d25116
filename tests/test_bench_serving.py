"""bench/serving.py runs end to end (``--quick``) and reports every figure for both sides.

Timings are not asserted here (shared machines are noisy); what is checked is that the bench
measures what it says: every key, a paged listing under 1 MiB, and world B not held by world A.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KEYS = (
    "startup_service_s",
    "startup_hub_subset_s",
    "http_call_full_median_ms",
    "http_call_full_p99_ms",
    "http_call_small_median_ms",
    "blocked_extra_ms",
    "max_message_bytes",
)


@pytest.mark.slow
def test_the_serving_bench_runs_quick() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "serving.py"), "--quick", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout)
    assert set(report) >= {"ours", "peer", "ratios", "targets", "met"}
    for side in ("ours", "peer"):
        for key in KEYS:
            assert isinstance(report[side][key], int | float), (side, key, report[side].get(key))
    ours, peer = report["ours"], report["peer"]
    assert ours["startup_service_s"] > 0 and peer["startup_service_s"] > 0
    assert ours["max_message_bytes"] <= 1_048_576 and ours["list_pages"] > 1
    assert peer["list_pages"] == 1 and peer["max_message_bytes"] > ours["max_message_bytes"]
    assert ours["blocked_during_median_ms"] < 1000  # world B answered while world A hung
    assert set(report["met"]) == set(report["targets"])
