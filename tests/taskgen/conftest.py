"""Task-generation fixtures: one hub and a small generated batch, shared by the module's tests."""

from __future__ import annotations

import pytest

from hub.core import Hub
from taskgen.generate import Generation, generate
from tests.conftest import full_hub


@pytest.fixture(scope="session")
def hub() -> Hub:
    return full_hub()


@pytest.fixture(scope="session")
def batch(hub: Hub) -> Generation:
    return generate(12, seed=11, hub=hub)
