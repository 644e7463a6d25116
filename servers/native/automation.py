"""Automation: webhooks, delivery logs, "when EVENT and condition then action" rules and API keys.

Tools: list_webhooks, get_webhook, create_webhook, update_webhook, set_webhook_status,
delete_webhook, test_webhook, list_deliveries, retry_delivery, list_rules, get_rule, create_rule,
set_rule_status, run_rule, list_rule_runs, list_api_keys, create_api_key, revoke_api_key.
State: webhooks, deliveries, rules, rule runs and API keys by id; the workspace owner (the user),
members and admins (employees' emails); the hosts that currently fail to answer, with their status.
Seed: about 22 webhooks to Slack, Zapier, PagerDuty, internal systems and customers' order feeds
(near-duplicate names, stale disabled hooks auto-disabled after failures); about 60 deliveries
with payloads naming the population's companies, people and products, several failed against
endpoints that are down; about 20 rules (active, paused, archived, near-duplicates) acting on other
services' tools, with their run history; about 20 API keys, some revoked and some long unused.
Rules: events come from a fixed catalog; webhook targets must be https; two enabled webhooks may
not send the same event to the same URL (409); a disabled webhook cannot be test-fired, and a
failed delivery cannot be retried while its webhook is disabled or deleted (409); only disabled
webhooks can be deleted (409); succeeded deliveries are not retried and a delivery gets at most 8
attempts (409); a webhook is auto-disabled after 5 consecutive failed deliveries; an archived rule
is final and only active rules run (409); conditions read "always" or clauses like
"amount > 5000 and currency == USD" (400 otherwise); the admin scope is reserved to workspace
admins and keys are revoked by their owner or an admin (403); at most 5 active keys per owner (409).
Version history: 1 — first version.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
import re
from typing import Annotated, Any, Literal

from pydantic import Field

from servers.framework import (
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    Page,
    Record,
    Service,
    ServiceState,
    contains,
    paginate,
    require,
)
from servers.population import Population
from servers.types import (
    Count,
    DateTime,
    EmailAddress,
    EventName,
    Flag,
    Limit,
    Note,
    Offset,
    PayloadText,
    Query,
    Title,
    Url,
    ident,
    sem,
)

WebhookId = Annotated[str, ident("automation", "webhook")]
DeliveryId = Annotated[str, ident("automation", "delivery")]
RuleId = Annotated[str, ident("automation", "rule")]
RunId = Annotated[str, ident("automation", "run")]
ApiKeyId = Annotated[str, ident("automation", "api_key")]
WebhookStatus = Annotated[Literal["enabled", "disabled"], sem("automation.webhook_status", "Webhook on or off.")]
DeliveryStatus = Annotated[
    Literal["succeeded", "failed"], sem("automation.delivery_status", "Outcome of a webhook delivery.")
]
HttpStatus = Annotated[int, sem("automation.http_status", "HTTP status the endpoint answered.", ge=100, le=599)]
RuleStatus = Annotated[
    Literal["active", "paused", "archived"], sem("automation.rule_status", "Status of an automation rule.")
]
RunStatus = Annotated[
    Literal["succeeded", "failed", "skipped"], sem("automation.run_status", "Outcome of one rule run.")
]
KeyStatus = Annotated[Literal["active", "revoked"], sem("automation.key_status", "Status of an API key.")]
Scope = Annotated[
    Literal["webhooks:read", "webhooks:write", "rules:read", "rules:write", "admin"],
    sem("automation.scope", "Permission granted to an API key."),
]
ServiceName = Annotated[
    str,
    sem("automation.service_name", "Name of the service an action calls, e.g. crm.", pattern=r"^[a-z][a-z0-9_]{1,30}$"),
]
ToolName = Annotated[
    str,
    sem(
        "automation.tool_name", "Name of the tool an action calls, e.g. create_task.", pattern=r"^[a-z][a-z0-9_]{1,60}$"
    ),
]
Condition = Annotated[
    str,
    sem(
        "automation.condition",
        "Rule condition: 'always', or clauses 'field op value' (ops ==, !=, >, >=, <, <=, contains) joined by 'and'.",
        min_length=1,
        max_length=300,
    ),
]
KeyPrefix = Annotated[str, sem("automation.key_prefix", "Visible prefix of an API key.", pattern=r"^ak_[0-9a-f]{8}$")]
ApiSecret = Annotated[str, sem("automation.api_secret", "Secret API token.", pattern=r"^sk_live_[0-9a-f]{32}$")]

EVENTS = (
    "deal.created", "deal.won", "deal.lost", "ticket.created", "ticket.resolved", "invoice.created", "invoice.paid",
    "invoice.overdue", "payment.failed", "order.created", "order.shipped", "contact.created", "form.submitted",
    "employee.hired", "employee.terminated", "leave.approved",
)  # fmt: skip
MAX_ATTEMPTS = 8
AUTO_DISABLE = 5
MAX_KEYS = 5
ERRORS = {0: "timed out after 10 s", 410: "410 Gone: endpoint removed", 500: "500 Internal Server Error",
          503: "503 Service Unavailable"}  # fmt: skip
CLAUSE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*)\s*(==|!=|>=|<=|>|<|\scontains\s)\s*(.+)$")


class Webhook(Record):
    id: WebhookId
    name: Title
    target_url: Url = Field(description="Endpoint the events are POSTed to.")
    events: list[EventName] = Field(description="Events the webhook is subscribed to.")
    status: WebhookStatus
    created_by: EmailAddress = Field(description="Who created the webhook.")
    created_at: DateTime
    last_delivery_at: DateTime | None = Field(default=None, description="Time of the latest delivery attempt.")
    consecutive_failures: Count = Field(default=0, description="Failed deliveries in a row since the last success.")
    disabled_reason: Note = Field(default="", description="Why the webhook is disabled.")


class Delivery(Record):
    id: DeliveryId
    webhook_id: WebhookId
    event: EventName
    target_url: Url = Field(description="Endpoint of the latest attempt.")
    payload: PayloadText
    status: DeliveryStatus
    response_code: HttpStatus | None = Field(default=None, description="HTTP status answered; null on a timeout.")
    attempts: Count = Field(description="Attempts made so far.")
    test: Flag = Field(default=False, description="Whether this was a test fire.")
    created_at: DateTime
    last_attempt_at: DateTime
    error: Note = Field(default="", description="Why the latest attempt failed.")


class Rule(Record):
    id: RuleId
    name: Title
    trigger_event: EventName
    condition: Condition
    action_service: ServiceName
    action_tool: ToolName
    action_details: Note = Field(description="What the action does with the event's data.")
    status: RuleStatus
    owner: EmailAddress = Field(description="Member responsible for the rule.")
    created_at: DateTime
    last_run_at: DateTime | None = Field(default=None, description="Time of the latest run.")
    run_count: Count = Field(default=0, description="Runs so far.")


class Run(Record):
    id: RunId
    rule_id: RuleId
    event: EventName
    status: RunStatus
    started_at: DateTime
    payload: PayloadText
    detail: Note = Field(description="What the run did, or why it was skipped or failed.")
    manual: Flag = Field(default=False, description="Whether the run was started by hand.")


class ApiKey(Record):
    id: ApiKeyId
    name: Title
    owner: EmailAddress = Field(description="Member the key belongs to.")
    prefix: KeyPrefix
    scopes: list[Scope] = Field(description="Permissions of the key.")
    status: KeyStatus
    created_at: DateTime
    last_used_at: DateTime | None = Field(default=None, description="Last time the key authenticated a call.")
    revoked_at: DateTime | None = Field(default=None, description="When the key was revoked.")
    revoked_by: EmailAddress | None = Field(default=None, description="Who revoked the key.")


class NewApiKey(ApiKey):
    secret: ApiSecret = Field(description="The full token; shown only once, at creation.")


class Deleted(Record):
    id: WebhookId = Field(description="Id of the deleted webhook.")
    deleted: Flag = Field(description="Always true.")


class AutomationState(ServiceState):
    owner: str = ""
    members: list[str] = []
    admins: list[str] = []
    down_hosts: dict[str, int] = {}
    webhooks: dict[str, Webhook] = {}
    deliveries: dict[str, Delivery] = {}
    rules: dict[str, Rule] = {}
    runs: dict[str, Run] = {}
    api_keys: dict[str, ApiKey] = {}


def _host(url: str) -> str:
    return url.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0].lower()


def _member(state: AutomationState, email: str, argument: str) -> str:
    found = next((m for m in state.members if m.lower() == email.lower()), None)
    if found is None:
        raise NotFound(f"member {email!r} not found in the workspace (argument {argument!r})")
    return found


def _events(events: list[str]) -> list[str]:
    unknown = [e for e in events if e not in EVENTS]
    if not events or unknown:
        raise BadRequest(f"argument 'events': unknown {unknown!r}; give events from {', '.join(EVENTS)}")
    return list(dict.fromkeys(events))


def _url(url: str) -> str:
    if not url.lower().startswith("https://"):
        raise BadRequest(f"argument 'target_url': {url!r} must use https")
    return url


def _clash(state: AutomationState, url: str, events: list[str], skip: str = "") -> None:
    for hook in state.webhooks.values():
        shared = [e for e in events if e in hook.events]
        if hook.id != skip and hook.status == "enabled" and hook.target_url.lower() == url.lower() and shared:
            raise Conflict(f"enabled webhook {hook.id!r} already sends {shared[0]!r} to {url!r}")


def _deliver(state: AutomationState, hook: Webhook, delivery: Delivery) -> Delivery:
    """One delivery attempt to the webhook's current URL; failures count towards auto-disabling."""
    code = state.down_hosts.get(_host(hook.target_url), 200)
    now = state.tick()
    delivery.target_url, delivery.attempts, delivery.last_attempt_at = hook.target_url, delivery.attempts + 1, now
    delivery.status = "succeeded" if code == 200 else "failed"
    delivery.response_code = code or None
    delivery.error = "" if code == 200 else ERRORS.get(code, f"HTTP {code}")
    hook.last_delivery_at = now
    hook.consecutive_failures = 0 if code == 200 else hook.consecutive_failures + 1
    if hook.consecutive_failures >= AUTO_DISABLE and hook.status == "enabled":
        hook.status = "disabled"
        hook.disabled_reason = f"Auto-disabled after {AUTO_DISABLE} consecutive failed deliveries"
    return delivery


