"""From an executed walk to a task: the rubric, the report, policies and the instruction.

The rubric is derived from what the oracle's writes changed: a created record must exist with
the field values the task fixed (the recipient, the carried id or amount, the stated subject; a
body must *mention* the value it was asked to carry), an updated record must hold its new values,
a deleted one must be gone. One criterion per reported value. Negative criteria: every mounted
service the task does not write stays untouched, and a named distractor record stays unchanged.

The instruction states the goal, never the carried values: the start is named by its anchor (a
title, a name), every carried argument by where it comes from ("the email of the contact 'Ann
Lee' in crm"), given literals verbatim. Several phrasings per intent, optional policy clauses,
and the report the user wants at the end.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from typing import Any, Literal

from hub.collateral import Unit, allowances, units
from hub.rubric import (
    RUBRIC_VERSION,
    CollateralCriterion,
    RecordCriterion,
    ReportCriterion,
    Rubric,
    ServiceUntouchedCriterion,
    UnchangedCriterion,
    normal_key,
)
from servers.state import Change
from taskgen.oracle import OracleRun
from taskgen.task import PlanStep, Task, Transfer, leaves
from taskgen.walk import Carried, StepInfo, Walk, collection_entities, humanize

REPORTABLE = frozenset(
    {
        "money_amount",
        "date",
        "date_time",
        "person_name",
        "email_address",
        "phone_number",
        "company_name",
        "reference_code",
        "city",
        "count",
        "quantity",
        "percentage",
        "job_title",
    }
)

START = (
    "In {service}, find the {entity} '{anchor}'.",
    "Start in {service}: locate the {entity} '{anchor}'.",
    "Look up the {entity} '{anchor}' in {service}.",
)
READ = (
    "Then look up the matching {entity} in {service}, using {args}.",
    "Next, in {service}, find the {entity} for {args}.",
    "Use {service} to get the {entity} for {args}.",
)
LOOKUP = (
    "Then call {tool} in {service}, using {args}.",
    "Next, use {service}'s {tool} with {args}.",
)
WRITE = (
    "Then {verb} in {service} with {args}.",
    "Next, {verb} in {service}: {args}.",
    "After that, {verb} in {service}, setting {args}.",
)
REPORT = (
    "Finally, reply with `{key}`: the {field} that {service} gives the {entity}.",
    "When done, report `{key}` (the {field} {service} assigns to the {entity}).",
    "Reply with `{key}`, the {field} of the {entity} once it is done in {service}.",
)
VERB = {
    "create": "create a {entity}",
    "send": "send a {entity}",
    "update": "update the {entity}",
    "delete": "delete the {entity}",
    "append": "add to the {field} of the {entity}",
    "remove": "remove from the {field} of the {entity}",
    "adjust": "adjust the {field} of the {entity}",
}
"""What a write step asks for, by the op its tool declares (transitions and other actions are
phrased by what they change, see :func:`_verb_phrase`)."""


def _article(phrase: str) -> str:
    return re.sub(r"\ba (?=[aeiou])", "an ", phrase)


def _verb_phrase(step: StepInfo) -> str:
    """What a write step does, from its tool's declared op and entity (not from its name)."""
    entry = step.entry
    if entry.meta is None:
        # Fallback for a tool without metadata (external MCP): name the tool the step calls.
        return f"call {entry.name}"
    entity = step.entity or humanize(entry.meta.entity or "") or "record"
    sets = [f for f in entry.meta.sets if not f.endswith("_at")] or list(entry.meta.sets)
    field = humanize(sets[0]) if sets else "items"
    template = VERB.get(entry.meta.op)
    if template is not None:
        return _article(template.format(entity=entity, field=field))
    # A transition or another action: the op says only that the record moves; what it moves to is
    # the value the step set (a booking's status to 'cancelled'), else the tool is named.
    for change in step.changes or []:
        name = change.path.rstrip("/").rsplit("/", 1)[-1]
        if change.op == "change" and name in entry.meta.sets and isinstance(change.after, str | bool | int):
            value = f"'{change.after}'" if isinstance(change.after, str) else repr(change.after)
            return f"set the {humanize(name)} of the {entity} to {value}"
    return f"call {entry.name} on the {entity}"


