"""Running a workflow: a pattern from its trigger, then patterns chained on what it made.

The first stage's trigger is a seeded record (:meth:`taskgen.workflow.Workflows.trigger`). When a
reaction made a record of an entity kind another pattern starts from (an invoice opened, a task
created), the workflow may go on with that pattern, triggered by that record: "once the invoice
exists, send it to the billing contact and put a payment reminder on the calendar". A chained
stage runs in a fork of the world, so a stage that cannot be completed is dropped whole and the
workflow ends with what it had.
"""

from __future__ import annotations

import random
from dataclasses import replace

from taskgen.flowmodel import Done, Flow, Located, Stage
from taskgen.pattern import Pattern, Reaction, load_patterns
from taskgen.rules import repeat_branch
from taskgen.toolindex import trigger_needs
from taskgen.walk import WalkError, humanize
from taskgen.workflow import Workflows

RULE_RATE = 0.9
"""Share of stages whose pattern has rules that state one (it holds in about half of them)."""
CHAIN_RATE = 0.85
"""Chance to go on with another pattern when a stage made a record one starts from."""
MAX_STAGES = 3
BATCH_RATE = 0.95
SPLIT_RATE = 0.85
"""Chance that a batch's next record is one its house rule goes the other way for (when any is)."""
THIRD_RATE = 0.4
"""Chance that a batch of two takes a third record."""
"""Chance that a second seeded record in the same situation is handled the same way ("the same
goes for the release 'B'"), as real requests batch the week's won deals or overdue invoices."""


def instantiate(
    workflows: Workflows,
    pattern: Pattern,
    rng: random.Random,
    rule: bool | None = None,
    chain: bool = True,
) -> Flow:
    """Run ``pattern`` (then, with ``chain``, the same for more records in the trigger's situation,
    or patterns triggered by what it made) in a fresh world
    of the seed; raises :class:`WalkError` with a reason.

    ``rule``: None draws whether the first stage states a house rule and which way it goes; False
    states none; True states one that holds (the workflow takes the other branch). The trigger is
    drawn first, so the same random state gives the same trigger whichever is asked.
    """
    world = workflows.hub.open_world(seed=workflows.walker.seed)
    flow = Flow([Stage(pattern, Located(0, "", {}, {}, "", ""))], [], world)
    today = workflows.today
    flow.today = f"{today:%A} {today.day} {today:%B %Y}"
    flow.clock = today.isoformat()
    try:
        flow.trigger = workflows.trigger(flow, rng)
        _run_stage(workflows, flow, rng, rule)
    except Exception:
        flow.close()
        raise
    if len({d.service for d in flow.done}) < 2:
        flow.close()
        raise WalkError("too_few_services")
    if chain and rng.random() < BATCH_RATE and _repeat(workflows, flow, rng):
        if rng.random() < THIRD_RATE:
            _repeat(workflows, flow, rng)
        return flow  # "once the new task exists" would not say which of the two
    for _ in range(MAX_STAGES - 1):
        if not chain or rng.random() >= CHAIN_RATE or not _chain(workflows, flow, rng):
            break
    return flow


def _run_stage(workflows: Workflows, flow: Flow, rng: random.Random, rule: bool | None) -> None:
    """The current stage's rule and reactions (raises :class:`WalkError` when one cannot be done)."""
    stage = flow.stage
    pattern = stage.pattern
    drawn = rng.random() < RULE_RATE
    if stage.model is not None:
        # a second record under the same rule: it holds or not by the record's own value
        branch = repeat_branch(flow.trigger, stage.model.branch) if stage.model.branch is not None else None
        if stage.model.branch is not None and branch is None:
            raise WalkError("repeat_rule")
    else:
        chosen = rng.choice(pattern.rules) if pattern.rules and (drawn if rule is None else rule) else None
        branch = workflows.branch(flow, chosen, rng, held=rule) if chosen is not None else None
        if rule and branch is None:
            raise WalkError("no_rule")
    stage.branch = branch
    # A later stage posts no second round of broadcasts where earlier ones went (another note to a
    # team channel): that reads as a recipe, not as a colleague's request. A message to a person
    # (linked by role) may follow one to another person.
    used: set[str] = {d.service for s in flow.stages[:-1] for d in s.done if _sends(flow, d) and not d.reaction.links}
    for reaction in pattern.reactions:
        if branch is not None and branch.held and reaction.id == branch.rule.skip:
            trial = _dry_run(workflows, flow, reaction, rng, used)
            skipped = trial[0] if trial else None
            if skipped is None:
                raise WalkError("rule_target_unavailable")
            flow.mounted_extra.append(skipped.service)
            stage.skipped, stage.skipped_after = skipped, trial[1:]
            if branch.rule.instead is not None:
                done = workflows.react(flow, branch.rule.instead, rng, set())  # may use a service again
                if done is None:
                    raise WalkError("rule_instead_unavailable")
                stage.done.append(done)
                used.add(done.service)
            continue
        if reaction.follows and not any(d.reaction.id == reaction.follows for d in stage.done):
            continue  # it acts on the record of a reaction the request went without
        if stage.model is not None and workflows.twin(flow, reaction) is None:
            continue  # the first record went without it: so does the second (one list of asks)
        done = workflows.react(flow, reaction, rng, used)
        if done is None:
            if stage.model is not None:
                raise WalkError(f"repeat:{reaction.id}")
            # a hop two applications answer differently is ambiguous for this trigger: the request
            # goes without it rather than check a person the agent could not know was meant
            if reaction.optional or any(">" in source for source in reaction.links.values()):
                continue
            raise WalkError(f"no_service:{reaction.id}")
        stage.done.append(done)
        used.add(done.service)