def _clauses(condition: str) -> list[tuple[str, str, str]]:
    """Parse a condition; raises a 400 naming 'condition' when it cannot be read."""
    if condition.strip().lower() == "always":
        return []
    clauses = []
    for part in re.split(r"\s+and\s+", condition.strip()):
        match = CLAUSE.match(part.strip())
        if match is None:
            raise BadRequest(f"argument 'condition': cannot read {part!r}; write 'always' or e.g. 'amount > 5000'")
        clauses.append((match[1], match[2].strip(), match[3].strip().strip("'\"")))
    return clauses


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def _evaluate(rule: Rule, data: dict[str, Any]) -> tuple[str, str]:
    """(run status, detail) of running ``rule`` on an event's data."""
    for field, op, expected in _clauses(rule.condition):
        value: Any = data
        for key in field.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            return "failed", f"condition field {field!r} is missing from the payload"
        left, right = _number(value), _number(expected)
        if op == "contains":
            met = expected.lower() in str(value).lower()
        elif op in ("==", "!="):
            same = left == right if left is not None and right is not None else str(value).lower() == expected.lower()
            met = same == (op == "==")
        elif left is None or right is None:
            return "failed", f"condition {field} {op} {expected}: {str(value)[:40]!r} is not a number"
        else:
            met = {">": left > right, ">=": left >= right, "<": left < right, "<=": left <= right}[op]
        if not met:
            return "skipped", f"condition not met: {field} is {str(value)[:60]!r}"
    return "succeeded", f"called {rule.action_service}.{rule.action_tool}: {rule.action_details}"[:400]


