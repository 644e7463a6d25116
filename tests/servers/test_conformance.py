"""The conformance checker over every registered service, and against a broken sample."""

from __future__ import annotations

from typing import Any

import pytest

from servers.conformance import check_service
from servers.framework import Service
from servers.registry import all_services
from tests.servers.broken_service import service as broken_service

HAND_WRITTEN = [s for s in all_services().values() if s.source == "hand-written"]


# Built services are checked by `compoworld services verify --all` (tests/servers/test_services_verify.py).
@pytest.mark.parametrize("service", HAND_WRITTEN, ids=lambda s: s.name)
def test_service_conforms(service: Service[Any]) -> None:
    report = check_service(service)
    assert report.ok, str(report)
    assert report.calls > 0


def test_checker_rejects_a_write_that_mutates_before_validating() -> None:
    report = check_service(broken_service)
    checks = {p.check for p in report.problems}
    assert "atomic" in checks
    assert all(p.tool == "rename_item" for p in report.problems)
