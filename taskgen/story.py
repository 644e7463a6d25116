"""From an executed workflow (:mod:`taskgen.workflow`) to a task a person would write.

The instruction is written as a request: who is asking and today's date, the situation (the
trigger record, named by its title), the outcomes wanted in business words (the pattern's
phrasings, with the dates and records it names), the house rule and the report wanted. It never
names a service, a tool or a field, and never dictates values: the agent decides where each
outcome is done and finds what it needs. The rubric checks exactly what is asked: the arguments
each step marks as asked for (:attr:`taskgen.workflow.Flow.checked`), the branch a rule sends the
workflow down (what the rule forbids is collateral damage), and the report.
"""

from __future__ import annotations

import random
import re
from typing import Any

from hub.rubric import RUBRIC_VERSION, RecordCriterion, ReportCriterion, Rubric, normal_key
from servers.roles import ROLE_KEY, SYSTEM
from taskgen.compose import collateral_criterion, effect_criteria, report_key, system_fields
from taskgen.flowmodel import Branch, Done, Flow, Stage
from taskgen.graph import field_types
from taskgen.rules import recorded, stated
from taskgen.task import PlanStep, Task, Transfer, leaves
from taskgen.walk import humanize, walker_for

INTRO = (
    "I'm {persona}. Today is {today}.",
    "{persona} here; it's {today}.",
    "This is {persona} (today is {today}).",
)
OPENERS = ("", "Please ", "Could you ")
THEN = ("Then", "After that,", "Next,", "Also,")
RULE = ("House rule: {text}", "Keep to our policy: {text}", "One rule applies: {text}")
REPORT = (
    "When you're done, tell me the {field} of the new {entity} (report it as `{key}`).",
    "Finish by telling me the {field} the new {entity} got, as `{key}`.",
    "Reply with `{key}`: the {field} of the {entity} you created.",
)
REPORT_EACH = (
    "When you're done, tell me the {field} each new {entity} got: {keys}.",
    "Finish by reporting the {field} of each new {entity}, as {keys}.",
)
ASSIGNED = frozenset({"reference_code", "money_amount", "count", "quantity", "percentage", "date"})
"""Types of values a service assigns or computes that someone would ask for (not people, not stamps)."""
TRAP = (
    "Careful, there is more than one '{anchor}': I mean the one whose {field} is {value}.",
    "(There are several records named '{anchor}'; it's the one with {field} {value}.)",
    "Note that '{anchor}' appears more than once; use the one where the {field} is {value}.",
)
BY_TRAP = "Careful, there is more than one '{anchor}': I mean the one {field} {value}."
REST = (
    "Everything else goes ahead either way.",
    "The rest of the list stands whatever the rule says.",
    "The other steps still happen either way.",
)
CHAIN = (
    "Once the new {entity} exists:",
    "Then, for the {entity} you just created:",
    "After the {entity} is set up:",
)
STEPWISE = "Here's what needs to happen; later steps depend on earlier ones:"
STEPWISE_EACH = "Here's what needs to happen for each of them; later steps depend on earlier ones:"
REPEAT = (
    "The same goes for {anchors}, so please do all of this for both.",
    "{anchors} is in the same position, so handle both of them the same way.",
    "And it's the same story for {anchors}: everything below applies to each of the two.",
)
REPEAT_MANY = (
    "The same goes for {anchors}, so please do all of this for each of them.",
    "{anchors} are in the same position, so handle all three the same way.",
    "And it's the same story for {anchors}: everything below applies to each of the three.",
)