def _payload_data(payload: str) -> dict[str, Any]:
    try:
        parsed = json.loads(payload)
    except (ValueError, RecursionError):
        raise BadRequest("argument 'payload': not valid JSON") from None
    if not isinstance(parsed, dict):
        raise BadRequest("argument 'payload': must be a JSON object")
    inner = parsed.get("data")
    return {**parsed, **inner} if isinstance(inner, dict) else parsed


def _sample(rng: random.Random, world: Population, event: str) -> str:
    """A realistic event payload naming the population's companies, people and products."""
    company, contact = rng.choice(world.companies), rng.choice(world.contacts)
    person, product = rng.choice(world.employees), rng.choice(world.products)
    amount = round(rng.uniform(500, 40_000), 2)
    noun = event.split(".")[0]
    samples: dict[str, dict[str, Any]] = {
        "deal": {"deal": f"{company.name} – {product.name}", "company": company.name, "amount": amount,
                 "currency": company.currency, "owner": person.email},
        "ticket": {"ticket": f"TCK-{rng.randint(1000, 9999)}", "subject": f"Problem with {product.name}",
                   "requester": contact.email, "priority": rng.choice(("low", "normal", "high", "urgent"))},
        "invoice": {"invoice": f"INV-{rng.randint(1001, 1999)}", "customer": company.name, "amount": amount,
                    "currency": company.currency, "days_overdue": rng.randint(1, 40) if "overdue" in event else 0},
        "payment": {"invoice": f"INV-{rng.randint(1001, 1999)}", "customer": company.name, "amount": amount},
        "order": {"order": f"SO-{rng.randint(10000, 99999)}", "company": company.name, "sku": product.sku,
                  "quantity": rng.randint(1, 40)},
        "contact": {"email": contact.email, "name": contact.name, "company": contact.company},
        "form": {"form": "Contact us", "email": contact.email, "name": contact.name},
        "employee": {"email": person.email, "name": person.name, "department": person.department},
        "leave": {"employee": person.email, "days": rng.randint(1, 10)},
    }  # fmt: skip
    return json.dumps({"event": event, "data": samples[noun]})


