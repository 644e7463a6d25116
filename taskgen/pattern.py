"""Business workflow patterns: the situations a business reacts to, and how it reacts, as data.

One JSON file per area in ``taskgen/workflows/`` holds a list of patterns. A pattern names no
service: its trigger and reactions are *entity kinds* (``deal``, ``invoice``, ``message``) and
tool *ops* (:class:`servers.tooling.ToolMeta`), and values travel between them by *business role*
(:mod:`servers.roles`), so one pattern instantiates over every service that has the entity kinds
and roles. Shape::

    {"id": "deal_won_kickoff", "category": "sales",
     "personas": ["Priya Raman, sales operations lead"],
     "trigger": {"entity": ["deal"], "state": ["won"],
                 "situation": ["We just closed the {entity} '{anchor}'."]},
     "reactions": [
       {"id": "tell_contact", "op": ["send"], "entity": ["message"],
        "links": {"recipient": "trigger.contact"}, "mention": "trigger",
        "ask": ["Email the customer's contact person to thank them and confirm next steps."]},
       {"id": "kickoff", "op": ["create"], "entity": ["event", "appointment"],
        "links": {"guest": "trigger.contact"}, "when": 7, "minutes": 30,
        "ask": ["Put a {minutes}-minute kickoff call with that contact on the calendar for {when}."]}],
     "rules": [
       {"id": "big_deal", "source": "trigger.value", "op": ">", "skip": "kickoff",
        "instead": {...a reaction...},
        "text": ["Deals above {threshold} get a call from the owner instead: ..."]}]}

**Trigger**: a seeded record of one of ``entity`` whose lifecycle (any enum field) is in one of
``state`` (any state when empty); the instruction names it by its title or name (``{anchor}``).

**Reactions**, in order: a write whose tool declares one of ``op`` on one of ``entity``, in another
service than the trigger's (unless ``same_service``). Each parameter is filled so that the rubric
checks only what the instruction asks for:

- a parameter whose role (its own ``x-role``, else the role of the record field of the same name)
  is a key of ``links`` carries the value of the source's field with the role named there
  (``<reaction id or trigger>.<role>``), of the same semantic type: checked. A **hop**
  ``trigger.customer>contact`` crosses to another application: the customer's name finds the one
  record of some other service that holds it in a ``customer`` field (the account in the CRM),
  and its ``contact`` field is carried (the lookup is a step of the plan, never spelled out);
- an id of a record of the reaction's service is found by a lookup (a listing of that entity,
  searched for a linked value: the customer's name finds the customer record), else the
  reaction names a record by its title (``{container}`` in ``ask``): checked;
- ``when`` (days from today) fills the date or start time, ``minutes`` the end after it: checked;
  free text mentions the ``mention`` step's record name (checked for message bodies);
- anything else keeps a plausible value the agent may choose differently: not checked.

``categories`` keeps a reaction to services of those categories, ``prefer`` names words the title of
a ``{container}`` should have (a payment task goes to a finance project when there is one), and
``choose`` the enum values to pick where a parameter offers them (notify by ``email``). A
**lookup** (``"op": ["lookup"]``) asks the outside world a question and has the answer reported:
a read of op ``lookup`` (a simulated service: a website, a postal code, the weather, a rate) whose
output has a top-level field of one of the ``answer`` semantic types, filled only from ``inputs``
(parameter semantic type -> ``<step>.<role or type>``, or ``=VALUE`` for a value the ask states; a
list fills that many parameters of the type, in schema order). A source that names a type, not a
role (``trigger.city``), is the record's one field of that type. The ask says ``{key}``, the report
key the answer is given under; the rubric checks the reported value. A trigger
that is ``chainable`` may also be a record an earlier pattern of the same task made (in one of its
states), so a task can chain patterns. ``follows`` (an earlier reaction's id) acts in that
reaction's service, on the record it made (add a line to the invoice just opened). ``optional``
reactions are dropped when no service offers them. **Rules** compare a source value with a
threshold drawn near the seeded values (so it goes either way): when it holds, the reaction
``skip`` names is not done and ``instead`` (if any) is done in its place; the rubric checks the
branch taken. The source is an amount (a money role: ``trigger.amount_due``), a date (a date role,
compared by day: ``trigger.end``, "leases ending after Friday 13 March 2026") or a measure, named
by its semantic type (``trigger.quantity``, ``duration_minutes``, ``percentage``, ``rating``: only
a record with exactly one such field has it). ``{threshold}`` in the text is the threshold, written
as a person would (an amount with its currency, a day, a round number: the text gives the unit).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from servers.roles import ROLES
from servers.tooling import WRITE_OPS

PATTERNS_DIR = Path(__file__).parent / "workflows"
ID = r"^[a-z][a-z0-9_]{1,60}$"
SOURCE = r"^[a-z][a-z0-9_]*\.[a-z_]+(>[a-z_]+)?(:[a-z_]+)?$"
KNOWN_ROLES = frozenset(r for roles in ROLES.values() for r in roles)
MEASURES = frozenset({"quantity", "duration_minutes", "duration_hours", "duration_days", "percentage", "rating"})
"""Semantic types of numbers a rule may compare that carry no role: a rule's source names the type
(``trigger.quantity``), and only a record with exactly one field of that type has it."""
RULE_ROLES = (frozenset(ROLES["money_amount"]) | frozenset(ROLES["date"])) - {"system", "birth"}
"""Roles a rule's source may name: an amount, or a date (due, start, end, event) compared by day."""
SLOTS = frozenset({"anchor", "entity", "when", "minutes", "container", "threshold", "persona", "key"})
LOOKUP = "lookup"
"""The op of a reaction that asks the outside world a question and reports the answer."""
INPUT = r"^(=.+|[a-z][a-z0-9_]*\.[a-z_.]+(:[a-z_.]+)?)$"