def compose_flow(flow: Flow, task_id: str, seed: int, rng: random.Random, distractors: list[str]) -> Task:
    """The task of an executed workflow: plan, rubric, report, rule, instruction."""
    steps = flow.steps
    services = flow.services
    mounted = sorted({*services, *distractors})
    world = flow.world
    initial, final = world.initial_states(mounted), world.states(mounted)
    registry = world.hub.registry
    system = system_fields(world.hub, mounted)
    criteria: list[RecordCriterion | ReportCriterion] = []
    origin: list[int] = []  # the step each record criterion comes from
    for step in steps:
        if step.entry.kind == "write" and step.changes:
            ignored = frozenset(system.get(step.entry.service, ()))
            checked = flow.checked.get(step.index, set())
            done = next((d for d in flow.all_done if step.index in d.steps), None)
            states = done.reaction.to if done is not None else []
            first = len(criteria) + 1
            made = effect_criteria(step, step.changes, final, flow.mentions, ignored, checked, states, first)
            criteria.extend(made)
            origin.extend(step.index for _ in made)
    _refer_to_created([c for c in criteria if isinstance(c, RecordCriterion)], origin, steps)
    reports = _report(flow, rng)
    answers = _answers(flow, {r[0] for r in reports})
    expected_report: dict[str, Any] = {}
    for key, value, words, entity, about in [*reports, *answers]:
        expected_report[key] = value
        criteria.append(
            ReportCriterion(
                id=f"c{len(criteria) + 1}",
                field=key,
                value=value,
                description=f"The report gives the {words} of the {entity}" + (f" for '{about}'" if about else ""),
            )
        )
    rubric = Rubric(
        version=RUBRIC_VERSION, criteria=[*criteria, collateral_criterion(initial, final, system, flow.tolerated)]
    )
    instruction = tell(flow, reports, rng)
    carried = {c.value for s in steps for c in s.carried.values()}
    transfers = [
        Transfer(type=c.type, from_step=c.step, to_step=s.index, from_service=c.service,
                 to_service=s.entry.service, argument=arg)
        for s in steps for arg, c in s.carried.items() if c.service != s.entry.service and c.step >= 0
    ]  # fmt: skip
    branches = [s.branch for s in flow.stages if s.branch is not None]
    policies = list(dict.fromkeys(b.text for b in branches))
    return Task(
        id=task_id,
        seed=seed,
        instruction=instruction,
        services=services,
        distractor_services=distractors,
        plan=[PlanStep(tool=s.entry.qualified, arguments=s.arguments) for s in steps],
        rubric=rubric,
        expected_report=expected_report,
        policies=policies,
        transfers=transfers,
        meta={
            "pattern": flow.stages[0].pattern.id,
            "records": 1 + sum(1 for s in flow.stages if s.model is not None),  # handled alike (a batch)
            "patterns": [s.pattern.id for s in flow.stages],
            "category": flow.stages[0].pattern.category,
            "walk": [s.entry.qualified for s in steps],
            "n_steps": len(steps),
            "n_writes": sum(1 for s in steps if s.entry.kind == "write"),
            "written_services": sorted({s.entry.service for s in steps if s.entry.kind == "write"}),
            "capabilities": sorted({s.entry.kind for s in steps}),
            "domain": sorted({registry.services[n].category for n in services}),
            "carried_values": sorted({str(v) for v in carried}),
            "given_values": sorted({str(v) for v in flow.given if v is not None}),
            "references": flow.references,
            "traps": [flow.trap] if flow.trap else [],
            "rule": _rule_meta(branches[0]) if branches else None,
            "rules": [_rule_meta(b) for b in branches],
        },
    )


def _refer_to_created(criteria: list[RecordCriterion], origin: list[int], steps: list[Any]) -> None:
    """A value that is the id of a record an earlier step created (the task a comment goes on) is
    matched as ``{"$record": cN}``, the record that step's criterion found, not as the id the
    oracle's run gave it: an agent that creates in another order gets other ids, rightly."""
    created: dict[str, str] = {}  # record id the oracle's run gave -> the criterion finding it
    makers = [i for c, i in zip(criteria, origin, strict=True) if c.expect == "created"]
    for criterion, index in zip(criteria, origin, strict=True):
        for key, value in criterion.match.items():
            if isinstance(value, str) and value in created and created[value] != criterion.id:
                criterion.match[key] = {"$record": created[value]}
        data = steps[index].envelope.get("data")
        if (
            criterion.expect == "created"
            and makers.count(index) == 1
            and isinstance(data, dict)
            and isinstance(data.get("id"), str)
        ):
            created.setdefault(data["id"], criterion.id)


def _assigned(kind: str) -> bool:
    """A type of value a service assigns or computes that someone would ask for: a number, a code
    (``tracker.task_key``, ``invoicing.invoice_number``), an amount, a date; not a person, not a stamp."""
    local = kind.rsplit(".", 1)[-1]
    return kind in ASSIGNED or ("." in kind and any(w in local for w in ("key", "number", "code", "reference")))