HOOKS = (  # (name, target kind, events, disabled)
    ("Slack #sales — deals won", "slack", ("deal.won",), False),
    ("Slack #sales - deal won (old)", "slack", ("deal.won",), True),
    ("Deal created → forecast sheet", "zapier", ("deal.created",), False),
    ("Lost deal analysis", "zapier", ("deal.lost",), True),
    ("Finance: invoices → ERP", "erp", ("invoice.created", "invoice.paid"), False),
    ("Legacy ERP sync", "legacy", ("invoice.created", "invoice.paid"), True),
    ("Overdue invoice reminders", "zapier", ("invoice.overdue",), False),
    ("Payment failures → #billing", "slack", ("payment.failed",), False),
    ("Support: new tickets → PagerDuty", "pagerduty", ("ticket.created",), False),
    ("Ticket resolved → CSAT survey", "zapier", ("ticket.resolved",), False),
    ("Newsletter contact sync", "newsletter", ("contact.created",), True),
    ("Newsletter contact sync (v2)", "zapier", ("contact.created", "form.submitted"), False),
    ("HR: new hire provisioning", "it", ("employee.hired",), False),
    ("HR: offboarding", "it", ("employee.terminated",), False),
    ("Leave calendar sync", "it", ("leave.approved",), False),
)
RULES = (  # (name, trigger, condition, service, tool, details, status)
    ("Big deal won → kickoff issue", "deal.won", "amount > 10000", "tracker", "create_issue",
     "Open a kickoff issue for the account team", "active"),
    ("Big deal won → kickoff issue (copy)", "deal.won", "amount > 1000", "tracker", "create_issue",
     "Open a kickoff issue for the account team", "paused"),
    ("Deal won → draft invoice", "deal.won", "always", "invoicing", "create_invoice",
     "Draft an invoice for the deal amount", "active"),
    ("Deal won → #sales shout-out", "deal.won", "always", "chat", "post_message", "Post the win in #sales", "active"),
    ("Old: deal won → spreadsheet", "deal.won", "always", "sheets", "append_row", "Append to the 2024 tracker",
     "archived"),
    ("Urgent ticket → page on-call", "ticket.created", "priority == urgent", "sms", "send_sms",
     "Text the on-call engineer", "active"),
    ("Urgent tickets → page on call", "ticket.created", "priority == urgent", "sms", "send_sms",
     "Text the support lead", "paused"),
    ("High priority ticket → #support", "ticket.created", "priority == high", "chat", "post_message",
     "Post in #support", "active"),
    ("Ticket resolved → CSAT email", "ticket.resolved", "always", "email", "send_message",
     "Email the requester a satisfaction survey", "active"),
    ("Invoice overdue → reminder email", "invoice.overdue", "days_overdue >= 7", "email", "send_message",
     "Email the customer a payment reminder", "active"),
    ("Invoice overdue → reminder email (v1)", "invoice.overdue", "always", "email", "send_message",
     "Email the customer a payment reminder", "archived"),
    ("Invoice paid → thank-you email", "invoice.paid", "amount >= 1000", "email", "send_message",
     "Thank the customer for the payment", "active"),
    ("Payment failed → finance issue", "payment.failed", "always", "tracker", "create_issue",
     "Open an issue for the finance team", "active"),
    ("New hire → onboarding item", "employee.hired", "always", "hr", "add_onboarding_task",
     "Add 'Order welcome pack' to the checklist", "active"),
    ("Leaver → revoke API keys", "employee.terminated", "always", "automation", "revoke_api_key",
     "Revoke the leaver's keys", "active"),
    ("Leave approved → calendar block", "leave.approved", "always", "calendar", "create_event",
     "Block the employee's calendar", "active"),
    ("Web form → CRM contact", "form.submitted", "email contains @", "crm", "create_contact",
     "Create a contact from the form", "active"),
    ("Order shipped → customer email", "order.shipped", "always", "email", "send_message",
     "Email the shipping confirmation", "active"),
    ("Large order → #sales", "order.created", "quantity > 20 and company contains Inc", "chat", "post_message",
     "Flag the order to the sales manager", "paused"),
    ("Contact created → welcome email", "contact.created", "always", "email", "send_message",
     "Send the welcome sequence", "active"),
)  # fmt: skip
KEY_NAMES = ("Zapier integration", "Zapier integration (old)", "CI deploy bot", "Reporting script",
             "Data warehouse sync", "CRM bridge", "Status page", "Support widget", "Ops dashboard")  # fmt: skip