def by_type(role: str) -> bool:
    """Whether a source's ``role`` names a semantic type instead (a measure, or a type no role
    qualifies: ``city``, ``currency_code``): it is then a record's one field of that type."""
    return role in MEASURES or role not in KNOWN_ROLES


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _slots(texts: list[str]) -> set[str]:
    return {m for t in texts for m in re.findall(r"{(\w+)}", t)}


class Trigger(Strict):
    entity: list[str] = Field(min_length=1)
    chainable: bool = Field(
        default=False, description="The situation also arises from a record the task itself made (chained)."
    )
    state: list[str] = Field(default_factory=list)
    situation: list[str] = Field(min_length=1, description="Phrasings; {anchor} names the record, {entity} its kind.")


class Reaction(Strict):
    id: str = Field(pattern=ID)
    op: list[str] = Field(min_length=1)
    entity: list[str] = Field(default_factory=list, description="Entity kinds written (empty for a lookup).")
    answer: list[str] = Field(default_factory=list, description="A lookup's answer: semantic types, any of.")
    inputs: dict[str, str | list[str]] = Field(
        default_factory=dict, description="A lookup's parameters: semantic type -> source(s) or '=VALUE'."
    )
    links: dict[str, str] = Field(
        default_factory=dict, description="Target role -> '<step>.<source role>[:<semantic type>]'; all must link."
    )
    within: list[str] = Field(
        default_factory=list, description="Entity kinds of a record the new one may be filed under, named by title."
    )
    to: list[str] = Field(default_factory=list, description="Target states of a transition (any of).")
    when: int | None = Field(default=None, ge=-60, le=120, description="Days from today for the date or start.")
    minutes: int | None = Field(default=None, ge=5, le=480, description="Length: the end is this long after the start.")
    mention: str | None = Field(default=None, description="Step whose record name the free text mentions.")
    same_service: bool = False
    categories: list[str] = Field(default_factory=list, description="Only services of these categories.")
    prefer: list[str] = Field(default_factory=list, description="Words a {container}'s title should have.")
    choose: list[str] = Field(default_factory=list, description="Enum values to pick where a parameter offers one.")
    follows: str | None = Field(
        default=None, description="An earlier reaction whose record (and service) this one acts on."
    )
    optional: bool = False
    ask: list[str] = Field(min_length=1)

    @property
    def lookup(self) -> bool:
        return self.op == [LOOKUP]

    def sources(self) -> list[str]:
        """Every ``<step>.<role>`` the reaction takes a value from (links and a lookup's inputs)."""
        found = list(self.links.values())
        for value in self.inputs.values():
            found.extend(v for v in ([value] if isinstance(value, str) else value) if not v.startswith("="))
        return found

    @model_validator(mode="after")
    def _valid(self) -> Reaction:
        if LOOKUP in self.op:
            return self._valid_lookup()
        if not self.entity:
            raise ValueError(f"reaction {self.id!r}: names no entity kind")
        if self.answer or self.inputs or "{key}" in "".join(self.ask):
            raise ValueError(f"reaction {self.id!r}: answer, inputs and {{key}} are for lookups")
        unknown = [op for op in self.op if op not in WRITE_OPS]
        if unknown:
            raise ValueError(f"reaction {self.id!r}: {unknown} are not write ops ({', '.join(WRITE_OPS)})")
        for target, source in self.links.items():
            if target not in KNOWN_ROLES:
                raise ValueError(f"reaction {self.id!r}: link target {target!r} is not a role")
            roles = source.split(".", 1)[1].split(":")[0].split(">") if re.match(SOURCE, source) else ["?"]
            if any(r not in KNOWN_ROLES for r in roles):
                raise ValueError(f"reaction {self.id!r}: link source {source!r} is not '<step>.<role>[><role>]'")
        bad = _slots(self.ask) - SLOTS
        if bad:
            raise ValueError(f"reaction {self.id!r}: unknown slots {sorted(bad)} in ask (known: {sorted(SLOTS)})")
        if "{when}" in "".join(self.ask) and self.when is None:
            raise ValueError(f"reaction {self.id!r}: ask says {{when}} but 'when' is not set")
        if self.mention and not all(re.search(r"mention|about|regarding|refer|\{anchor\}", a) for a in self.ask):
            raise ValueError(f"reaction {self.id!r}: every ask must say what the text is about (it is checked)")
        return self

    def _valid_lookup(self) -> Reaction:
        if self.op != [LOOKUP] or self.entity or self.links or self.within or self.to or self.follows:
            raise ValueError(f"reaction {self.id!r}: a lookup has op ['lookup'], answer and inputs, and writes nothing")
        if not self.answer or not self.inputs:
            raise ValueError(f"reaction {self.id!r}: a lookup needs an answer type and its inputs")
        for kind, value in self.inputs.items():
            for source in [value] if isinstance(value, str) else value:
                if not re.match(INPUT, source):
                    raise ValueError(f"reaction {self.id!r}: input {kind!r} source {source!r} is not '<step>.<role>'")
        bad = _slots(self.ask) - SLOTS
        if bad or not all("{key}" in a for a in self.ask):
            raise ValueError(f"reaction {self.id!r}: every ask of a lookup says {{key}} (unknown slots: {sorted(bad)})")
        return self