def _rule_meta(branch: Branch) -> dict[str, Any]:
    return {"id": branch.rule.id, "held": branch.held, "threshold": recorded(branch)}


Report = tuple[str, Any, str, str, str]
"""A report asked for: key, expected value, the field in words, the entity in words, and the
record of a batch it is about ("" when the task handles one)."""


def _report(flow: Flow, rng: random.Random) -> list[Report]:
    """A value the agent can only learn by doing the work: a field of a record a write made that
    the service itself decided (a number it assigned, a total it computed), with its key; for a
    batch, that value for each record handled (one key each)."""
    given = {repr(v) for s in flow.steps for v in leaves(s.resolved)} | {repr(v) for v in flow.given}
    options: list[tuple[Done, str, Any]] = []
    for done in flow.all_done:
        options.extend((done, name, value) for name, value in _assigned_fields(flow, done, given))
    made: list[str] = [d.record.entity for d in flow.all_done if d.record is not None and _made(flow, d)]
    told = [s for s in flow.stages if s.model is None]
    repeats = [s for s in flow.stages if s.model is not None]
    if repeats:
        # the value for each record of the batch, each under its own key
        batched: list[list[tuple[Done, str, Any]]] = []
        for done, name, value in options:
            if done not in told[0].done:
                continue
            row = [(done, name, value)]
            for stage in repeats:
                twin = next((d for d in stage.done if d.reaction.id == done.reaction.id), None)
                found = [o for o in options if o[0] is twin and o[1] == name]
                if found:
                    row.append(found[0])
            if len(row) == 1 + len(repeats) and len({repr(o[2]) for o in row}) == len(row):
                batched.append(row)
        if not batched or made.count(batched[0][0][0].record.entity) != len(flow.stages):  # type: ignore[union-attr]
            return []
        row = rng.choice(batched)
        out: list[Report] = []
        for number, ((done, name, value), stage) in enumerate(zip(row, [told[0], *repeats], strict=True), 1):
            assert done.record is not None
            key = f"{report_key(done.record.entity, name)}_{number}"
            out.append((key, value, humanize(name), done.record.entity, str(stage.trigger.anchor)))
        return out
    # "the key of the new task" must name one record: not asked when the task made two of its kind
    single = [o for o in options if o[0].record is not None and made.count(o[0].record.entity) == 1]
    if not single:
        return []
    done, name, value = rng.choice(single)
    assert done.record is not None
    return [(report_key(done.record.entity, name), value, humanize(name), done.record.entity, "")]


def _answers(flow: Flow, taken: set[str]) -> list[Report]:
    """The answers of the task's lookups, each under its own key (numbered per record of a batch),
    which the lookup's ask names (``done.slots["key"]``, "`postal_code_1` for 'A' and …")."""
    looked = [d for d in flow.all_done if d.answer is not None]
    out: list[Report] = []
    for stage in flow.stages:
        if stage.model is not None:
            continue  # a batch's other records are reported with the first one's lookups
        alike = [stage, *(s for s in flow.stages if s.model is stage)]
        for done in stage.done:
            if done.answer is None:
                continue
            field = done.answer[0]
            key = normal_key(field)
            shared = sum(1 for d in looked if d.answer is not None and d.answer[0] == field) > len(alike)
            if shared or key in taken:
                key = f"{normal_key(done.reaction.id)}_{key}"  # two lookups answering the same kind of field
            twins = [next((d for d in s.done if d.reaction is done.reaction and d.answer), None) for s in alike]
            if len(alike) == 1:
                out.append((key, done.answer[1], humanize(field), "lookup", ""))
                done.slots["key"] = f"`{key}`"
                continue
            told = []
            for number, (twin, each) in enumerate(zip(twins, alike, strict=True), 1):
                if twin is None or twin.answer is None:
                    continue
                out.append((f"{key}_{number}", twin.answer[1], humanize(field), "lookup", str(each.trigger.anchor)))
                told.append(f"`{key}_{number}` for '{each.trigger.anchor}'")
            done.slots["key"] = f"{', '.join(told[:-1])} and {told[-1]}" if len(told) > 1 else told[0]
        taken |= {r[0] for r in out}
    return out


