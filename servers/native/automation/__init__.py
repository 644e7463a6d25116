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

import hashlib
import json

from servers.framework import BadRequest, Conflict, Forbidden, Page, Service, contains, paginate, require
from servers.types import EmailAddress, EventName, Limit, Note, Offset, PayloadText, Query, Title, Url

from .models import AUTO_DISABLE as AUTO_DISABLE
from .models import CLAUSE as CLAUSE
from .models import ERRORS as ERRORS
from .models import (
    EVENTS,
    MAX_ATTEMPTS,
    MAX_KEYS,
    ApiKey,
    ApiKeyId,
    AutomationState,
    Condition,
    Deleted,
    Delivery,
    DeliveryId,
    DeliveryStatus,
    KeyStatus,
    NewApiKey,
    Rule,
    RuleId,
    RuleStatus,
    Run,
    RunStatus,
    Scope,
    ServiceName,
    ToolName,
    Webhook,
    WebhookId,
    WebhookStatus,
    checked_events,
    clash,
    deliver,
    evaluate,
    find_member,
    https_url,
    parse_condition,
    payload_data,
)
from .models import ApiSecret as ApiSecret
from .models import HttpStatus as HttpStatus
from .models import KeyPrefix as KeyPrefix
from .models import RunId as RunId
from .seed import HOOKS as HOOKS
from .seed import KEY_NAMES as KEY_NAMES
from .seed import RULES as RULES
from .seed import seed

service = Service(
    "automation",
    version=1,
    category="integration",
    description="Webhooks with delivery logs and retries, event-driven automation rules with run history, API keys.",
    modelled_on="Zapier / Stripe webhook endpoints (deliveries, retries) and GitHub webhooks",
    state=AutomationState,
    seed=seed,
    # delivery attempts update their webhook; a run updates its rule
    system_fields=(
        "created_at",
        "last_delivery_at",
        "consecutive_failures",
        "attempts",
        "last_attempt_at",
        "last_run_at",
        "run_count",
    ),
)


@service.read(op="list", entity="webhook", collection="webhooks", reads=("status", "events", "name", "target_url"))
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


@service.read(op="get", entity="webhook", collection="webhooks")
def get_webhook(state: AutomationState, webhook_id: WebhookId) -> Webhook:
    """Get one webhook.

    Args:
        webhook_id: Id of the webhook.
    """
    return require(state.webhooks, webhook_id, "webhook")


@service.write(
    op="create", entity="webhook", collection="webhooks", sets=("name", "target_url", "events", "status", "created_by")
)
def create_webhook(state: AutomationState, name: Title, target_url: Url, events: list[EventName]) -> Webhook:
    """Create an enabled webhook that POSTs the subscribed events to a URL.

    Args:
        name: Name shown in the webhook list.
        target_url: https endpoint that receives the events.
        events: Event names from the catalog, e.g. deal.won, ticket.created, invoice.paid.
    """
    subscribed = checked_events(events)
    clash(state, https_url(target_url), subscribed)
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


@service.write(op="update", entity="webhook", collection="webhooks", sets=("name", "target_url", "events"))
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
    url = https_url(target_url) if target_url is not None else hook.target_url
    subscribed = checked_events(events) if events is not None else hook.events
    if hook.status == "enabled":
        clash(state, url, subscribed, skip=hook.id)
    hook.name, hook.target_url, hook.events = name or hook.name, url, subscribed
    state.tick()
    return hook


@service.write(op="transition", entity="webhook", collection="webhooks", sets=("status", "disabled_reason"))
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
        clash(state, hook.target_url, hook.events, skip=hook.id)
    hook.status = status
    hook.consecutive_failures = 0 if status == "enabled" else hook.consecutive_failures
    hook.disabled_reason = "" if status == "enabled" else f"Disabled by {state.owner}"
    state.tick()
    return hook


@service.write(op="delete", entity="webhook", collection="webhooks")
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


@service.write(
    op="send",
    entity="delivery",
    collection="deliveries",
    sets=("webhook_id", "event", "target_url", "payload", "status", "response_code", "test", "error"),
)
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
    payload_data(body)
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
    return deliver(state, hook, delivery)


@service.read(op="list", entity="delivery", collection="deliveries", reads=("webhook_id", "status", "event"))
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


@service.write(
    op="send", entity="delivery", collection="deliveries", sets=("target_url", "status", "response_code", "error")
)
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
    return deliver(state, hook, delivery)


@service.read(
    op="list",
    entity="rule",
    collection="rules",
    reads=("status", "trigger_event", "action_service", "name", "action_details"),
)
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


@service.read(op="get", entity="rule", collection="rules")
def get_rule(state: AutomationState, rule_id: RuleId) -> Rule:
    """Get one automation rule.

    Args:
        rule_id: Id of the rule.
    """
    return require(state.rules, rule_id, "rule")


@service.write(
    op="create",
    entity="rule",
    collection="rules",
    sets=("name", "trigger_event", "condition", "action_service", "action_tool", "action_details", "status", "owner"),
)
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
    parse_condition(condition)
    member = find_member(state, owner, "owner")
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


@service.write(op="transition", entity="rule", collection="rules", sets=("status",))
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


@service.write(
    op="action",
    entity="run",
    collection="runs",
    sets=("rule_id", "event", "status", "started_at", "payload", "detail", "manual"),
)
def run_rule(state: AutomationState, rule_id: RuleId, payload: PayloadText) -> Run:
    """Run an active rule by hand on an event payload; the run lands in its history.

    Args:
        rule_id: Id of the rule.
        payload: JSON object of the event, e.g. {"event": "deal.won", "data": {"amount": 12000}}.
    """
    rule = require(state.rules, rule_id, "rule")
    data = payload_data(payload)
    if data.get("event") not in (None, rule.trigger_event):
        raise BadRequest(f"argument 'payload': event {data['event']!r} does not trigger rule {rule_id!r}")
    if rule.status != "active":
        raise Conflict(f"rule {rule_id!r} is {rule.status!r}; only active rules run")
    outcome, detail = evaluate(rule, data)
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


@service.read(op="list", entity="run", collection="runs", reads=("rule_id", "status"))
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


@service.read(op="list", entity="api_key", collection="api_keys", reads=("owner", "status"))
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


@service.write(
    op="create", entity="api_key", collection="api_keys", sets=("name", "owner", "prefix", "scopes", "status")
)
def create_api_key(state: AutomationState, name: Title, owner: EmailAddress, scopes: list[Scope]) -> NewApiKey:
    """Create an API key; the full secret is returned once and never shown again.

    Args:
        name: What the key is for.
        owner: Email of the member the key belongs to.
        scopes: Permissions; 'admin' only for workspace admins.
    """
    member = find_member(state, owner, "owner")
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


@service.write(op="transition", entity="api_key", collection="api_keys", sets=("status", "revoked_at", "revoked_by"))
def revoke_api_key(state: AutomationState, key_id: ApiKeyId, revoked_by: EmailAddress) -> ApiKey:
    """Revoke an API key (its owner or a workspace admin may).

    Args:
        key_id: Id of the key.
        revoked_by: Email of the member revoking it.
    """
    key = require(state.api_keys, key_id, "api key")
    member = find_member(state, revoked_by, "revoked_by")
    if member != key.owner and member not in state.admins:
        raise Forbidden(f"{member!r} may not revoke {key_id!r}; only its owner {key.owner!r} or an admin may")
    if key.status == "revoked":
        raise Conflict(f"api key {key_id!r} was already revoked at {key.revoked_at}")
    key.status, key.revoked_at, key.revoked_by = "revoked", state.tick(), member
    return key