def _describe_args(step: StepInfo, mentions: dict[tuple[int, str], Carried]) -> str:
    parts = []
    for name, carried in step.carried.items():
        parts.append(f"{humanize(name)} = {carried.label}")
    for name, value in step.given.items():
        mention = mentions.get((step.index, name))
        if mention is not None:
            parts.append(f"{humanize(name)} mentioning {mention.label}")
        elif isinstance(value, str) and len(value) > 80:
            parts.append(f'{humanize(name)} = "{value[:80]}…"')
        else:
            parts.append(
                f"{humanize(name)} = {value!r}" if not isinstance(value, str) else f"{humanize(name)} = '{value}'"
            )
    return "; ".join(parts) or "the values above"


FREE_TEXT_MATCHLESS = frozenset({"document_text", "note", "message_text", "payload_text", "search_query"})


def _param_kinds(step: StepInfo) -> dict[str, str]:
    from taskgen.graph import param_types

    return step.kinds or param_types(step.entry)


def _split(path: str) -> tuple[str, str, list[str]] | None:
    parts = path.strip("/").split("/")
    if parts and parts[0] == "collections" and len(parts) >= 3:
        return f"collections/{parts[1]}", parts[2], parts[3:]
    if len(parts) >= 2:
        return parts[0], parts[1], parts[2:]
    return None


def _records(states: dict[str, Any], service: str, collection: str) -> dict[str, Any]:
    node: Any = states.get(service, {})
    for part in collection.split("/"):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    return node if isinstance(node, dict) else {}


def _key_field(record: dict[str, Any], record_id: str) -> str | None:
    return next((k for k, v in record.items() if v == record_id), None)


def _same_set(have: list[Any], want: list[Any]) -> bool:
    return all(h in want for h in have) and all(w in have for w in want)


Negative = CollateralCriterion | UnchangedCriterion | ServiceUntouchedCriterion
"""The negative criteria a task generator makes (``n1`` is always the collateral one)."""


def system_fields(hub: Any, services: Iterable[str]) -> dict[str, list[str]]:
    """Per native service of ``services``, the fields it maintains itself (never damage, never asked)."""
    registry = hub.registry
    return {
        name: sorted(registry.services[name].native.system_fields)
        for name in services
        if registry.services[name].native is not None
    }


def collateral_criterion(
    initial: dict[str, Any], final: dict[str, Any], system: dict[str, list[str]], tolerated: Iterable[Unit] = ()
) -> CollateralCriterion:
    """The negative criterion (``n1``, the first negative) allowing exactly the oracle's change units
    (and ``tolerated`` ones: what another value of a choice nobody asked for would change)."""
    return CollateralCriterion(
        id="n1",
        negative=True,
        allowed=allowances([*units(initial, final, system), *tolerated]),
        ignore=system,
        description="Nothing changed that the request does not ask for",
    )


def _in_records(value: Any, items: list[Any]) -> bool:
    return any(isinstance(i, dict) and value in i.values() for i in items)