def _chain(workflows: Workflows, flow: Flow, rng: random.Random) -> bool:
    """Go on with a pattern triggered by a record the current stage made; False when none can."""
    taken = {s.pattern.id for s in flow.stages}
    branch = flow.stage.branch
    instead = branch.rule.instead if branch is not None else None
    # a record a rule's alternative made is not chained on: the rule is stated after the stages
    made = [d.record for d in flow.done if d.record is not None and _created(flow, d) and d.reaction is not instead]
    options = [
        (pattern, record)
        for pattern in load_patterns()
        if pattern.id not in taken and pattern.trigger.chainable
        for record in made
        if record.entity in {humanize(e) for e in pattern.trigger.entity}
        and all(record.fields(role, kind or None) for role, kind in trigger_needs(pattern))
        and (
            not pattern.trigger.state
            or any(v in pattern.trigger.state for v in record.record.values() if isinstance(v, str))
        )
    ]
    if not options:
        return False
    pattern, record = rng.choice(options)
    return _staged(workflows, flow, Stage(pattern, record, chained=True), rng)


def _repeat(workflows: Workflows, flow: Flow, rng: random.Random) -> bool:
    """Handle a second seeded record in the trigger's situation exactly as the first (same tools,
    same containers, the same rule judged on its own value); False when none can be."""
    first = flow.stages[0]
    listing = flow.steps[first.trigger.step]
    needs = trigger_needs(first.pattern)
    taken = {first.trigger.anchor, *(r["value"] for r in flow.references)}
    # named the way the first one is (a loan by its item, not one by its item and one by its holder)
    named_by = next((n for n, v in first.trigger.record.items() if v == first.trigger.anchor), "")
    options = [
        r
        for r in workflows.located(listing)
        if r.anchor
        and r.anchor not in taken
        and r.record.get(named_by) == r.anchor
        and r.record.get("id") != first.trigger.record.get("id")
        and workflows.in_state(r.record, first.pattern.trigger.state)
        and all(r.fields(role, kind or None) for role, kind in needs)
        and workflows.unique(listing.entry.service, r.anchor)
    ]
    if not options:
        return False
    record = rng.choice(_splitting(flow, first, options, rng))
    record.entity = first.trigger.entity
    if not _staged(workflows, flow, Stage(first.pattern, record, model=first), rng):
        return False
    flow.references.append({"service": record.service, "value": str(record.anchor), "qualifier": None})
    flow.given.append(record.anchor)
    return True


def _splitting(flow: Flow, first: Stage, options: list[Located], rng: random.Random) -> list[Located]:
    """The records a batch should take its next from: usually (:data:`SPLIT_RATE`) those the house
    rule goes the other way for, while it has gone one way for every record so far. A rule that
    holds for one record of a batch and not another asks the agent to judge each record; one that
    holds for all ("all three are over the limit") is a real batch too, so it stays possible."""
    if first.branch is None or rng.random() >= SPLIT_RATE:
        return options
    so_far = {s.branch.held for s in flow.stages if (s is first or s.model is first) and s.branch is not None}
    if len(so_far) != 1:
        return options
    other = [r for r in options if (b := repeat_branch(r, first.branch)) is not None and b.held not in so_far]
    return other or options


def _staged(workflows: Workflows, flow: Flow, stage: Stage, rng: random.Random) -> bool:
    """Run ``stage`` as the flow's next one in a fork of its world; when it cannot be completed,
    the flow is left exactly as it was and False is returned."""
    mark, checked, mentions = len(flow.steps), dict(flow.checked), dict(flow.mentions)
    tolerated, extra, original = list(flow.tolerated), list(flow.mounted_extra), flow.world
    references, given = list(flow.references), list(flow.given)
    flow.world = original.fork()
    flow.stages.append(stage)
    try:
        _run_stage(workflows, flow, rng, None)
    except WalkError:
        flow.world.close()
        flow.world = original
        flow.stages.pop()
        del flow.steps[mark:]
        flow.checked, flow.mentions, flow.mounted_extra, flow.tolerated = checked, mentions, extra, tolerated
        flow.references, flow.given = references, given
        return False
    flow.retired.append(original)
    return True


def _sends(flow: Flow, done: Done) -> bool:
    entry = flow.steps[done.steps[-1]].entry
    return entry.meta is not None and entry.meta.op == "send"


def _created(flow: Flow, done: Done) -> bool:
    entry = flow.steps[done.steps[-1]].entry
    return entry.meta is not None and entry.meta.op == "create"


def _dry_run(workflows: Workflows, flow: Flow, reaction: Reaction, rng: random.Random, used: set[str]) -> list[Done]:
    """How ``reaction`` would be done (its service, its slots), then the reactions that act on the
    record it would make (a comment on the task it would open), found by doing them in a fork of
    the world that is then thrown away: a rule says not to do it. The request still asks for all
    of them (the rule, stated after, says which not to do): leaving the comment out would tell the
    agent the rule held. Empty when ``reaction`` cannot be done."""
    scratch = flow.world.fork()
    stages = [*flow.stages[:-1], replace(flow.stage, done=list(flow.done))]
    trial = Flow(stages, list(flow.steps), scratch, dict(flow.checked))
    try:
        first = workflows.react(trial, reaction, rng, used)
        if first is None:
            return []
        out = [first]
        trial.stage.done.append(first)
        for follower in (r for r in flow.stage.pattern.reactions if r.follows == reaction.id):
            done = workflows.react(trial, follower, rng, used)
            if done is not None:
                out.append(done)
                trial.stage.done.append(done)
        return out
    finally:
        scratch.close()