class Rule(Strict):
    id: str = Field(pattern=ID)
    source: str = Field(pattern=SOURCE, description="'<step>.<role>' of a number (an amount) the rule compares.")
    op: Literal[">", "<"]
    skip: str = Field(description="The reaction not done when the rule holds.")
    instead: Reaction | None = None
    text: list[str] = Field(
        min_length=1,
        description="Phrasings; {threshold} is the threshold; {when}, {minutes}, {container} those of 'instead'.",
    )

    @model_validator(mode="after")
    def _slots_known(self) -> Rule:
        role = self.source.split(".", 1)[1].split(":")[0]
        if role not in RULE_ROLES | MEASURES:
            raise ValueError(
                f"rule {self.id!r}: source {self.source!r} must name an amount's or a date's role"
                f" ({', '.join(sorted(RULE_ROLES))}) or a measure ({', '.join(sorted(MEASURES))})"
            )
        bad = _slots(self.text) - {"threshold", "when", "minutes", "container"}
        if bad:
            raise ValueError(f"rule {self.id!r}: unknown slots {sorted(bad)} in text")
        if _slots(self.text) & {"when", "minutes"} and (self.instead is None or self.instead.when is None):
            raise ValueError(f"rule {self.id!r}: text says {{when}} but its 'instead' has no 'when'")
        return self


class Pattern(Strict):
    id: str = Field(pattern=ID)
    category: str
    personas: list[str] = Field(min_length=1)
    trigger: Trigger
    reactions: list[Reaction] = Field(min_length=2)
    rules: list[Rule] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> Pattern:
        ids = ["trigger", *(r.id for r in self.reactions)]
        if len(set(ids)) != len(ids):
            raise ValueError(f"pattern {self.id!r}: reaction ids repeat")
        seen = {"trigger"}
        for reaction in self.reactions:
            for source in reaction.sources():
                if source.split(".")[0] not in seen:
                    raise ValueError(f"pattern {self.id!r}: {reaction.id!r} links from {source!r}, not an earlier step")
            if reaction.follows and reaction.follows not in seen - {"trigger"}:
                raise ValueError(
                    f"pattern {self.id!r}: {reaction.id!r} follows {reaction.follows!r}, not an earlier reaction"
                )
            if reaction.mention and reaction.mention not in seen:
                raise ValueError(f"pattern {self.id!r}: {reaction.id!r} mentions {reaction.mention!r}, not earlier")
            seen.add(reaction.id)
        for rule in self.rules:
            if rule.skip not in ids[1:]:
                raise ValueError(f"pattern {self.id!r}: rule {rule.id!r} skips unknown reaction {rule.skip!r}")
            if rule.source.split(".")[0] not in ids:
                raise ValueError(f"pattern {self.id!r}: rule {rule.id!r} reads unknown step {rule.source!r}")
        return self


class PatternFile(Strict):
    patterns: list[Pattern] = Field(min_length=1)


@lru_cache(maxsize=8)
def load_patterns(directory: Path = PATTERNS_DIR) -> tuple[Pattern, ...]:
    """Every pattern of every ``*.json`` file in ``directory``; errors name the file and pattern."""
    found: list[Pattern] = []
    for path in sorted(directory.glob("*.json")):
        try:
            found.extend(PatternFile.model_validate(json.loads(path.read_text())).patterns)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from exc
    ids = [p.id for p in found]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"pattern ids defined twice: {dup}")
    return tuple(found)
