"""Service specs: the catalog format from which services are built and verified.

One JSON file per service in ``servers/catalog/`` (and, for the simulated subset below, in
``worldmodel/specs/``). A service spec declares the state's **entities** and the semantic type of
every field, and describes each tool by its **operation** on an entity, so that one spec yields
(a) a native typed module (``servers.construction.template``), (b) the tool schemas every
implementation must expose (``servers.construction.schemas``), (c) generated verification
scenarios (``servers.construction.scenarios``) and (d) a simulated fallback for the world model
(``worldmodel.fromspec``). Shape::

    {
      "name": "fleet", "version": 1, "category": "logistics",
      "description": "Fleet management: vehicles, trips and maintenance work orders.",
      "modelled_on": "Fleetio / Samsara fleet APIs",
      "rules": ["A vehicle in the shop cannot start a trip (409)."],
      "types": {"vehicle_status": {"description": "...", "enum": ["active", "in_shop", "retired"]},
                "odometer_km": {"description": "...", "type": "number", "minimum": 0, "maximum": 2000000}},
      "entities": {
        "vehicle": {"plural": "vehicles", "id_prefix": "veh", "description": "A vehicle of the fleet.",
                    "fields": {"plate": {"type": "fleet.plate", "unique": true, "seed": "pattern:??-####"},
                               "status": {"type": "fleet.vehicle_status"},
                               "driver_email": {"type": "email_address", "optional": true,
                                                "seed": "employee:d.email"}},
                    "lifecycle": {"field": "status", "initial": "active",
                                  "transitions": {"active": ["in_shop", "retired"], "in_shop": ["active"],
                                                  "retired": []}},
                    "seed": {"count": 20, "duplicates": 2}}
      },
      "tools": [
        {"name": "list_vehicles", "op": "list", "entity": "vehicle", "description": "...",
         "filters": ["status"], "search": ["plate"], "sort": "plate"},
        {"name": "send_to_shop", "op": "transition", "entity": "vehicle", "to": "in_shop", "description": "...",
         "params": {"reason": {"type": "note", "description": "Why.", "field": "shop_reason"}},
         "set": {"shop_since": "$now"},
         "guards": [{"require": [{"left": "record.odometer", "op": ">", "value": 0}], "code": 409,
                     "message": "a vehicle without odometer reading cannot go to the shop"}]}
      ]
    }

**Field types** are a shared semantic type of ``servers.types`` (``email_address``), a local type
declared under ``types`` and written ``<service>.<type>``, or ``ref:<entity>`` (the id of another
entity of the same service). Every entity also has ``id``, ``created_at`` and ``updated_at``.

**Operations** (``op``): reads ``list`` (``filters``: exact-match fields, ``search``: fields the
``query`` text is looked for in, ``sort``: field, ``-field`` for descending), ``get``, ``aggregate``
(count, and sum of ``field``, per value of ``group_by``); writes ``create`` (``fields``: settable
fields, default every field with ``create: true``), ``update`` (``fields``: changeable fields, all
optional, at least one given), ``transition`` (lifecycle move to ``to`` from the states in
``from``, default every state whose transitions allow ``to``), ``delete`` (allowed only in the states
of ``when``; ``blocked_by`` entities whose references to the record forbid deleting it), ``adjust``
(add the one param to the numeric ``field``, 409 when the result leaves its range), ``append`` /
``remove`` (add / remove the one param to / from the list ``field``; 409 if already there / 404 if
absent). ``frozen`` lists states in which ``update``, ``adjust``, ``append`` and ``remove`` refuse (409).
Writes may also ``set`` constant values (``"$now"`` is the service clock) and ``cascade`` constant
values onto the record a ref field points to. Every write stamps ``updated_at``.

**Guards** are the domain rules checked before any mutation: when every ``when`` condition holds and
some ``require`` condition fails, the call fails with ``code`` (400, 403 or 409) and ``message``.
A condition is ``{"left": operand, "op": op, "value": literal}`` or ``{..., "right": operand}``
with ops ``== != < <= > >= in not_in present absent``; an operand is a param name, ``record.<field>``
(the target record), ``<ref param>-><field>`` or ``record.<ref field>-><field>`` (the record a
reference points to) or ``now``. A comparison with a missing value neither triggers ``when`` nor
fails ``require``.

**Seeds** (``seed`` of a field) say how the initial data is drawn, from the shared population:
``person:<slot>.<attr>`` / ``employee:…`` / ``contact:…`` (attr: name, first_name, email, phone,
title, department, company, city, username), ``company:<slot>.<attr>`` (name, domain, url, address,
city, country, currency, phone, industry), ``product:<slot>.<attr>`` (name, sku, unit_price,
currency, category) — fields naming the same slot get the same person / company / product —
``choice`` (from the type's enum) or ``choice:a|b|c``, ``int:lo..hi``, ``number:lo..hi``,
``past:lo..hi`` / ``future:lo..hi`` (days from now), ``pattern:PO-####`` (``#`` digit, ``?``
capital letter), ``text:<template>`` (``{field}`` is another field of the record, ``{pick:a|b}`` a
choice), ``bool:<share true>``, ``const:<json>``, ``ref``, ``none`` and ``from:<ref>.<field>`` (the
value of ``field`` on the record the reference field ``ref`` points at: a refund's rider is its
pass's holder, a goal's client email its client's; same type, optional if the reference is).
Without ``seed`` a default follows from the semantic type (see ``servers.construction.seeding.default_seed``).
``seed_by_state`` (``{"<state>": "<seed>"}``) seeds a field by its record's lifecycle state instead (a
passed run's error rate is low, a draft has no approver: ``"seed": "none", "seed_by_state":
{"released": "employee:o.email"}``); such a field is drawn last and no text template may name it.

**Simulated services** (``"simulated": true``; the world model's own, ``worldmodel/specs/``) have
no offline implementation: the world model serves every tool, keeping what writes store
(:mod:`worldmodel.fromspec` compiles them; :mod:`servers.construction.simspec` checks them and
renders their schemas). They use the same constructs, with what simulation needs and none of what
only the spec engine implements (lifecycles, guards, effects, cascades, seeds, ``fields``,
``filters``…)::

    {"name": "flights", "category": "travel", "simulated": true, "description": "...",
     "types": {"airport_code": {"description": "IATA airport code.", "pattern": "^[A-Z]{3}$"},
               "geocoding.latitude": {"description": "...", "type": "number", "minimum": -90, "maximum": 90}},
     "entities": {"booking": {"plural": "bookings", "id_prefix": "bk", "id_field": "booking_id", "description": "...",
                              "fields": {"booking_id": {"type": "ref:booking", "description": "Id of the booking."},
                                         "total_price": {"type": "money_amount", "description": "...",
                                                         "role": "amount_paid", "minimum": 20, "maximum": null},
                                         "created_at": {"type": "date_time", "description": "...", "role": "system"}}}},
     "shapes": {"flight_offer": {"description": "...", "fields": {"price": {"type": "money_amount", ...}, ...}}},
     "tools": [
       {"name": "search_flights", "op": "compute", "description": "...",
        "params": {"origin": {"type": "flights.airport_code", "description": "..."},
                   "limit": {"type": "page_limit", "description": "...", "maximum": 50, "default": 10}},
        "returns": {"flights": {"type": "shape:flight_offer", "list": true, "description": "..."},
                    "total_results": {"type": "count", "description": "..."}}},
       {"name": "book_flight", "op": "create", "entity": "booking", "description": "...", "params": {...}},
       {"name": "list_bookings", "op": "list", "entity": "booking", "description": "...", "params": {...},
        "returns": {"bookings": {"type": "shape:booking", "list": true, "description": "..."},
                    "total": {"type": "count", "description": "..."}}},
       {"name": "cancel_booking", "op": "update", "entity": "booking", "description": "...",
        "params": {"booking_id": {"type": "ref:booking", "description": "..."}}, "set": {"status": "cancelled"}}]}

- **Operations**: ``compute`` (a read that is a pure function of its arguments: the same question
  gets the same answer all episode long), and ``create``, ``get``, ``list``, ``update``,
  ``delete`` on an entity's records. A tool takes exactly its ``params`` (required unless
  ``optional`` or with a ``default``): ``get``, ``update`` and ``delete`` take the record's id field;
  a parameter named like a field of the entity sets it (``create``, ``update``) or filters by it
  (``list``); an ``update`` may also ``set`` constant values.
- **Results**: ``create``, ``get`` and ``update`` answer the entity's record; ``compute``, ``list``
  and ``delete`` their ``returns`` (fields, as an entity's), a list's records in a list field of
  type ``shape:<entity>``, its ``count`` fields counting them.
- **Entities** name the field that holds a record's id (``id_field``, a field of their own, e.g.
  ``booking_id`` of type ``ref:booking``); a record has exactly its ``fields`` (no implicit id or
  stamps). Stored fields of an ambiguous type name their ``role``, as in any spec (spec lint).
- **Shapes** are named field sets for records nested in results (one flight offer, one route
  step), written ``shape:<name>`` (``list: true`` for an array of them); an entity's name is
  also a shape: its record.
- **Bounds**: a field or parameter may restate its type's ``minimum`` / ``maximum`` (``null``
  removes one: a price with no upper bound), ``min_length`` / ``max_length``, fix a ``const``
  (a flag always true), and bound a list (``min_items``, ``max_items``, ``unique_items``).
- **Types**: a local type may have an ``exclusive_minimum``; another service's type is used by its
  full name (``geocoding.latitude``) and declared under ``types`` by that name, a copy of the
  owner's, so values connect to that service's tools.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import ValidationInfo, model_validator

from servers import schema_cache
from servers.construction.consistency import catalog_problems
from servers.construction.simspec import simulated_problems
from servers.construction.specmodels import (
    AUTO_FIELDS,
    SYSTEM_FIELDS,
    BaseServiceSpec,
    Condition,
    EntitySpec,
    FieldSpec,
    Guard,
    ParamSpec,
    Rule,
    ToolSpec,
    rule_text,
)

# Re-exported: the models a consumer of specs needs, with the checked ServiceSpec and its loaders.
__all__ = [
    "AUTO_FIELDS", "CATALOG_DIR", "SYSTEM_FIELDS", "Condition", "EntitySpec", "FieldSpec", "Guard",
    "ParamSpec", "Rule", "ServiceSpec", "ToolSpec", "load_catalog", "load_spec", "rule_text", "spec_problems",
]  # fmt: skip

CATALOG_DIR = Path(__file__).resolve().parents[1] / "catalog"
CHECKED = "consistency_checked"  # validation context: the content passed spec_problems before


class ServiceSpec(BaseServiceSpec):
    """A service spec whose fields, types, tools and rules are consistent with each other."""

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> ServiceSpec:
        if isinstance(info.context, dict) and info.context.get(CHECKED):
            return self  # this very content passed these checks before (see load_spec)
        problems = spec_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def spec_problems(spec: ServiceSpec) -> list[str]:
    """Everything wrong with a spec, each naming the entity, field or tool."""
    return simulated_problems(spec) if spec.simulated else catalog_problems(spec)


def load_spec(path: str | Path) -> ServiceSpec:
    """Read and validate one spec file; errors name the file, entity, field or tool.

    The consistency checks (:func:`spec_problems`, most of the cost) run once per file content and
    version of this package's code: a content that passed them is remembered in the disk cache
    (``servers.schema_cache``), so building a hub of hundreds of specs does not re-check them."""
    try:
        data = Path(path).read_bytes()
        cache = schema_cache.shared()
        key = f"spec-checked:{hashlib.sha256(data).hexdigest()}"
        checked = cache is not None and cache.get(key) is not None
        spec = ServiceSpec.model_validate(json.loads(data), context={CHECKED: checked})
        if cache is not None and not checked:
            cache.put(key, (True,))
        return spec
    except (ValueError, OSError) as exc:
        raise ValueError(f"{path}: {exc}") from exc


def load_catalog(directory: str | Path = CATALOG_DIR) -> list[ServiceSpec]:
    """Every spec of the catalog, sorted by name."""
    return sorted((load_spec(f) for f in sorted(Path(directory).glob("*.json"))), key=lambda s: s.name)
