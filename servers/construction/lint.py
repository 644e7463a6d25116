"""Spec lint: what a valid spec must still get right to be trusted.

``rule_problems``: every prose rule names what implements it (guard ids, effect ids,
``lifecycle:<entity>``, ``unique:<entity>.<field>``, ``tool:<name>``). ``role_problems``: every
field whose semantic type is ambiguous (:data:`servers.roles.ROLES`) names its business role.
``seed_problems``: seeded records satisfy the rules stated as invariants (``holds``).
``spec_lint`` is all three; ``compoworld services check`` and verification run it.
"""

from __future__ import annotations

from typing import Any

from servers.construction.spec import Rule, ServiceSpec
from servers.roles import role_problem


def rule_problems(spec: ServiceSpec) -> list[str]:
    """Rules not backed by what implements them (spec lint; the seeds are checked by the engine)."""
    ids = {g.id for t in spec.tools for g in t.guards if g.id} | {e.id for t in spec.tools for e in t.effects}
    ids |= {f"lifecycle:{n}" for n, e in spec.entities.items() if e.lifecycle}
    ids |= {f"unique:{n}.{f}" for n, e in spec.entities.items() for f, fs in e.fields.items() if fs.unique}
    ids |= {f"tool:{t.name}" for t in spec.tools}
    problems = []
    for i, rule in enumerate(spec.rules):
        if isinstance(rule, str):
            problems.append(f"rule {i} ({rule[:60]!r}) is not backed: write it as {{'text': ..., 'by': [guard or "
                            "effect ids, lifecycle:<entity>, unique:<entity>.<field>, tool:<name>]}")  # fmt: skip
            continue
        unknown = [b for b in rule.by if b not in ids]
        if unknown:
            problems.append(f"rule {i} ({rule.text[:60]!r}) cites {unknown}, which name nothing in the spec")
        if rule.holds is not None and rule.holds.entity not in spec.entities:
            problems.append(f"rule {i}: invariant on unknown entity {rule.holds.entity!r}")
    return problems


def role_problems(spec: ServiceSpec) -> list[str]:
    """Fields of a type that needs a role (money, dates, people, organisations) that name none."""
    problems = []
    for entity_name, entity in spec.entities.items():
        for name, field in entity.fields.items():
            bad = role_problem(spec.field_type(field.type)[1], field.role)
            if bad:
                problems.append(f"entity {entity_name!r} field {name!r}: {bad}")
    return problems


def seed_problems(spec: ServiceSpec, service: Any, seeds: tuple[int, ...] = (0, 1, 2)) -> list[str]:
    """Seeded records that break a rule stated as an invariant (``"holds"``), named by seed and id."""
    # The engine interprets the conditions. Imported here, not at module level, for start-up speed:
    # the engine package (~0.2 s) is needed only for specs that state invariants.
    from servers.engine.conditions import Scope, holds

    problems: list[str] = []
    invariants = [(i, r.holds) for i, r in enumerate(spec.rules) if isinstance(r, Rule) and r.holds is not None]
    if not invariants:
        return problems
    for seed in seeds:
        state = service.seed_state(seed)
        for i, invariant in invariants:
            plural = spec.entities[invariant.entity].plural
            for record in getattr(state, plural).values():
                scope = Scope({}, record, state.clock, lambda head, follow: None)
                if not all(holds(c, scope) is not False for c in invariant.when):
                    continue
                if all(holds(c, scope) is True for c in invariant.when) and any(
                    holds(c, scope) is False for c in invariant.require
                ):
                    problems.append(f"rule {i}: seed {seed} {invariant.entity} {record.id!r} breaks it")
    return problems


def spec_lint(spec: ServiceSpec, service: Any | None = None) -> list[str]:
    """Every lint problem of a spec (seeds too when its service is given)."""
    return [*rule_problems(spec), *role_problems(spec), *(seed_problems(spec, service) if service else [])]