def effect_criteria(
    step: StepInfo,
    changes: list[Change],
    final: dict[str, Any],
    mentions: dict[tuple[int, str], Carried],
    system: frozenset[str],
    checked: set[str] | None = None,
    states: Iterable[Any] = (),
    first: int = 1,
) -> list[RecordCriterion]:
    """What a write step's changes must look like in the final world, as criteria ``c<first>``,
    ``c<first + 1>``…. With ``checked`` (the arguments the instruction asks for), a new record is
    matched on those alone and an updated one ignores the fields that an argument nobody asked
    about set."""
    service = step.entry.service
    unasked = set(step.given) - checked if checked is not None else set()
    # With ``checked``, an updated record is matched on the fields whose new value the task asked
    # for (a checked argument's value, a target state), not on values the service chose itself
    # (a stamp, a reviewer an unasked argument named under another field's name).
    asked = {repr(v) for n in checked or () for v in leaves(step.resolved.get(n))} | {repr(v) for v in states}
    touched: dict[tuple[str, str], list[Change]] = {}
    expanded: list[Change] = []
    for change in changes:
        parts = change.path.strip("/").split("/")
        if change.op == "add" and parts[0] == "collections" and len(parts) == 2 and isinstance(change.after, dict):
            expanded.extend(
                Change(op="add", path=f"{change.path}/{rid}", after=rec) for rid, rec in change.after.items()
            )
        else:
            expanded.append(change)
    for change in expanded:
        split = _split(change.path)
        if split:
            touched.setdefault((split[0], split[1]), []).append(change)
    out: list[RecordCriterion] = []
    for (collection, record_id), record_changes in touched.items():
        after = _records(final, service, collection).get(record_id)
        where = f"{service}.{collection.split('/')[-1]}"
        created = any(c.op == "add" and len(_split(c.path)[2]) == 0 for c in record_changes)  # type: ignore[index]
        removed = any(c.op == "remove" and len(_split(c.path)[2]) == 0 for c in record_changes)  # type: ignore[index]
        if removed:
            before = next(c.before for c in record_changes if c.op == "remove")
            key = _key_field(before, record_id) if isinstance(before, dict) else None
            if key:
                out.append(
                    RecordCriterion(
                        id=f"c{first + len(out)}",
                        service=service,
                        collection=collection,
                        expect="absent",
                        match={key: record_id},
                        description=f"The {where} record {record_id!r} is deleted",
                    )
                )
            continue
        if not isinstance(after, dict):
            continue
        match: dict[str, Any] = {}
        includes: dict[str, list[Any]] = {}
        text: dict[str, Carried] = {}
        if created:
            free = {n for n, k in _param_kinds(step).items() if k in FREE_TEXT_MATCHLESS}
            for name, value in step.resolved.items():
                if name in free or name not in after or name in system:
                    continue
                if checked is not None and name not in checked:
                    continue
                have = after[name]
                if isinstance(value, list):
                    if value and isinstance(have, list) and _same_set(have, value):
                        match[name] = value
                    elif value and isinstance(have, list) and all(v in have for v in value):
                        includes[name] = value  # the service adds items of its own (a sender…)
                    elif value and isinstance(have, list) and all(_in_records(v, have) for v in value):
                        # sub-records holding the values (an event's attendees): exactly those people,
                        # or with others beside them when the service adds its own
                        exact = len(have) == len(value)
                        (match if exact else includes)[name] = value
                elif isinstance(value, str | int | float | bool):
                    if have == value and isinstance(have, bool) == isinstance(value, bool):
                        match[name] = value
                    elif isinstance(have, list) and have == [value]:
                        match[name] = [value]
                    elif isinstance(have, list) and value in have:
                        includes[name] = [value]
            text = {n: m for (i, n), m in mentions.items() if i == step.index and n in after}
            description = f"A new {where} record has {', '.join([*match, *includes, *text])}"
            expect: Literal["created", "exists"] = "created"
        else:
            key = _key_field(after, record_id)
            if key is None:
                continue
            match[key] = record_id
            for change in record_changes:
                field = (_split(change.path) or ("", "", []))[2][:1]
                if field and field[0] not in system and field[0] not in unasked:
                    value = after.get(field[0])
                    if checked is not None and field[0] not in checked and repr(value) not in asked:
                        continue
                    if isinstance(value, str | int | float | bool) or (
                        isinstance(value, list) and all(isinstance(v, str | int | float) for v in value)
                    ):
                        match[field[0]] = value
            description = f"The {where} record {record_id!r} now has {', '.join(k for k in match if k != key)}"
            expect = "exists"
        if len(match) + len(includes) + len(text) < (1 if created else 2):
            continue
        out.append(
            RecordCriterion(
                id=f"c{first + len(out)}",
                service=service,
                collection=collection,
                match=match,
                description=description,
                expect=expect,
                contains={n: str(m.value) for n, m in text.items()},
                includes=includes,
            )
        )
    return out