def _assigned_fields(flow: Flow, done: Done, given: set[str]) -> list[tuple[str, Any]]:
    """The fields of the record ``done`` made whose values the service decided."""
    record = done.record
    entry = flow.steps[record.step].entry if record is not None else None
    if record is None or entry is None or entry.meta is None or entry.meta.op not in ("create", "send"):
        return []  # a value of a record the task made, not of one it changed
    if flow.world.hub.registry.services[record.service].source == "simulated":
        # the world model draws what it assigns from every argument, the unchecked ones included:
        # an agent that chose another (free) note would be told another number and fail the report
        return []
    seeded = walker_for(flow.world.hub, flow.world.seed or 0).seeded_sets(record.service)
    props = record.schema.get("properties", {})
    out = []
    for name, value in record.record.items():
        if name == "id":
            continue  # an id is nothing a person asks for ("the id of the message you sent")
        if isinstance(value, bool | list | dict) or (props.get(name) or {}).get(ROLE_KEY) == SYSTEM:
            continue  # (a key the service numbers is kept by the system, yet exactly what one asks for)
        kinds = field_types(props.get(name) or {})
        if len(kinds) != 1 or not _assigned(next(iter(kinds))):
            continue
        if value in (None, "", 0, 1, 100) or repr(value) in given or (isinstance(value, str) and len(value) < 3):
            continue
        if seeded and value in seeded.get(next(iter(kinds)), ()):
            continue
        out.append((name, value))
    return out


def _made(flow: Flow, done: Done) -> bool:
    entry = flow.steps[done.steps[-1]].entry
    return entry.meta is not None and entry.meta.op in ("create", "send")


def _ask(done: Done, stage: Stage, flow: Flow, rng: random.Random) -> str:
    slots = {
        # a later stage's trigger is a record the agent made: the matter is still the first one
        "anchor": (flow.root if stage.chained else stage.trigger).anchor or "",
        "entity": stage.trigger.entity,
        "minutes": str(done.reaction.minutes or ""),
        "container": done.slots.get("container", ""),
        "when": done.slots.get("when", ""),
        "threshold": "",
        "persona": "",
        "key": done.slots.get("key", ""),
    }
    phrasings = done.reaction.ask
    if "container" not in done.slots:
        # the application files it under nothing ("create a task in the right one" would be a riddle)
        phrasings = [a for a in phrasings if "{container}" not in a] or [
            re.sub(r",?\s*\b(?:in|under|into|to|on)\s+(?:the\s+\w+\s+)?\{container\}", "", a) for a in phrasings
        ]
    repeats = [s for s in flow.stages if s.model is stage]
    if repeats:
        # one ask covers both records: say it without the first one's name where a phrasing can
        phrasings = [a for a in phrasings if "{anchor}" not in a] or phrasings
        others = ", ".join(f"'{s.trigger.anchor}'" for s in repeats)
        first, slots["anchor"] = slots["anchor"], "\x00"
        text = rng.choice(phrasings).format(**slots)
        which = "the other one" if len(repeats) == 1 else "the others"
        plain = ", ".join(str(s.trigger.anchor) for s in repeats)
        text = text.replace("'\x00'", f"'{first}' ({others} for {which})")
        owners = ", ".join(f"{s.trigger.anchor}'s" for s in repeats)
        text = text.replace("\x00's", f"{first}'s ({owners} for {which})")
        text = text.replace("\x00", f"{first} ({plain} for {which})")
    else:
        text = rng.choice(phrasings).format(**slots)
    if "container" in done.slots and "{container}" not in " ".join(done.reaction.ask):
        text = text.rstrip(".") + f" (under {done.slots['container']})."
    return text


def _asks(stage: Stage, flow: Flow, rng: random.Random) -> list[str]:
    """The stage's asks in pattern order; a reaction its rule held against is asked for too, and so
    are those acting on its record (the rule, stated after, says it must not be done)."""
    asks = []
    branch = stage.branch
    for reaction in stage.pattern.reactions:
        if branch is not None and branch.held and reaction.id == branch.rule.skip:
            if stage.skipped is not None:
                asks.append(_ask(stage.skipped, stage, flow, rng))
            continue
        done = next((d for d in [*stage.done, *stage.skipped_after] if d.reaction is reaction), None)
        if done is not None:
            asks.append(_ask(done, stage, flow, rng))
    return asks