def seed(rng: random.Random, world: Population) -> AutomationState:
    now = world.now
    org = world.org.domain
    state = AutomationState(clock=now, owner=world.me.email, members=[p.email for p in world.employees])
    heads = [p for p in world.employees if p.manager_id is None]
    state.admins = [world.me.email, next(p.email for p in heads if p.department == "Engineering")]
    customers = [c for c in world.companies if c.relation == "customer"]
    down = rng.sample(customers, 2)
    stale = {f"legacy-erp.{org}": 410, f"newsletter.{org}": 410, f"staging-api.{customers[0].domain}": 0}
    state.down_hosts = {f"api.{down[0].domain}": 503, f"api.{down[1].domain}": 0, **stale}

    def ago(days: float) -> dt.datetime:
        return now - dt.timedelta(minutes=int(days * 1440) + rng.randint(0, 600))

    def url(kind: str) -> str:
        token = f"{rng.getrandbits(64):016x}"
        return {
            "slack": f"https://hooks.slack.com/services/T0{token[:7].upper()}/B0{token[7:14].upper()}/{token}",
            "zapier": f"https://hooks.zapier.com/hooks/catch/{rng.randint(100000, 999999)}/{token[:7]}/",
            "pagerduty": f"https://events.pagerduty.com/integration/{token}/enqueue",
            "erp": f"https://erp.{org}/api/hooks/invoices",
            "legacy": f"https://legacy-erp.{org}/hooks/{token[:8]}",
            "it": f"https://it.{org}/hooks/{token[:8]}",
            "newsletter": f"https://newsletter.{org}/api/subscribers/hook",
            "staging": f"https://staging-api.{customers[0].domain}/webhooks/orders",
        }.get(kind, f"https://api.{kind}/webhooks/orders")

    hooks = [
        *HOOKS,
        *((f"{c.name} order feed", c.domain, ("order.created", "order.shipped"), False) for c in customers),
    ]
    hooks.append((f"{customers[0].name} order feed (staging)", "staging", ("order.created",), True))
    for name, kind, events, disabled in hooks:
        created = ago(rng.uniform(120, 600) if disabled else rng.uniform(20, 300))
        hook = Webhook(
            id=state.new_id("wh"), name=name, target_url=url(kind), events=list(events),
            status="disabled" if disabled else "enabled", created_by=rng.choice(state.admins + state.members[:8]),
            created_at=created,
        )  # fmt: skip
        state.webhooks[hook.id] = hook
        failing = _host(hook.target_url) in state.down_hosts
        count = rng.randint(1, 3) if disabled or failing else rng.randint(1, 5)
        for when in sorted(ago(rng.uniform(95, 115) if disabled else rng.uniform(0.1, 14)) for _ in range(count)):
            event = rng.choice(events)
            code = state.down_hosts.get(_host(hook.target_url), 200) if failing or rng.random() > 0.08 else 500
            delivery = Delivery(
                id=state.new_id("dlv"), webhook_id=hook.id, event=event, target_url=hook.target_url,
                payload=_sample(rng, world, event), status="succeeded" if code == 200 else "failed",
                response_code=code or None, attempts=1 if code == 200 else rng.randint(1, 4), created_at=when,
                last_attempt_at=when + dt.timedelta(minutes=rng.randint(0, 90)), error=ERRORS.get(code, ""),
            )  # fmt: skip
            state.deliveries[delivery.id] = delivery
            hook.last_delivery_at = max(hook.last_delivery_at or delivery.last_attempt_at, delivery.last_attempt_at)
            hook.consecutive_failures = 0 if code == 200 else hook.consecutive_failures + 1
        if disabled:
            hook.consecutive_failures = AUTO_DISABLE if failing else hook.consecutive_failures
            hook.disabled_reason = (
                f"Auto-disabled after {AUTO_DISABLE} consecutive failed deliveries"
                if failing
                else "Replaced by a newer hook"
            )

    for name, trigger, condition, service_name, tool, details, status in RULES:
        owner = rng.choice(state.members)
        rule = Rule(
            id=state.new_id("rule"), name=name, trigger_event=trigger, condition=condition,
            action_service=service_name, action_tool=tool, action_details=details, status=status,
            owner=owner, created_at=ago(rng.uniform(60, 400)),
        )  # fmt: skip
        state.rules[rule.id] = rule
        for _ in range(rng.randint(0, 5) if status == "active" else rng.randint(0, 2)):
            payload = _sample(rng, world, trigger)
            outcome, detail = _evaluate(rule, _payload_data(payload))
            if outcome == "succeeded" and rng.random() < 0.15:
                outcome, detail = "failed", f"{service_name}.{tool} answered 404: target record not found"
            started = ago(rng.uniform(40, 90) if status == "archived" else rng.uniform(0.1, 30))
            run = Run(id=state.new_id("run"), rule_id=rule.id, event=trigger, status=outcome, started_at=started,
                      payload=payload, detail=detail)  # fmt: skip
            state.runs[run.id] = run
            rule.run_count += 1
            rule.last_run_at = max(rule.last_run_at or started, started)

    for index in range(20):
        owner = state.admins[index % 2] if index < 4 else rng.choice(state.members)
        scopes = (
            ["admin"] if index < 2 else rng.sample(["webhooks:read", "webhooks:write", "rules:read", "rules:write"], 2)
        )
        created = ago(rng.uniform(30, 500))
        revoked = index % 5 == 4
        key = ApiKey(
            id=state.new_id("key"), name=KEY_NAMES[index % len(KEY_NAMES)], owner=owner,
            prefix=f"ak_{rng.getrandbits(32):08x}", scopes=scopes, status="revoked" if revoked else "active",
            created_at=created, last_used_at=created + dt.timedelta(days=rng.randint(0, 25)),
            revoked_at=created + dt.timedelta(days=28) if revoked else None, revoked_by=owner if revoked else None,
        )  # fmt: skip
        if not revoked and index % 3 == 0:
            key.last_used_at = now - dt.timedelta(days=rng.randint(0, 3), minutes=rng.randint(5, 600))
        state.api_keys[key.id] = key
    return state


service = Service(
    "automation",
    version=1,
    category="integration",
    description="Webhooks with delivery logs and retries, event-driven automation rules with run history, API keys.",
    state=AutomationState,
    seed=seed,
)