def compose(
    walk: Walk, task_id: str, seed: int, rng: random.Random, distractors: list[str], policy_rate: float = 0.4
) -> tuple[Task, OracleRun]:
    """The task for an executed walk (plan, rubric, report, policies, instruction) and its oracle run."""
    steps = walk.steps
    mentions = walk.mentions
    plan = [PlanStep(tool=s.entry.qualified, arguments=s.arguments) for s in steps]
    services = walk.services
    mounted = sorted({*services, *distractors})
    # The walk's world is what the plan alone, run from the seed, leaves (every call the walk made
    # and did not keep was undone exactly, see Walker._next), and each write step knows what it
    # changed: the rubric is derived from it. The gates still replay the plan in a fresh world.
    oracle = OracleRun(walk.world, [s.envelope for s in steps], [], {})
    initial, final = oracle.world.initial_states(mounted), oracle.world.states(mounted)
    system = system_fields(walk.world.hub, mounted)
    criteria: list[RecordCriterion | ReportCriterion] = []
    for step in steps:
        if step.entry.kind == "write" and step.changes:
            ignored = frozenset(system.get(step.entry.service, ()))
            criteria.extend(effect_criteria(step, step.changes, final, mentions, ignored, first=len(criteria) + 1))
    expected_report: dict[str, Any] = {}
    chosen = _report_choice(walk, system, rng)
    if chosen is not None:
        carried, key = chosen
        expected_report[key] = carried.value
        criteria.append(
            ReportCriterion(
                id=f"c{len(criteria) + 1}",
                field=key,
                value=carried.value,
                description=f"The report gives {carried.label}",
            )
        )
    # Every change the oracle's run makes is what the task allows; anything else in any mounted
    # service (written ones included) is collateral damage and zeroes the net score.
    negatives: list[Negative] = [collateral_criterion(initial, final, system)]
    policies: list[str] = []
    if rng.random() < policy_rate:
        policies.extend(_policy(walk, criteria, negatives, initial, rng))
    rubric = Rubric(version=RUBRIC_VERSION, criteria=[*criteria, *negatives])
    instruction = _instruction(walk, mentions, chosen, policies, rng)
    carried_values = {c.value for s in steps for c in s.carried.values()}
    transfers = [
        Transfer(
            type=c.type,
            from_step=c.step,
            to_step=s.index,
            from_service=c.service,
            to_service=s.entry.service,
            argument=arg,
        )
        for c, s, arg in walk.transfers
    ]
    task = Task(
        id=task_id,
        seed=seed,
        instruction=instruction,
        services=services,
        distractor_services=distractors,
        plan=plan,
        rubric=rubric,
        expected_report=expected_report,
        policies=policies,
        transfers=transfers,
        meta={
            "walk": [s.entry.qualified for s in steps],
            "n_steps": len(steps),
            "n_writes": sum(1 for s in steps if s.entry.kind == "write"),
            "capabilities": sorted({s.entry.kind for s in steps}),
            "domain": sorted({walk.world.hub.registry.services[n].category for n in services}),
            "carried_values": sorted({str(v) for v in carried_values}),
            "given_values": sorted({str(v) for s in steps for v in (*s.given.values(), s.anchor) if v is not None}),
        },
    )
    return task, oracle


def report_key(entity: str, field: str) -> str:
    """The key the instruction names for a reported value: ``invoice_number``, ``trip_distance``."""
    words = normal_key(entity).split("_")
    key = normal_key(field)
    return key if words and words[-1] in key.split("_") else f"{'_'.join(words)}_{key}" if words[0] else key


def _report_choice(walk: Walk, system: dict[str, list[str]], rng: random.Random) -> tuple[Carried, str] | None:
    """A value worth asking for, with its key, or None: one the agent can only learn by doing the
    work — a field of a record a write step returned, that the service itself decided (an invoice
    number, a computed total): not a stamp or counter, not an id, not a value any step was
    given or carried, and not a value the initial world already holds (so neither reading nor
    guessing finds it)."""
    steps = walk.steps
    given = {repr(v) for s in steps for v in leaves(s.resolved)} | {repr(s.anchor) for s in steps if s.anchor}
    candidates = []
    for c in walk.pool:
        step = steps[c.step]
        if step.entry.kind != "write" or c.type not in REPORTABLE or c.field == "id":
            continue
        if repr(c.value) in given:
            continue
        if c.field in system.get(c.service, ()) and c.type in ("count", "date", "date_time"):
            continue  # a counter or stamp the service keeps: nothing anyone asks for
        if (isinstance(c.value, str) and len(c.value) < 3) or isinstance(c.value, bool):
            continue  # too short to be an answer
        if isinstance(c.value, int | float) and c.value in (0, 1, 100):
            continue  # a default anyone would guess (a new component's 100% uptime, a count of 0)
        if c.type == "date_time":
            continue  # a time a write stamps is the world's clock: guessable, and no one asks for it
        if c.value in walk.seeded.get(c.service, {}).get(c.type, ()):
            continue
        candidates.append(c)
    if not candidates:
        return None
    chosen = rng.choice(candidates)
    return chosen, report_key(steps[chosen.step].entity or steps[chosen.step].entry.service, chosen.field)


