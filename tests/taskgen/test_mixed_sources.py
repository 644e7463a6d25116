"""Generated tasks mix hand-written, spec-run and simulated services."""

from __future__ import annotations

from taskgen.generate import default_hub, generate


def test_verified_tasks_mix_hand_written_spec_run_and_simulated_services() -> None:
    services = ["crm", "email", "invoicing", "fleet", "payroll", "procurement", "weather", "fx", "geocoding"]
    hub = default_hub(services)
    sources = {name: entry.source for name, entry in hub.registry.services.items()}
    assert {sources["crm"], sources["fleet"], sources["weather"]} == {"hand-written", "spec", "simulated"}
    batch = generate(16, seed=3, hub=hub, min_services=3)
    assert len(batch.tasks) == 16
    mixes = [t for t in batch.tasks if {sources[s] for s in t.services} == {"hand-written", "spec", "simulated"}]
    assert mixes, "no task uses a hand-written, a built and a simulated service together"
    built = [t for t in batch.tasks if any(sources[s] == "spec" for s in t.services)]
    assert len(built) >= 4
