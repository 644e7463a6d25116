"""A deliberately broken sample service: the conformance checker must reject it.

``rename_item`` mutates the record (and bumps the id sequence) before it checks the new name,
so a rejected call leaves the state changed — exactly what "validate before you mutate" forbids.
"""

from __future__ import annotations

import random
from typing import Annotated

from servers.framework import BadRequest, Record, Service, ServiceState, require
from servers.population import Population
from servers.types import (
    Title,
    ident,
)

ItemId = Annotated[str, ident("broken", "item")]


class Item(Record):
    id: ItemId
    name: Title


class BrokenState(ServiceState):
    items: dict[str, Item] = {}


def seed(rng: random.Random, world: Population) -> BrokenState:
    state = BrokenState(clock=world.now)
    for product in world.products[:5]:
        item = Item(id=state.new_id("item"), name=product.name)
        state.items[item.id] = item
    return state


service = Service(
    "broken", version=1, category="testing", description="Broken on purpose.", state=BrokenState, seed=seed
)


@service.read
def get_item(state: BrokenState, item_id: ItemId) -> Item:
    """Get an item.

    Args:
        item_id: Id of the item.
    """
    return require(state.items, item_id, "item")


@service.write
def rename_item(state: BrokenState, item_id: ItemId, name: Title) -> Item:
    """Rename an item (wrongly: mutates first, validates after).

    Args:
        item_id: Id of the item.
        name: New name; must not start with a digit.
    """
    state.seq += 1  # the bug: a change before the checks below
    item = require(state.items, item_id, "item")
    if name[0].isdigit():
        raise BadRequest(f"argument 'name': {name!r} starts with a digit")
    item.name = name
    return item
