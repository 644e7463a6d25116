"""Task generation reads what each tool declares (its op, entity and collection), never its name.

The service below names its tools with no verb and no entity (``crm_thing`` lists deals): the old
name heuristics would have called its records "crm thing", never started a walk at it and never
counted ``crm_gone`` as a delete. Every noun and role here can only come from the metadata.
"""

from __future__ import annotations

import random

from hub.core import Hub
from servers.framework import NotFound, Record, Service, ServiceState
from servers.population import Population
from servers.types import Title
from taskgen.adversaries import CREATE_OPS, DESTROY_OPS
from taskgen.compose import _verb_phrase
from taskgen.walk import Walker, collection_entities, entity_of, op_of, records_of


class Deal(Record):
    id: str
    title: Title
    stage: str = "open"


class ThingState(ServiceState):
    deals: dict[str, Deal] = {}


def _seed(rng: random.Random, world: Population) -> ThingState:
    del rng, world
    titles = ("Northwind renewal", "Contoso expansion")
    return ThingState(deals={f"D{i}": Deal(id=f"D{i}", title=t) for i, t in enumerate(titles, 1)})


def _service() -> Service[ThingState]:
    service: Service[ThingState] = Service(
        "thingdesk", version=1, category="test", description="Deals.", state=ThingState, seed=_seed
    )

    @service.read(op="list", entity="deal", collection="deals")
    def crm_thing(state: ThingState) -> list[Deal]:
        """The deals."""
        return sorted(state.deals.values(), key=lambda d: d.id)

    @service.write(op="create", entity="deal", collection="deals", sets=("title",))
    def crm_fresh(state: ThingState, title: Title) -> Deal:
        """A new deal."""
        deal = Deal(id=f"D{len(state.deals) + 1}", title=title)
        state.deals[deal.id] = deal
        return deal

    @service.write(op="delete", entity="deal", collection="deals")
    def crm_gone(state: ThingState, deal_id: str) -> Deal:
        """Take a deal away."""
        if deal_id not in state.deals:
            raise NotFound(f"no deal {deal_id!r}")
        return state.deals.pop(deal_id)

    @service.write(op="transition", entity="deal", collection="deals", sets=("stage",))
    def crm_shift(state: ThingState, deal_id: str) -> Deal:
        """Win a deal."""
        if deal_id not in state.deals:
            raise NotFound(f"no deal {deal_id!r}")
        state.deals[deal_id].stage = "won"
        return state.deals[deal_id]

    return service


def test_roles_and_nouns_come_from_the_declared_metadata_not_the_tool_names() -> None:
    hub = Hub.native([_service()])
    tools = {e.name: e for e in hub.registry.services["thingdesk"].tools}
    assert {name: entity_of(e) for name, e in tools.items()} == dict.fromkeys(tools, "deal")
    assert collection_entities(hub, "thingdesk") == {"deals": "deal"}

    walker = Walker(hub, seed=1)
    assert [e.name for e in walker.listings] == ["crm_thing"]
    assert walker.deletes == {"thingdesk__crm_gone"}
    assert {n for n, e in tools.items() if op_of(e) in CREATE_OPS} == {"crm_fresh"}
    assert {n for n, e in tools.items() if op_of(e) in DESTROY_OPS} == {"crm_gone", "crm_shift"}

    world = hub.open_world(seed=1)
    try:
        listing = tools["crm_thing"]
        envelope = world.call(listing.qualified, {})
        assert [r[3] for r in records_of(listing, envelope["data"])] == ["deal", "deal"]
        # A walk's start step: the record is named "the deal '…'" in every value it offers.
        pool: list = []
        walker._steps = []
        walker._made = {}
        step = walker._execute(world, 0, listing, ({}, {}, {}), random.Random(0), pool)
        assert step is not None and step.entity == "deal" and step.anchor in ("Northwind renewal", "Contoso expansion")
        assert pool and all(c.label.startswith(("the title of the deal '", "the stage of the deal '")) for c in pool)
        assert all("crm thing" not in c.label for c in pool)  # what noun("crm_thing") said

        create = tools["crm_fresh"]
        made = walker._execute(world, 1, create, ({"title": "Fabrikam pilot"}, {}, {}), random.Random(0), pool)
        assert made is not None and made.entity == "deal"
        assert _verb_phrase(made) == "create a deal"

        shift = tools["crm_shift"]
        saved = world.savepoint("thingdesk")
        moved = walker._execute(world, 2, shift, ({"deal_id": "D1"}, {}, {}), random.Random(0), pool, saved)
        assert moved is not None and _verb_phrase(moved) == "set the stage of the deal to 'won'"
    finally:
        world.close()