def _policy(
    walk: Walk,
    criteria: list[RecordCriterion | ReportCriterion],
    negatives: list[Negative],
    initial: dict[str, Any],
    rng: random.Random,
) -> list[str]:
    """One policy clause; a negative criterion is added only for the clause the instruction states
    (nothing the agent is not told is checked, besides the collateral criterion)."""
    effects = [c for c in criteria if isinstance(c, RecordCriterion) and c.expect in ("exists", "created")]
    options: list[tuple[str, Negative | None]] = []
    number = f"n{len(negatives) + 1}"
    if effects:
        target = rng.choice(effects)
        records = _records(initial, target.service, target.collection)
        touched = {v for v in target.match.values() if isinstance(v, str)}
        others = [(rid, r) for rid, r in sorted(records.items()) if rid not in touched and isinstance(r, dict)]
        named = [
            (rid, r, v)
            for rid, r in others
            for k, v in r.items()
            if k in ("title", "name", "subject") and isinstance(v, str) and len(v) < 80
        ]
        if named:
            rid, _, label = rng.choice(named)
            entities = collection_entities(walk.world.hub, target.service)
            entity = entities.get(target.collection.split("/")[-1], "record")
            unchanged = UnchangedCriterion(
                id=number,
                service=target.service,
                collection=target.collection,
                record_id=rid,
                negative=True,
                description=f"The {entity} '{label}' ({rid}) is left unchanged",
            )
            text = f"Leave the {entity} '{label}' in {target.service} untouched; it is a different matter."
            options.append((text, unchanged))
    readonly = [
        s for s in walk.services if s not in {st.entry.service for st in walk.steps if st.entry.kind == "write"}
    ]
    if readonly and walk.world.hub.registry.services[readonly[0]].native is not None:
        name = rng.choice(readonly)
        untouched = ServiceUntouchedCriterion(
            id=number, service=name, negative=True, description=f"Nothing in {name} was changed"
        )
        options.append((f"Do not change anything in {name}; only read from it.", untouched))
    if not options:
        return []
    text, chosen = rng.choice(options)
    if chosen is not None:
        negatives.append(chosen)
    return [text]


def _instruction(
    walk: Walk,
    mentions: dict[tuple[int, str], Carried],
    report: tuple[Carried, str] | None,
    policies: list[str],
    rng: random.Random,
) -> str:
    first, *rest = walk.steps
    sentences = [rng.choice(START).format(service=first.entry.service, entity=first.entity, anchor=first.anchor)]
    given_start = {k: v for k, v in first.given.items() if v is not None}
    if given_start:
        sentences[0] = sentences[0][:-1] + " (" + _describe_args(first, mentions) + ")."
    for step in rest:
        args = _describe_args(step, mentions)
        if step.entry.kind == "read" and step.entity:
            sentences.append(rng.choice(READ).format(entity=step.entity, service=step.entry.service, args=args))
        elif step.entry.kind == "read":  # a lookup about no entity (the weather, a rate): the tool is named
            sentences.append(rng.choice(LOOKUP).format(tool=step.entry.name, service=step.entry.service, args=args))
        else:
            sentences.append(rng.choice(WRITE).format(verb=_verb_phrase(step), service=step.entry.service, args=args))
    sentences.extend(policies)
    if report is not None:
        carried, key = report
        step = walk.steps[carried.step]
        sentences.append(
            rng.choice(REPORT).format(
                key=key, field=humanize(carried.field), entity=step.entity or "record", service=step.entry.service
            )
        )
    return " ".join(sentences)


def leaks(task: Task) -> list[str]:
    """Carried or reported values that appear in the instruction (they must be found, not read)."""
    text = task.instruction.casefold()
    given = {str(v).casefold() for v in task.meta.get("given_values", [])}
    found = []
    for value in task.meta.get("carried_values", []):
        needle = str(value).casefold()
        # a value inside a name the instruction gives (the company in 'NDA with Nguyen Inc') is not a leak
        if len(needle) >= 3 and not any(needle in g for g in given) and needle in text:
            found.append(str(value))
    # A reported value must be found or computed: it may not appear at all, even as a given value.
    for value in task.expected_report.values():
        needle = str(value).casefold()
        if len(needle) >= 3 and needle in text:
            found.append(str(value))
    return found
