"""Instantiating a business workflow pattern (:mod:`taskgen.pattern`) in a seeded world.

Like a walk (:mod:`taskgen.walk`), a workflow is executed while it is built, in a scratch world of
the task's seed, and every call it keeps becomes a step of the oracle plan; a write it drops is
undone exactly. What differs is what chooses the calls: the pattern's trigger picks a seeded
record in the state the situation describes (a deal won), and each reaction picks a write of the
declared op on the declared entity kind in some service, filling its parameters *by role* from
the records seen so far. A parameter that needs a record of the reaction's own service (the
customer an invoice is for) is found by a lookup (that service's listing, searched for the linked
value), which is one more step of the plan and nothing the instruction spells out.

Each step records which of its arguments the task asks for (``checked``): linked values, ids found
from them, stated dates and named records. The rubric checks those and nothing else, so an agent
free to word a title or pick a priority is not penalised for it.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from typing import Any

from hub.core import Hub
from hub.registry import ToolEntry
from servers.roles import ROLE_KEY, SYSTEM
from servers.state import diff
from servers.types import SEMANTIC_KEY
from taskgen.flowmodel import Branch, Done, Flow, Located, record_schema
from taskgen.graph import field_types, param_types
from taskgen.pattern import Reaction, Rule
from taskgen.rules import rule_branch
from taskgen.task import leaves, resolve
from taskgen.tolerance import alternatives
from taskgen.toolindex import ToolIndex, trigger_needs
from taskgen.walk import (
    FREE_TEXT,
    Carried,
    StepInfo,
    Walker,
    WalkError,
    anchor_of,
    collection_entities,
    humanize,
    meaningful,
    records_of,
    resolve_schema,
    same_state,
)

TEXT_TYPES = FREE_TEXT | {"tag"}
TRAP_RATE = 0.5
"""Share of triggers taken from a name several seeded records share (when the pattern allows one)."""
ENUM: frozenset[str] = frozenset()
QUALIFIER_TYPES: tuple[frozenset[str], ...] = (
    frozenset({"company_name", "person_name"}),
    frozenset({"city", "email_address"}),
    ENUM,
    frozenset({"date"}),
)
"""What a person tells namesakes apart by, in the order they would reach for it."""
QUERY_TYPES = ("search_query",)
MASTERS: dict[str, tuple[str, ...]] = {
    "customer": ("account", "customer", "client"),
    "employee": ("employee", "person", "staff"),
    "contact": ("contact",),
    "vendor": ("supplier", "vendor"),
    "patient": ("patient",),
    "student": ("student",),
    "member": ("member",),
}
"""Per role, the entity kinds that are its records of reference (where a person looks it up)."""
PERSON_KINDS = frozenset(
    {"member", "patient", "student", "employee", "candidate", "tenant", "guest", "donor", "customer", "client",
     "contact", "lead", "applicant", "new_hire", "player", "rider", "driver", "attendee", "subscriber", "traveler",
     "borrower", "owner", "child", "visitor", "diner", "patron", "person", "staff", "user", "backer", "supplier",
     "partner", "affiliate", "registrant", "respondent", "pro", "caregiver", "tutor", "stylist", "technician",
     "agent", "account", "importer", "courier", "adjuster"}
)  # fmt: skip
"""Entity kinds whose records are a person or an organisation: known by their own name."""
INACTIVE = frozenset({"archived", "closed", "inactive", "cancelled", "deleted", "retired"})
"""States of a record nobody files new work under (an archived project)."""
PEOPLE_TYPES = frozenset({"email_address", "person_name", "phone_number"})
FRESH_TYPES = frozenset({"reference_code", "product_sku", "username", "url", "web_domain"})
"""Types whose values identify a record: a new one gets a new value, not a seeded one's."""
PAGE_LIMIT = ("page_limit",)