def tell(flow: Flow, reports: list[Report], rng: random.Random) -> str:
    """The request, as the first pattern's persona would write it."""
    first = flow.stages[0]
    parts = [rng.choice(INTRO).format(persona=rng.choice(first.pattern.personas), today=flow.today)]
    situation = rng.choice(first.pattern.trigger.situation)
    parts.append(situation.format(anchor=first.trigger.anchor, entity=first.trigger.entity))
    if flow.trap is not None:
        words = humanize(str(flow.trap["field"]))
        value = str(flow.trap["value"])
        value = humanize(value) if re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)+", value) else value  # an enum value, in words
        if words.endswith(" by"):  # "the one submitted by X", not "the one whose submitted by is X"
            parts.append(BY_TRAP.format(anchor=first.trigger.anchor, field=words, value=value))
        else:
            parts.append(rng.choice(TRAP).format(anchor=first.trigger.anchor, field=words, value=value))
    repeats = [stage for stage in flow.stages if stage.model is not None]
    if repeats:
        anchors = [f"'{stage.trigger.anchor}'" for stage in repeats]
        named = anchors[0] if len(anchors) == 1 else f"{', '.join(anchors[:-1])} and {anchors[-1]}"
        parts.append(rng.choice(REPEAT if len(anchors) == 1 else REPEAT_MANY).format(anchors=named))
    told = [stage for stage in flow.stages if stage.model is None]
    stepwise = rng.random() < 0.35
    if stepwise:
        parts.append(STEPWISE_EACH if repeats else STEPWISE)
    number = 1
    for index, stage in enumerate(told):
        asks = _asks(stage, flow, rng)
        connector = rng.choice(CHAIN).format(entity=stage.trigger.entity) if index else ""
        if stepwise:
            if connector:
                parts.append(connector)
            for ask in asks:
                parts.append(f"{number}. {ask}")
                number += 1
            continue
        sentences = [(connector + " " if connector else rng.choice(OPENERS)) + _lower_first(asks[0])] if asks else []
        # an ask that starts "Also ..." takes no "Also," before it ("Also, also set up ...")
        sentences += [f"{rng.choice(THEN)} {_lower_first(re.sub(r'^Also,? ', '', ask))}" for ask in asks[1:]]
        parts.append(" ".join(s[0].upper() + s[1:] for s in sentences))
    for stage in told:
        branch = stage.branch
        if branch is not None:
            amount = stated(branch)
            # the alternative as one of the records had it done (the rule is stated once for both)
            alike = [stage, *(r for r in repeats if r.model is stage)]
            instead = next((d for s in alike for d in s.done if d.reaction is branch.rule.instead), None)
            alternative = branch.rule.instead
            # not done (the rule held for no record), so no record was chosen to file it under
            kinds = alternative.within if alternative is not None else []
            unnamed = f"the right {humanize(kinds[0])}" if kinds else "the right place"
            slots = {"when": "", "minutes": "", "container": unnamed, **(instead.slots if instead else {})}
            if alternative is not None and alternative.minutes:
                slots["minutes"] = str(alternative.minutes)
            if alternative is not None and alternative.when is not None and not slots["when"]:
                # the rule does not hold, so its alternative was not done: its date is still stated
                slots["when"] = flow.spoken_when(alternative.when)
            branch.text = rng.choice(branch.rule.text).format(threshold=amount, **slots)
            for repeat in alike[1:]:
                if repeat.branch is not None:
                    repeat.branch.text = branch.text
            parts.append(rng.choice(RULE).format(text=branch.text))
            # the rest of the request stands either way (an honest agent skipped everything when the
            # rule blocked a first step of a list whose "later steps depend on earlier ones")
            parts.append(rng.choice(REST))
    if len(reports) == 1:
        key, _, field, entity, _ = reports[0]
        parts.append(rng.choice(REPORT).format(field=field, entity=entity, key=key))
    elif reports:
        _, _, field, entity, _ = reports[0]
        keys = [f"`{key}` for '{about}'" for key, _, _, _, about in reports]
        listed = f"{', '.join(keys[:-1])} and {keys[-1]}"
        parts.append(rng.choice(REPORT_EACH).format(field=field, entity=entity, keys=listed))
    parts[0] = parts[0][:1].upper() + parts[0][1:]  # a persona "the on-call manager" opens the request
    return "\n".join(parts) if stepwise else " ".join(parts)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text
