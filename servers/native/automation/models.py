"""Automation service: id and semantic types, event catalog and limits, records, state and helpers."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import Field

from servers.framework import BadRequest, Conflict, NotFound, Record, ServiceState
from servers.roles import ROLE_KEY, role
from servers.types import (
    Count,
    DateTime,
    EmailAddress,
    EventName,
    Flag,
    Note,
    PayloadText,
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
    created_by: EmailAddress = Field(description="Who created the webhook.", json_schema_extra={ROLE_KEY: "author"})
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
    owner: EmailAddress = Field(description="Member responsible for the rule.", json_schema_extra={ROLE_KEY: "owner"})
    created_at: DateTime
    last_run_at: DateTime | None = Field(default=None, description="Time of the latest run.")
    run_count: Count = Field(default=0, description="Runs so far.")


class Run(Record):
    id: RunId
    rule_id: RuleId
    event: EventName
    status: RunStatus
    started_at: Annotated[DateTime, role("start")]
    payload: PayloadText
    detail: Note = Field(description="What the run did, or why it was skipped or failed.")
    manual: Flag = Field(default=False, description="Whether the run was started by hand.")


class ApiKey(Record):
    id: ApiKeyId
    name: Title
    owner: EmailAddress = Field(description="Member the key belongs to.", json_schema_extra={ROLE_KEY: "owner"})
    prefix: KeyPrefix
    scopes: list[Scope] = Field(description="Permissions of the key.")
    status: KeyStatus
    created_at: DateTime
    last_used_at: DateTime | None = Field(
        default=None, description="Last time the key authenticated a call.", json_schema_extra={ROLE_KEY: "event"}
    )
    revoked_at: DateTime | None = Field(
        default=None, description="When the key was revoked.", json_schema_extra={ROLE_KEY: "event"}
    )
    revoked_by: EmailAddress | None = Field(
        default=None, description="Who revoked the key.", json_schema_extra={ROLE_KEY: "party"}
    )


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


def host_of(url: str) -> str:
    return url.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0].lower()


def find_member(state: AutomationState, email: str, argument: str) -> str:
    found = next((m for m in state.members if m.lower() == email.lower()), None)
    if found is None:
        raise NotFound(f"member {email!r} not found in the workspace (argument {argument!r})")
    return found


def checked_events(events: list[str]) -> list[str]:
    unknown = [e for e in events if e not in EVENTS]
    if not events or unknown:
        raise BadRequest(f"argument 'events': unknown {unknown!r}; give events from {', '.join(EVENTS)}")
    return list(dict.fromkeys(events))


def https_url(url: str) -> str:
    if not url.lower().startswith("https://"):
        raise BadRequest(f"argument 'target_url': {url!r} must use https")
    return url


def clash(state: AutomationState, url: str, events: list[str], skip: str = "") -> None:
    for hook in state.webhooks.values():
        shared = [e for e in events if e in hook.events]
        if hook.id != skip and hook.status == "enabled" and hook.target_url.lower() == url.lower() and shared:
            raise Conflict(f"enabled webhook {hook.id!r} already sends {shared[0]!r} to {url!r}")


def deliver(state: AutomationState, hook: Webhook, delivery: Delivery) -> Delivery:
    """One delivery attempt to the webhook's current URL; failures count towards auto-disabling."""
    code = state.down_hosts.get(host_of(hook.target_url), 200)
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


def parse_condition(condition: str) -> list[tuple[str, str, str]]:
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


def evaluate(rule: Rule, data: dict[str, Any]) -> tuple[str, str]:
    """(run status, detail) of running ``rule`` on an event's data."""
    for field, op, expected in parse_condition(rule.condition):
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


def payload_data(payload: str) -> dict[str, Any]:
    try:
        parsed = json.loads(payload)
    except (ValueError, RecursionError):
        raise BadRequest("argument 'payload': not valid JSON") from None
    if not isinstance(parsed, dict):
        raise BadRequest("argument 'payload': must be a JSON object")
    inner = parsed.get("data")
    return {**parsed, **inner} if isinstance(inner, dict) else parsed