@service.read
def list_webhooks(
    state: AutomationState,
    status: WebhookStatus | None = None,
    event: EventName | None = None,
    query: Query | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Webhook]:
    """List webhooks sorted by name, with optional filters.

    Args:
        status: Only enabled or only disabled webhooks.
        event: Only webhooks subscribed to this event.
        query: Case-insensitive text to find in the name or target URL.
        offset: Number of webhooks to skip.
        limit: Maximum number of webhooks to return.
    """
    rows = [
        h
        for h in state.webhooks.values()
        if (status is None or h.status == status)
        and (event is None or event in h.events)
        and (query is None or contains(h.name, query) or contains(h.target_url, query))
    ]
    return paginate(sorted(rows, key=lambda h: (h.name, h.id)), offset, limit)


@service.read
def get_webhook(state: AutomationState, webhook_id: WebhookId) -> Webhook:
    """Get one webhook.

    Args:
        webhook_id: Id of the webhook.
    """
    return require(state.webhooks, webhook_id, "webhook")


@service.write
def create_webhook(state: AutomationState, name: Title, target_url: Url, events: list[EventName]) -> Webhook:
    """Create an enabled webhook that POSTs the subscribed events to a URL.

    Args:
        name: Name shown in the webhook list.
        target_url: https endpoint that receives the events.
        events: Event names from the catalog, e.g. deal.won, ticket.created, invoice.paid.
    """
    subscribed = _events(events)
    _clash(state, _url(target_url), subscribed)
    hook = Webhook(
        id=state.new_id("wh"),
        name=name,
        target_url=target_url,
        events=subscribed,
        status="enabled",
        created_by=state.owner,
        created_at=state.tick(),
    )
    state.webhooks[hook.id] = hook
    return hook


@service.write
def update_webhook(
    state: AutomationState,
    webhook_id: WebhookId,
    name: Title | None = None,
    target_url: Url | None = None,
    events: list[EventName] | None = None,
) -> Webhook:
    """Change a webhook's name, target URL or events; omitted fields stay as they are.

    Args:
        webhook_id: Id of the webhook.
        name: New name.
        target_url: New https endpoint (later retries go there).
        events: New list of subscribed events (replaces the old one).
    """
    hook = require(state.webhooks, webhook_id, "webhook")
    if name is None and target_url is None and events is None:
        raise BadRequest("argument 'name': give at least one of name, target_url or events")
    url = _url(target_url) if target_url is not None else hook.target_url
    subscribed = _events(events) if events is not None else hook.events
    if hook.status == "enabled":
        _clash(state, url, subscribed, skip=hook.id)
    hook.name, hook.target_url, hook.events = name or hook.name, url, subscribed
    state.tick()
    return hook


@service.write
def set_webhook_status(state: AutomationState, webhook_id: WebhookId, status: WebhookStatus) -> Webhook:
    """Enable or disable a webhook; enabling clears its failure streak.

    Args:
        webhook_id: Id of the webhook.
        status: enabled or disabled.
    """
    hook = require(state.webhooks, webhook_id, "webhook")
    if hook.status == status:
        raise Conflict(f"webhook {webhook_id!r} is already {status!r}")
    if status == "enabled":
        _clash(state, hook.target_url, hook.events, skip=hook.id)
    hook.status = status
    hook.consecutive_failures = 0 if status == "enabled" else hook.consecutive_failures
    hook.disabled_reason = "" if status == "enabled" else f"Disabled by {state.owner}"
    state.tick()
    return hook


@service.write
def delete_webhook(state: AutomationState, webhook_id: WebhookId) -> Deleted:
    """Delete a disabled webhook (disable it first); its delivery log is kept.

    Args:
        webhook_id: Id of the webhook.
    """
    hook = require(state.webhooks, webhook_id, "webhook")
    if hook.status != "disabled":
        raise Conflict(f"webhook {webhook_id!r} is enabled; disable it before deleting")
    del state.webhooks[webhook_id]
    state.tick()
    return Deleted(id=webhook_id, deleted=True)


@service.write
def test_webhook(
    state: AutomationState,
    webhook_id: WebhookId,
    event: EventName | None = None,
    payload: PayloadText | None = None,
) -> Delivery:
    """Test-fire an enabled webhook now; the attempt is recorded as a delivery.

    Args:
        webhook_id: Id of the webhook.
        event: One of the webhook's events (default: its first).
        payload: JSON object to send (default: a small test payload).
    """
    hook = require(state.webhooks, webhook_id, "webhook")
    if hook.status != "enabled":
        raise Conflict(f"webhook {webhook_id!r} is disabled; enable it before firing")
    event = event or hook.events[0]
    if event not in hook.events:
        raise BadRequest(f"argument 'event': webhook {webhook_id!r} is not subscribed to {event!r}")
    body = payload if payload is not None else json.dumps({"event": event, "test": True, "data": {}})
    _payload_data(body)
    now = state.clock
    delivery = Delivery(
        id=state.new_id("dlv"),
        webhook_id=hook.id,
        event=event,
        target_url=hook.target_url,
        payload=body,
        status="failed",
        attempts=0,
        test=True,
        created_at=now,
        last_attempt_at=now,
    )
    state.deliveries[delivery.id] = delivery
    return _deliver(state, hook, delivery)