class Workflows:
    """Instantiates patterns over one hub for one seed (cached indexes of its tools)."""

    def __init__(self, hub: Hub, walker: Walker) -> None:
        self.hub, self.walker = hub, walker
        index = self.index = ToolIndex(hub.registry)
        self.writes, self.listings, self.id_entity = index.writes, index.listings, index.id_entity
        self.field_roles, self.field_kinds = index.field_roles, index.field_kinds
        self._by_text: dict[str, dict[str, list[dict[str, Any]]]] = {}
        today = dt.datetime.fromisoformat(walker.clock.replace("Z", "+00:00"))
        self.today = today

    # -- running steps -----------------------------------------------------------------------

    def _call(
        self, flow: Flow, entry: ToolEntry, args: dict[str, Any], carried: dict[str, Carried], given: dict[str, Any]
    ) -> StepInfo | None:
        world = flow.world
        resolved = resolve(args, [s.envelope for s in flow.steps])
        write = entry.kind == "write" and entry.service in world.stateful_services
        saved = world.savepoint(entry.service) if write else None
        envelope = world.call(entry.qualified, resolved)
        if not envelope.get("success"):
            if saved is not None:
                world.rollback(entry.service, saved)
            return None
        step = StepInfo(len(flow.steps), entry, args, resolved, envelope, given, carried, kinds=param_types(entry))
        if saved is not None:
            before, after = saved.snapshot(), world.slot(entry.service).snapshot()
            changes = diff(before, after)
            if same_state(before, after) or not meaningful(changes):
                world.rollback(entry.service, saved)
                return None
            step.changes = changes
        flow.steps.append(step)
        return step

    def _undo(self, flow: Flow, mark: int, saved: dict[str, Any]) -> None:
        del flow.steps[mark:]
        for name, slot in saved.items():
            flow.world.rollback(name, slot)
        for index in list(flow.checked):
            if index >= mark:
                del flow.checked[index]
        for key in [k for k in flow.mentions if k[0] >= mark]:
            del flow.mentions[key]

    def located(self, step: StepInfo, want: str | None = None) -> list[Located]:
        collections = collection_entities(self.hub, step.entry.service)
        out = []
        for path, record, schema, entity in records_of(step.entry, step.envelope.get("data"), collections):
            if want is not None and record.get("id") != want:
                continue
            out.append(Located(step.index, path, record, schema, entity, step.entry.service, anchor_of(record, schema)))
        return out

    # -- the trigger -------------------------------------------------------------------------

    def trigger(self, flow: Flow, rng: random.Random) -> Located:
        spec = flow.pattern.trigger
        options = [(s, e) for (s, e) in self.listings if e in spec.entity]
        rng.shuffle(options)
        for service, entity in options[:6]:
            for entry in self.listings[(service, entity)]:
                args = self._page_args(entry)
                step = self._call(flow, entry, args, {}, {})
                if step is None:
                    continue
                needs = trigger_needs(flow.pattern)
                eligible = [
                    r
                    for r in self.located(step)
                    if r.anchor
                    and self.in_state(r.record, spec.state)
                    and all(r.fields(role, kind or None) for role, kind in needs)
                    and not self.is_user(r, needs)
                ]
                found = [r for r in eligible if r.anchor and self.unique(service, r.anchor)]
                listed = self.located(step)
                trapped = [
                    (r, q) for r in eligible if r not in found for q in [self.qualifier(service, r, listed)] if q
                ]
                if trapped and (not found or rng.random() < TRAP_RATE):
                    chosen, qualifier = rng.choice(trapped)
                    flow.trap = {"kind": "near_duplicate", **qualifier}
                    flow.given.append(qualifier["value"])
                elif found:
                    chosen, qualifier = rng.choice(found), None
                else:
                    del flow.steps[step.index :]
                    continue
                chosen.entity = humanize(entity)
                flow.references.append({"service": service, "value": str(chosen.anchor), "qualifier": qualifier})
                flow.given.append(chosen.anchor)
                return chosen
        raise WalkError("no_trigger")

    def is_user(self, record: Located, needs: set[tuple[str, str]]) -> bool:
        """Whether a person the pattern takes from the trigger (its author, owner, requester …) is
        the user the agent works for: "email the author about it" would be a note to oneself, and
        "book a review with the author" a meeting with no one (the calendar drops the organiser)."""
        me = self.walker.synth.world.me
        mine = {me.email.casefold(), me.name.casefold()}
        return any(
            str(value).casefold() in mine for role, kind in needs for _, value, _ in record.fields(role, kind or None)
        )

    def qualifier(self, service: str, record: Located, siblings: list[Located]) -> dict[str, Any] | None:
        """What tells ``record`` apart from the other seeded records sharing its name (a stale
        copy, a namesake among ``siblings``, the records of its kind): a field whose value none of
        the records holding that name has, as a person would say it (the company, the person, the
        status, the date), or None."""
        anchor = record.anchor
        if anchor is None or self.hub.registry.services[service].native is None:
            return None
        others = [r for r in self._holding(service).get(anchor, []) if r.get("id") != record.record.get("id")]
        namesakes = [s for s in siblings if s.anchor == anchor and s.record.get("id") != record.record.get("id")]
        if not namesakes or record.record.get("id") not in self.walker.seeded_ids(service):
            return None  # "there are several 'X'" must be true where the agent looks: among records of its kind
        props = record.schema.get("properties", {})
        for kinds in QUALIFIER_TYPES:
            for name, value in record.record.items():
                if not isinstance(value, str) or value == anchor or not value or name == "id":
                    continue
                prop = resolve_schema(dict(props.get(name) or {}), {})
                if not (field_types(props.get(name) or {}) & kinds or (kinds == ENUM and "enum" in prop)):
                    continue
                if prop.get(ROLE_KEY) == SYSTEM or (props.get(name) or {}).get(ROLE_KEY) == SYSTEM:
                    continue
                if all(other.get(name) != value for other in others):
                    return {"field": name, "value": value}
        return None

    def _holding(self, service: str) -> dict[str, list[dict[str, Any]]]:
        """Text value -> the seeded records of ``service`` holding it in some field (built once)."""
        found = self._by_text.get(service)
        if found is None:
            found = self._by_text[service] = {}
            for record in self.walker.seeded_records(service):
                for value in {v for v in record.values() if isinstance(v, str)}:
                    found.setdefault(value, []).append(record)
        return found

    def unique(self, service: str, anchor: str) -> bool:
        """Whether ``anchor`` names exactly one seeded record of ``service`` (in any text field)."""
        if self.hub.registry.services[service].native is None:
            return False
        return self.walker.anchor_counts(service)[anchor] == 1

    @staticmethod
    def in_state(record: dict[str, Any], states: list[str]) -> bool:
        return not states or any(isinstance(v, str) and v in states for v in record.values())

    @staticmethod
    def _page_args(entry: ToolEntry) -> dict[str, Any]:
        props = entry.input_schema.get("properties", {})
        kinds = param_types(entry)
        for name, kind in kinds.items():
            if kind in PAGE_LIMIT:
                limit = resolve_schema(dict(props.get(name) or {}), entry.input_schema.get("$defs", {}))
                return {name: int(limit.get("maximum", 100))}
        return {}

    # -- reactions ---------------------------------------------------------------------------

    def react(self, flow: Flow, reaction: Reaction, rng: random.Random, used: set[str]) -> Done | None:
        """Carry out ``reaction`` in some service (None when no service can)."""
        if reaction.lookup:
            return self.look_up(flow, reaction, rng, used)
        candidates = self.index.writers(reaction)
        follows = next((d for d in flow.done if d.reaction.id == reaction.follows), None)
        twin = self.twin(flow, reaction)
        if twin is not None:
            # the second record is handled exactly like the first: the one ask covers both
            candidates = [e for e in candidates if e.qualified == twin.tool]
        elif reaction.follows:
            if follows is None:
                return None
            candidates = [e for e in candidates if e.service == follows.service]
        elif not reaction.same_service:
            candidates = [e for e in candidates if e.service != flow.trigger.service and e.service not in used]
        else:
            candidates = [e for e in candidates if e.service == flow.trigger.service]
        candidates = [e for e in candidates if e.service not in flow.unmounted and self._feasible(flow, reaction, e)]
        rng.shuffle(candidates)
        for entry in candidates[:12]:
            done = self._attempt(flow, reaction, entry, rng)
            if done is not None:
                return done
        return None

    def look_up(self, flow: Flow, reaction: Reaction, rng: random.Random, used: set[str]) -> Done | None:
        """Ask the question of a lookup reaction in some service: one read, whose answer is reported.

        The answer must be something the agent can only learn by asking (not a value it was given)
        and must not depend on anything the instruction leaves open: the lookup is filled from its
        inputs alone, and the world model draws an answer from the question's required arguments."""
        trigger = flow.trigger.schema.get("properties", {})
        if any(set(field_types(prop)) & set(reaction.answer) for prop in trigger.values()):
            # the record already holds such a value (an affiliate's website): asked for it, an agent
            # rightly reads it there, and the world's answer to the question is another thing
            return None
        twin = self.twin(flow, reaction)
        # a lookup asking about an earlier lookup's answer asks the same service again (its quote
        # for the ticker it found), although that service was used in this stage
        chained = {d.service for d in flow.done if d.answer is not None and d.reaction.id in _heads(reaction)}
        options = [
            o
            for o in self.index.lookup_tools(reaction)
            if o[0].service not in flow.unmounted
            and (twin.tool == o[0].qualified if twin is not None else o[0].service not in used - chained)
        ]
        rng.shuffle(options)
        for entry, plan, field in options[:6]:
            kinds = param_types(entry)
            args: dict[str, Any] = {}
            carried: dict[str, Carried] = {}
            given: dict[str, Any] = {}
            for name, source in plan.items():
                if source.startswith("="):
                    args[name] = given[name] = source[1:]  # a value the ask states
                    continue
                link = self._carry(flow, source, kinds.get(name, ""))
                if link is None:
                    break
                args[name], carried[name] = {"$ref": link.ref}, link
            else:
                mark = len(flow.steps)
                step = self._call(flow, entry, args, carried, given)
                if step is None:
                    continue
                data = step.envelope.get("data")
                value = data.get(field) if isinstance(data, dict) else None
                asked = {repr(v) for v in leaves(step.resolved)} | {repr(v) for v in flow.given}
                if (
                    isinstance(value, bool)
                    or not isinstance(value, str | int | float)
                    or value == ""
                    or (repr(value) in asked)
                ):
                    del flow.steps[mark:]
                    continue
                flow.given.extend(given.values())
                return Done(reaction, [step.index], None, entry.service, {}, entry.qualified, answer=(field, value))
        return None

    @staticmethod
    def twin(flow: Flow, reaction: Reaction) -> Done | None:
        """How the stage the current one repeats did ``reaction`` (None outside a repeat)."""
        model = flow.stage.model
        if model is None:
            return None
        held = [model.skipped, *model.skipped_after]
        return next((d for d in [*model.done, *held] if d is not None and d.reaction.id == reaction.id), None)

    def _feasible(self, flow: Flow, reaction: Reaction, entry: ToolEntry) -> bool:
        """Whether ``entry`` could take every link and find every record it needs, judged from its
        schema alone (what :meth:`_fill` would find out by calling lookups)."""
        kinds = param_types(entry)
        roles = self.index.link_roles(entry)
        if not set(reaction.links) <= roles:
            return False
        if reaction.within and not any(
            kind in self.id_entity and self.id_entity[kind][1] in reaction.within for kind in kinds.values()
        ):
            return False  # "a task in the project 'X'": a tool that files tasks under no project is another thing
        if reaction.minutes is not None and not ("end" in roles or "duration_minutes" in kinds.values()):
            return False  # a "15-minute huddle" is not a ticketed public event with no end
        made = {flow.trigger.service} | {d.service for d in flow.done}
        for name in entry.input_schema.get("required", []):
            kind = kinds.get(name, "")
            if not (kind.endswith("_id") and kind in self.id_entity):
                continue
            service, entity = self.id_entity[kind]
            own = entry.meta is not None and entity == entry.meta.entity and entry.meta.op in ("create", "send")
            if own:
                return False  # a reply or a copy of another record of its kind, not a new one
            if service in made or entity in reaction.within:
                continue
            fields = set(self.field_roles.get((service, entity), {}).values())
            if not fields & set(reaction.links):
                return False
        return True

    def _attempt(self, flow: Flow, reaction: Reaction, entry: ToolEntry, rng: random.Random) -> Done | None:
        flow.refused.clear()  # containers refused to an earlier write say nothing about this one
        mark = len(flow.steps)
        saved = (
            {entry.service: flow.world.savepoint(entry.service)}
            if entry.service in flow.world.stateful_services
            else {}
        )
        step = None
        # A refusal may want an optional note (a resolution, a reason), or another named container
        # (a channel the user has not joined): a second and third fill draw those anew.
        tries = (False, True, True) if reaction.within else (False, True)
        for generous in tries:
            filled = self._fill(flow, reaction, entry, rng, generous)
            if filled is None:
                self._undo(flow, mark, saved)
                return None
            args, carried, given, checked, slots, mention = filled
            step = self._call(flow, entry, args, carried, given)
            if step is not None or (not self._has_optional_text(entry) and not reaction.within):
                break
            self._undo(flow, mark, saved)
            if "named" in slots:  # the container it was filed under is named no more
                flow.references = [r for r in flow.references if r.get("value") != slots["named"]]
                flow.given = [v for v in flow.given if v != slots["named"]]
                flow.refused.add(slots["named"])  # the next try files it elsewhere (a channel one is in)
        if step is None or not self._reached(step, reaction):
            self._undo(flow, mark, saved)
            return None
        flow.checked[step.index] = checked
        flow.tolerated.extend(alternatives(self.hub, flow.world, entry, step, checked, saved))
        if mention is not None:
            flow.mentions[(step.index, mention[0])] = mention[1]
        data = step.envelope.get("data")
        if isinstance(data, dict) and "id" in data:
            # the record the write made or changed is the answer itself (not the attendees inside it)
            schema = record_schema(entry)
            located = [Located(step.index, "data", data, schema, "", entry.service, anchor_of(data, schema))]
        else:
            located = self.located(step)
        record = located[0] if len(located) == 1 else None
        if record is not None:
            record.entity = humanize(entry.meta.entity or "") if entry.meta else record.entity
        return Done(reaction, list(range(mark, step.index + 1)), record, entry.service, slots, entry.qualified)

    @staticmethod
    def _has_optional_text(entry: ToolEntry) -> bool:
        required = set(entry.input_schema.get("required", []))
        return any(k in TEXT_TYPES and n not in required for n, k in param_types(entry).items())

    @staticmethod
    def _reached(step: StepInfo, reaction: Reaction) -> bool:
        """A transition reaction must move the record into one of its ``to`` states."""
        if not reaction.to:
            return True
        return any(c.op == "change" and c.after in reaction.to for c in step.changes or [])

    def _source(self, flow: Flow, source: str) -> Located | None:
        head = source.split(".", 1)[0]
        if head == "trigger":
            return flow.trigger
        done = next((d for d in flow.done if d.reaction.id == head), None)
        if done is None:
            return None
        if done.record is None and done.answer is not None:
            # an earlier lookup's answer (the ticker found for a company, then quoted): what it
            # returned, read like a record, so a later lookup can ask about it
            step = flow.steps[done.steps[-1]]
            data = step.envelope.get("data")
            return (
                Located(step.index, "data", data, record_schema(step.entry), "lookup", done.service)
                if isinstance(data, dict)
                else None
            )
        return done.record

    def param_role(self, entry: ToolEntry, name: str) -> str | None:
        """A parameter's role (see :meth:`taskgen.toolindex.ToolIndex.param_role`)."""
        return self.index.param_role(entry, name)

    def _linked(self, flow: Flow, reaction: Reaction, role: str | None, kind: str) -> Carried | None:
        if role is None or role not in reaction.links:
            return None
        return self._carry(flow, reaction.links[role], kind)

    def _carry(self, flow: Flow, link: str, kind: str) -> Carried | None:
        """The value ``link`` (``<step>.<role>[:<type>]``) names, of type ``kind``, as carried."""
        source, _, wanted = link.partition(":")
        if wanted and wanted != kind:
            return None
        located = self._source(flow, source)
        if located is None:
            return None
        role_path = source.split(".", 1)[1]
        if ">" in role_path:
            via, wanted_role = role_path.split(">", 1)
            return self._hop(flow, located, via, wanted_role, kind)
        matches = located.fields(role_path, kind)
        if not matches:
            return None
        name, value, _ = matches[0]
        ref = f"steps.{located.step}.{located.path}.{name}"
        if isinstance(located.record.get(name), list):
            ref += ".0"
        label = f"the {humanize(name)} of the {located.entity}"
        return Carried(kind, value, located.step, ref, located.service, name, label)

    def _hop(self, flow: Flow, located: Located, via: str, wanted: str, kind: str) -> Carried | None:
        """The ``wanted``-role value (of type ``kind``) of the one record of another service that
        holds ``located``'s ``via``-role value in its one ``via`` field: the customer's account
        owner, found in the CRM by the customer's name. The listing that finds it is a step of the
        plan. The records of the role's own kind (accounts, customers, employees) are searched
        first; the hop holds only when every application searched gives the same value, since an
        agent told "the account owner" cannot know which of two different owners is meant."""
        keys = [(v, k) for _, v, k in located.fields(via) if isinstance(v, str)]
        options = [
            (service, entity, roles)
            for (service, entity), roles in self.field_roles.items()
            if service != located.service and via in roles.values() and wanted in roles.values()
        ]
        masters = MASTERS.get(via)
        # "the customer's account owner" lives in the customers' records of reference, never in a
        # quote or a backed-up resource that happens to name a customer and an owner
        tiers = [[o for o in options if o[1] in masters]] if masters else [options]
        for tier in tiers:
            found: list[tuple[ToolEntry, dict[str, Any], str, str, Any]] = []
            for service, entity, roles in sorted(tier):
                for listing in self.listings.get((service, entity), [])[:1]:
                    hit = self._hop_lookup(flow, listing, roles, via, wanted, kind, keys)
                    if hit is not None:
                        found.append(hit)
            if found:
                # Two applications may name two different people (the CRM's account executive, the
                # success platform's manager). The system of record answers (a hand-written core
                # application first, then by name) and the others stay off the task's gateway, so
                # "the account owner" means one person there; unless one is already part of the task.
                found.sort(key=lambda f: self.index.core_first(f[0].service))
                others = {f[0].service for f in found if repr(f[4]) != repr(found[0][4])}
                if others & set(flow.services) or self._stranded(flow, others):
                    return None  # the other application is part of the task: ambiguous there
                flow.unmounted |= others
                listing, args, path, name, value = found[0]
                step = self._call(flow, listing, args, {}, {})
                if step is None:
                    return None
                ref = f"steps.{step.index}.{path}.{name}"
                return Carried(kind, value, step.index, ref, listing.service, name, f"the {humanize(name)}")
        return None

    def _stranded(self, flow: Flow, unmounted: set[str]) -> bool:
        """Whether keeping ``unmounted`` off the gateway leaves a reaction of the current stage not
        done yet (or a rule's alternative) no service to be done in."""
        done = {d.reaction.id for d in flow.done}
        pattern = flow.stage.pattern
        pending = [r for r in pattern.reactions if r.id not in done]
        pending += [rule.instead for rule in pattern.rules if rule.instead is not None]
        away = unmounted | flow.unmounted
        return any(
            offering and offering <= away for offering in ({e.service for e in self.index.writers(r)} for r in pending)
        )

    def _hop_lookup(
        self,
        flow: Flow,
        listing: ToolEntry,
        roles: dict[str, str],
        via: str,
        wanted: str,
        kind: str,
        keys: list[tuple[str, str]],
    ) -> tuple[ToolEntry, dict[str, Any], str, str, Any] | None:
        """(listing, arguments, path, field, value) of the one record ``listing`` finds for a key,
        or None; the trial call leaves no step behind."""
        kinds = param_types(listing)
        query = next((n for n, k in kinds.items() if k in QUERY_TYPES), None)
        index = self.field_kinds.get((listing.service, (listing.meta.entity if listing.meta else None) or ""), {})
        for value, vkind in keys:
            # the one field of the key's role and type (two, like an employee and a buddy: no key)
            candidates = [f for f, r in roles.items() if r == via and vkind in index.get(f, ())]
            if len(candidates) != 1:
                continue
            field = candidates[0]
            filters = [n for n, k in kinds.items() if k == vkind and n == field]
            args = {filters[0]: value} if filters else {query: value} if query else None
            if args is None:
                continue
            args = {**args, **self._page_args(listing)}
            step = self._call(flow, listing, args, {}, {})
            if step is None:
                continue
            hits = [r for r in self.located(step) if r.record.get(field) == value]
            del flow.steps[step.index :]
            wanted_fields = hits[0].fields(wanted, kind) if len(hits) == 1 else []
            if wanted_fields:
                name, carried, _ = wanted_fields[0]
                path = hits[0].path + (f".{name}.0" if isinstance(hits[0].record.get(name), list) else f".{name}")
                return (
                    listing,
                    args,
                    path.rsplit(f".{name}", 1)[0],
                    name + (".0" if path.endswith(".0") else ""),
                    carried,
                )
        return None

    def _fill(
        self, flow: Flow, reaction: Reaction, entry: ToolEntry, rng: random.Random, generous: bool = False
    ) -> tuple[dict[str, Any], dict[str, Carried], dict[str, Any], set[str], dict[str, str], Any] | None:
        kinds = param_types(entry)
        props = entry.input_schema.get("properties", {})
        defs = entry.input_schema.get("$defs", {})
        required = set(entry.input_schema.get("required", []))
        args: dict[str, Any] = {}
        carried: dict[str, Carried] = {}
        given: dict[str, Any] = {}
        checked: set[str] = set()
        slots: dict[str, str] = {}
        mention: tuple[str, Carried] | None = None
        when = self._when(reaction)
        linked: set[str] = set()  # roles carried (or used by a lookup): every link must be
        pairs: set[tuple[str, str]] = (
            set()
        )  # (role, type) carried: each fills one parameter (a name and an email may both)
        ordered = sorted(props, key=lambda n: n not in required)
        for name in ordered:
            kind = kinds.get(name, "")
            prop = resolve_schema(dict(props[name]), defs)
            listed = prop.get("type") == "array"
            item = resolve_schema(dict(prop.get("items") or {}), defs) if listed else prop
            role = self.param_role(entry, name)
            link = self._linked(flow, reaction, role, kind) if kind and (role, kind) not in pairs else None
            if link is not None and role is not None:
                args[name] = [{"$ref": link.ref}] if listed else {"$ref": link.ref}
                carried[name] = link
                checked.add(name)
                linked.add(role)
                pairs.add((role, kind))
                continue
            if kind.endswith("_id") and kind in self.id_entity:
                if name not in required and not self._is_trigger_id(flow, kind):
                    continue
                found = self._record_id(flow, reaction, entry, kind, rng, slots, linked)
                if found is None:
                    return None
                args[name], carried[name] = {"$ref": found.ref}, found
                checked.add(name)
                continue
            targets = [v for v in item.get("enum", []) if v in reaction.to]
            if targets:
                args[name] = given[name] = targets[0]
                checked.add(name)
                continue
            if kind in ("date", "date_time") and when is not None and role != SYSTEM:
                value = self._date_value(kind, role, reaction, when)
                if value is None:
                    if name in required:
                        return None
                    continue
                args[name] = given[name] = [value] if listed else value
                checked.add(name)
                slots["when"] = self._spoken(when, kind)
                flow.given.append(value)
                continue
            if kind == "duration_minutes" and reaction.minutes is not None:
                # "book a 60-minute session": the length asked for, checked (a drawn one would differ)
                length: int | float = reaction.minutes if item.get("type") != "number" else float(reaction.minutes)
                args[name] = given[name] = length
                checked.add(name)
                continue
            if name not in required and not (generous and kind in TEXT_TYPES - {"tag", "search_query"}):
                continue
            if kind in TEXT_TYPES or (not kind and item.get("type") == "string" and "enum" not in item):
                text, mentioned = self._text(flow, reaction, name, kind)
                args[name] = given[name] = [text] if listed else text
                if mentioned is not None and kind in ("document_text", "message_text", "note"):
                    mention = (name, mentioned)
                continue
            if "const" in item or item.get("type") == "boolean":
                value = item.get("const", item.get("default", True))  # a required confirmation (consent given)
                args[name] = given[name] = value
                continue
            if "enum" in item:
                preferred = [v for v in reaction.choose if v in item["enum"]]
                value = preferred[0] if preferred else rng.choice(item["enum"])
                args[name] = given[name] = [value] if listed else value
                continue
            current = self._current(flow, entry, name)
            if current is None and kind in PEOPLE_TYPES and entry.meta is not None and entry.meta.op == "send":
                return None  # a message to someone nobody named: the agent could not know who
            value = current if current is not None else self._plausible(entry.service, kind, item, rng)
            if value is None:
                return None
            args[name] = given[name] = [value] if listed else value
        if linked != set(reaction.links):
            return None  # the instruction promises every link: a tool that cannot take one is not it
        return args, carried, given, checked, slots, mention

    def _is_trigger_id(self, flow: Flow, kind: str) -> bool:
        ident = resolve_schema(dict(flow.trigger.schema.get("properties", {}).get("id") or {}), {})
        return ident.get(SEMANTIC_KEY) == kind

    def _record_id(
        self,
        flow: Flow,
        reaction: Reaction,
        entry: ToolEntry,
        kind: str,
        rng: random.Random,
        slots: dict[str, str],
        linked: set[str],
    ) -> Carried | None:
        """The id of the record of ``entry``'s service a parameter of type ``kind`` needs: the
        trigger itself, a record an earlier step made there, one found by a linked value, the only
        record of its kind, or one the instruction names by its title."""
        service, entity = self.id_entity[kind]
        if service != entry.service:
            return None
        # the current stage's own records first, the latest first: a batch's second record's task is
        # commented on, not the first record's
        earlier = [d for stage in flow.stages[:-1] for d in stage.done]
        for located in [flow.trigger, *(d.record for d in [*reversed(flow.done), *earlier] if d.record is not None)]:
            ident = located.schema.get("properties", {}).get("id") or {}
            if located.service == service and resolve_schema(dict(ident), {}).get(SEMANTIC_KEY) == kind:
                ref = f"steps.{located.step}.{located.path}.id"
                return Carried(kind, located.record["id"], located.step, ref, service, "id", f"the {entity}")
        for listing in self.listings.get((service, entity), []):
            found = self._lookup(flow, reaction, listing, kind, linked)
            if found is not None:
                return found
        if entity not in reaction.within:
            return None  # acting on some record nobody named (replying to a random message): not this tool
        return self._named(flow, reaction, service, entity, kind, rng, slots)

    def _lookup(
        self, flow: Flow, reaction: Reaction, listing: ToolEntry, kind: str, linked: set[str]
    ) -> Carried | None:
        """Search ``listing`` for a value the reaction links (the customer's name finds the customer)."""
        kinds = param_types(listing)
        query = next((n for n, k in kinds.items() if k in QUERY_TYPES), None)
        roles = self.field_roles.get((listing.service, (listing.meta.entity if listing.meta else None) or ""), {})
        for target, source in reaction.links.items():
            located = self._source(flow, source)
            if located is None:
                continue
            fields = [f for f, r in roles.items() if r == target]
            if ">" in source:
                continue  # a hop carries a value from a third service; it finds no record here
            for _, value, vkind in located.fields(source.split(".", 1)[1].split(":")[0]):
                if not isinstance(value, str):
                    continue
                filters = [n for n, k in kinds.items() if k == vkind and n in fields]
                if filters:
                    args = {filters[0]: value}
                elif query is not None and fields:
                    args = {query: value}
                else:
                    continue
                step = self._call(flow, listing, {**args, **self._page_args(listing)}, {}, {})
                if step is None:
                    continue
                hits = [r for r in self.located(step) if any(r.record.get(f) == value for f in fields)]
                if len(hits) == 1:
                    hit = hits[0]
                    linked.add(target)
                    ref = f"steps.{step.index}.{hit.path}.id"
                    return Carried(kind, hit.record["id"], step.index, ref, listing.service, "id", f"the {hit.entity}")
                del flow.steps[step.index :]
        return None

    def _named(
        self,
        flow: Flow,
        reaction: Reaction,
        service: str,
        entity: str,
        kind: str,
        rng: random.Random,
        slots: dict[str, str],
    ) -> Carried | None:
        """A seeded record the instruction names by its title (``{container}``), or the only one;
        one whose title has the reaction's most preferred word of those any title has."""
        for listing in self.listings.get((service, entity), []):
            args = self._page_args(listing)
            # the container's listing read for the first record serves the second one too: a
            # person looks the project up once
            earlier = None if flow.stage.model is None else self._earlier(flow, listing, args)
            step = earlier or self._call(flow, listing, args, {}, {})
            if step is None:
                continue
            records = [
                r for r in self.located(step) if not INACTIVE & {v for v in r.record.values() if isinstance(v, str)}
            ]
            named = [r for r in records if r.anchor and self.unique(service, r.anchor)]
            twin = self.twin(flow, reaction)
            pinned = twin.slots.get("named") if twin is not None else None
            if pinned is not None:
                named = [r for r in named if r.anchor == pinned]  # filed under the same container
            else:
                named = [r for r in named if str(r.anchor) not in flow.refused]
            named = _preferred(named, reaction.prefer) or named
            if len(records) == 1 or named:
                hit = records[0] if len(records) == 1 else rng.choice(named)
                if len(records) > 1:
                    slots["container"] = f"the {humanize(entity)} '{hit.anchor}'"
                    slots["named"] = str(hit.anchor)
                if len(records) > 1 and pinned is None:
                    flow.references.append({"service": service, "value": str(hit.anchor), "qualifier": None})
                    flow.given.append(hit.anchor)
                ref = f"steps.{step.index}.{hit.path}.id"
                return Carried(kind, hit.record["id"], step.index, ref, service, "id", f"the {humanize(entity)}")
            if earlier is None:
                del flow.steps[step.index :]
        return None

    @staticmethod
    def _earlier(flow: Flow, listing: ToolEntry, args: dict[str, Any]) -> StepInfo | None:
        """The plan's earlier call of ``listing`` with ``args``, if any."""
        return next(
            (s for s in reversed(flow.steps) if s.entry.qualified == listing.qualified and s.arguments == args), None
        )

    def _when(self, reaction: Reaction) -> dt.datetime | None:
        if reaction.when is None:
            return None
        day = self.today + dt.timedelta(days=reaction.when)
        while day.weekday() >= 5:  # people schedule business on working days
            day += dt.timedelta(days=1)
        return day.replace(hour=10, minute=0, second=0, microsecond=0)

    @staticmethod
    def _date_value(kind: str, role: str | None, reaction: Reaction, when: dt.datetime) -> str | None:
        moment = when
        if role == "end" and reaction.minutes is not None:
            moment = when + dt.timedelta(minutes=reaction.minutes)  # an event's end; without minutes, the
            # end is the date itself (a quote valid until, a coupon that expires on {when})
        if kind == "date":
            return moment.date().isoformat()
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    @staticmethod
    def _spoken(when: dt.datetime, kind: str) -> str:
        day = f"{when:%A} {when.day} {when:%B %Y}"
        return day if kind == "date" else f"{day} at {when:%H:%M} UTC"

    def _text(self, flow: Flow, reaction: Reaction, name: str, kind: str) -> tuple[str, Carried | None]:
        """Free text about the workflow: a title naming its subject, a body mentioning it."""
        subject = self._source(flow, f"{reaction.mention}.x") if reaction.mention else flow.trigger
        if reaction.mention == "trigger" and flow.stage.chained:
            subject = flow.root  # a later stage's trigger is a record the agent made: the matter is the first one
        topic = (subject.anchor if subject is not None else None) or flow.trigger.anchor or flow.pattern.id
        purpose = humanize(reaction.id).capitalize()
        if kind in ("document_text", "message_text", "note", "payload_text"):
            text = f"{purpose} regarding {topic}."
            mentioned = None
            # checked only where the ask says what the text is about (the pattern's ``mention``), and
            # not in a later stage, whose asks speak of a record the agent made and named itself
            asked = reaction.mention is not None and not (reaction.mention == "trigger" and flow.stage.chained)
            asked = asked and subject is not None and self._names_itself(subject)
            if asked and subject is not None and subject.anchor:
                mentioned = Carried("title", subject.anchor, subject.step, "", subject.service, "", subject.entity)
            return text, mentioned
        if kind == "tag":
            return reaction.id.replace("_", "-")[:30], None
        return f"{purpose}: {topic}"[:120], None

    @staticmethod
    def _names_itself(record: Located) -> bool:
        """Whether ``record``'s anchor is its own name (a title, a number, a person's own record):
        "mention the quote" is not checked against the contact's name a quote is known by."""
        props = record.schema.get("properties", {})
        field = next((n for n, v in record.record.items() if v == record.anchor), None)
        kinds = field_types(props.get(field) or {}) if field else set()
        if not kinds & {"person_name", "company_name", "email_address", "username"}:
            return True
        return record.entity.replace(" ", "_") in PERSON_KINDS

    def _current(self, flow: Flow, entry: ToolEntry, name: str) -> Any:
        """For a write on the trigger's own record, the value its field of that name holds now
        (a parameter nobody asked about must not overwrite what names the record)."""
        if entry.service != flow.trigger.service or (entry.meta is not None and entry.meta.op in ("create", "send")):
            return None
        value = flow.trigger.record.get(name)
        return value if isinstance(value, str | int | float) and not isinstance(value, bool) else None

    def _plausible(self, service: str, kind: str, item: dict[str, Any], rng: random.Random) -> Any:
        """A value for a required parameter nobody asked about: one the service's seeded data holds,
        or for a code that must be unique (a confirmation number), a fresh one of its shape."""
        local = kind.rsplit(".", 1)[-1]
        if kind in FRESH_TYPES or ("." in kind and any(w in local for w in ("number", "code", "reference"))):
            return self.walker.synth.value({**item, SEMANTIC_KEY: kind}, rng, kind)
        seeded = self.walker.seeded_values(service).get(kind, [])
        values = [v for v in seeded if isinstance(v, str | int | float) and not isinstance(v, bool)]
        if values:
            return rng.choice(values)
        if item.get("type") in ("integer", "number"):
            low = item.get("minimum", 1)
            return max(low, 1) if item.get("type") == "integer" else float(max(low, 1))
        return None

    # -- rules -------------------------------------------------------------------------------

    def branch(self, flow: Flow, rule: Rule, rng: random.Random, held: bool | None = None) -> Branch | None:
        """The rule with a threshold on its source value (see :func:`taskgen.rules.branch`)."""
        return rule_branch(self._source(flow, rule.source), rule, rng, held, self.today.date())


def _heads(reaction: Reaction) -> set[str]:
    """The steps a reaction takes values from (``trigger`` and earlier reaction ids)."""
    return {source.split(".", 1)[0] for source in reaction.sources()}


FALLBACK_PREFER = ("operations",)
"""Words tried after a reaction's own ``prefer``: a task no team's project fits goes to the general
intake ('Operations requests'), not to whichever initiative ('Rollout: Pittman-Hall' for a return)."""


def _preferred(records: list[Located], prefer: list[str]) -> list[Located]:
    """The records whose title holds the first word of ``prefer`` (as a whole word), then of
    :data:`FALLBACK_PREFER`, that any title holds: a finance task goes to 'Finance requests' before
    'Operations requests', and "it" does not pick 'Security audit'. Empty when no title holds any."""
    for word in [*prefer, *FALLBACK_PREFER]:
        pattern = re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)
        fitting = [r for r in records if pattern.search(str(r.anchor))]
        if fitting:
            return fitting
    return []