@service.read
def list_deliveries(
    state: AutomationState,
    webhook_id: WebhookId | None = None,
    status: DeliveryStatus | None = None,
    event: EventName | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Delivery]:
    """List webhook deliveries, newest first, with their payloads.

    Args:
        webhook_id: Only deliveries of this webhook.
        status: Only succeeded or only failed deliveries.
        event: Only deliveries of this event.
        offset: Number of deliveries to skip.
        limit: Maximum number of deliveries to return.
    """
    rows = [
        d
        for d in state.deliveries.values()
        if (webhook_id is None or d.webhook_id == webhook_id)
        and (status is None or d.status == status)
        and (event is None or d.event == event)
    ]
    return paginate(sorted(rows, key=lambda d: (d.created_at, d.id), reverse=True), offset, limit)


@service.write
def retry_delivery(state: AutomationState, delivery_id: DeliveryId) -> Delivery:
    """Retry a failed delivery against its webhook's current URL.

    Args:
        delivery_id: Id of the failed delivery.
    """
    delivery = require(state.deliveries, delivery_id, "delivery")
    if delivery.status == "succeeded":
        raise Conflict(f"delivery {delivery_id!r} already succeeded")
    hook = state.webhooks.get(delivery.webhook_id)
    if hook is None or hook.status != "enabled":
        state_text = "was deleted" if hook is None else "is disabled"
        raise Conflict(f"webhook {delivery.webhook_id!r} {state_text}; delivery {delivery_id!r} cannot be retried")
    if delivery.attempts >= MAX_ATTEMPTS:
        raise Conflict(f"delivery {delivery_id!r} has used all {MAX_ATTEMPTS} attempts")
    return _deliver(state, hook, delivery)


@service.read
def list_rules(
    state: AutomationState,
    status: RuleStatus | None = None,
    trigger_event: EventName | None = None,
    action_service: ServiceName | None = None,
    query: Query | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Rule]:
    """List automation rules sorted by name, with optional filters.

    Args:
        status: Only rules with this status.
        trigger_event: Only rules triggered by this event.
        action_service: Only rules whose action calls this service.
        query: Case-insensitive text to find in the name or action details.
        offset: Number of rules to skip.
        limit: Maximum number of rules to return.
    """
    rows = [
        r
        for r in state.rules.values()
        if (status is None or r.status == status)
        and (trigger_event is None or r.trigger_event == trigger_event)
        and (action_service is None or r.action_service == action_service)
        and (query is None or contains(r.name, query) or contains(r.action_details, query))
    ]
    return paginate(sorted(rows, key=lambda r: (r.name, r.id)), offset, limit)


@service.read
def get_rule(state: AutomationState, rule_id: RuleId) -> Rule:
    """Get one automation rule.

    Args:
        rule_id: Id of the rule.
    """
    return require(state.rules, rule_id, "rule")


@service.write
def create_rule(
    state: AutomationState,
    name: Title,
    trigger_event: EventName,
    condition: Condition,
    action_service: ServiceName,
    action_tool: ToolName,
    action_details: Note,
    owner: EmailAddress,
) -> Rule:
    """Create an active rule: when TRIGGER_EVENT happens and CONDITION holds, call the action tool.

    Args:
        name: Rule name (unique among rules that are not archived).
        trigger_event: Event from the catalog, e.g. deal.won.
        condition: 'always', or clauses like 'amount > 5000 and currency == USD'.
        action_service: Service whose tool the action calls, e.g. crm.
        action_tool: Tool the action calls, e.g. create_task.
        action_details: What the action does with the event's data.
        owner: Email of the member responsible for the rule.
    """
    if trigger_event not in EVENTS:
        raise BadRequest(f"argument 'trigger_event': unknown event {trigger_event!r}; one of {', '.join(EVENTS)}")
    _clauses(condition)
    member = _member(state, owner, "owner")
    for other in state.rules.values():
        if other.status != "archived" and other.name.lower() == name.lower():
            raise Conflict(f"rule {other.id!r} is already called {name!r}")
    now = state.tick()
    rule = Rule(
        id=state.new_id("rule"),
        name=name,
        trigger_event=trigger_event,
        condition=condition.strip(),
        action_service=action_service,
        action_tool=action_tool,
        action_details=action_details,
        status="active",
        owner=member,
        created_at=now,
    )
    state.rules[rule.id] = rule
    return rule


@service.write
def set_rule_status(state: AutomationState, rule_id: RuleId, status: RuleStatus) -> Rule:
    """Activate, pause or archive a rule (archiving is final).

    Args:
        rule_id: Id of the rule.
        status: New status.
    """
    rule = require(state.rules, rule_id, "rule")
    if rule.status == "archived":
        raise Conflict(f"rule {rule_id!r} is archived and can no longer change")
    if rule.status == status:
        raise Conflict(f"rule {rule_id!r} is already {status!r}")
    rule.status = status
    state.tick()
    return rule


@service.write
def run_rule(state: AutomationState, rule_id: RuleId, payload: PayloadText) -> Run:
    """Run an active rule by hand on an event payload; the run lands in its history.

    Args:
        rule_id: Id of the rule.
        payload: JSON object of the event, e.g. {"event": "deal.won", "data": {"amount": 12000}}.
    """
    rule = require(state.rules, rule_id, "rule")
    data = _payload_data(payload)
    if data.get("event") not in (None, rule.trigger_event):
        raise BadRequest(f"argument 'payload': event {data['event']!r} does not trigger rule {rule_id!r}")
    if rule.status != "active":
        raise Conflict(f"rule {rule_id!r} is {rule.status!r}; only active rules run")
    outcome, detail = _evaluate(rule, data)
    now = state.tick()
    run = Run(
        id=state.new_id("run"),
        rule_id=rule.id,
        event=rule.trigger_event,
        status=outcome,
        started_at=now,
        payload=payload,
        detail=detail,
        manual=True,
    )
    state.runs[run.id] = run
    rule.run_count, rule.last_run_at = rule.run_count + 1, now
    return run


@service.read
def list_rule_runs(
    state: AutomationState,
    rule_id: RuleId | None = None,
    status: RunStatus | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Run]:
    """List rule runs, newest first.

    Args:
        rule_id: Only runs of this rule.
        status: Only runs with this outcome.
        offset: Number of runs to skip.
        limit: Maximum number of runs to return.
    """
    rows = [
        r
        for r in state.runs.values()
        if (rule_id is None or r.rule_id == rule_id) and (status is None or r.status == status)
    ]
    return paginate(sorted(rows, key=lambda r: (r.started_at, r.id), reverse=True), offset, limit)


@service.read
def list_api_keys(
    state: AutomationState,
    owner: EmailAddress | None = None,
    status: KeyStatus | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[ApiKey]:
    """List API keys (prefixes only, never secrets), newest first.

    Args:
        owner: Only keys of this member.
        status: Only active or only revoked keys.
        offset: Number of keys to skip.
        limit: Maximum number of keys to return.
    """
    rows = [
        k
        for k in state.api_keys.values()
        if (owner is None or k.owner.lower() == owner.lower()) and (status is None or k.status == status)
    ]
    return paginate(sorted(rows, key=lambda k: (k.created_at, k.id), reverse=True), offset, limit)


@service.write
def create_api_key(state: AutomationState, name: Title, owner: EmailAddress, scopes: list[Scope]) -> NewApiKey:
    """Create an API key; the full secret is returned once and never shown again.

    Args:
        name: What the key is for.
        owner: Email of the member the key belongs to.
        scopes: Permissions; 'admin' only for workspace admins.
    """
    member = _member(state, owner, "owner")
    if not scopes:
        raise BadRequest("argument 'scopes': give at least one scope")
    if "admin" in scopes and member not in state.admins:
        raise Forbidden(f"{member!r} is not a workspace admin and cannot hold the 'admin' scope")
    active = [k for k in state.api_keys.values() if k.owner == member and k.status == "active"]
    same = next((k for k in active if k.name.lower() == name.lower()), None)
    if same is not None:
        raise Conflict(f"{member!r} already has an active key {same.id!r} called {name!r}")
    if len(active) >= MAX_KEYS:
        raise Conflict(f"{member!r} already has {MAX_KEYS} active keys; revoke one first")
    key_id, now = state.new_id("key"), state.tick()
    digest = hashlib.sha256(f"{key_id}:{member}:{name}:{now.isoformat()}".encode()).hexdigest()
    key = NewApiKey(
        id=key_id,
        name=name,
        owner=member,
        prefix=f"ak_{digest[:8]}",
        scopes=list(dict.fromkeys(scopes)),
        status="active",
        created_at=now,
        secret=f"sk_live_{digest[8:40]}",
    )
    state.api_keys[key_id] = ApiKey(**key.model_dump(exclude={"secret"}))
    return key


@service.write
def revoke_api_key(state: AutomationState, key_id: ApiKeyId, revoked_by: EmailAddress) -> ApiKey:
    """Revoke an API key (its owner or a workspace admin may).

    Args:
        key_id: Id of the key.
        revoked_by: Email of the member revoking it.
    """
    key = require(state.api_keys, key_id, "api key")
    member = _member(state, revoked_by, "revoked_by")
    if member != key.owner and member not in state.admins:
        raise Forbidden(f"{member!r} may not revoke {key_id!r}; only its owner {key.owner!r} or an admin may")
    if key.status == "revoked":
        raise Conflict(f"api key {key_id!r} was already revoked at {key.revoked_at}")
    key.status, key.revoked_at, key.revoked_by = "revoked", state.tick(), member
    return key
