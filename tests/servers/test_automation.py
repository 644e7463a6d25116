"""The automation service: webhooks, deliveries and retries, rules and runs, API keys."""

from __future__ import annotations

import json
from typing import Any

import pytest

from servers.native.automation import EVENTS, AutomationState, Delivery, Webhook
from servers.native.automation import service as svc
from servers.population import Population


@pytest.fixture
def state() -> AutomationState:
    return svc.seed_state(7)


def call(state: AutomationState, tool: str, **args: Any) -> dict[str, Any]:
    return svc.call(state, tool, args)


def healthy(state: AutomationState) -> Webhook:
    return next(
        h
        for h in state.webhooks.values()
        if h.status == "enabled" and h.target_url.split("/")[2] not in state.down_hosts
    )


def failing(state: AutomationState) -> Webhook:
    return next(
        h for h in state.webhooks.values() if h.status == "enabled" and h.target_url.split("/")[2] in state.down_hosts
    )


def failed_delivery(state: AutomationState, hook: Webhook) -> Delivery:
    return next(d for d in state.deliveries.values() if d.webhook_id == hook.id and d.status == "failed")


def active_rule(state: AutomationState, condition: str) -> str:
    return next(r.id for r in state.rules.values() if r.status == "active" and r.condition == condition)


# --- webhooks ----------------------------------------------------------------------------------


def test_list_webhooks_filters_by_status_and_paginates(state: AutomationState) -> None:
    disabled = [h for h in state.webhooks.values() if h.status == "disabled"]
    page = call(state, "list_webhooks", status="disabled", limit=2)["data"]
    assert page["total"] == len(disabled) and len(page["items"]) == 2 and page["next_offset"] == 2
    names = [h["name"] for h in call(state, "list_webhooks", status="disabled", limit=50)["data"]["items"]]
    assert names == sorted(names)


def test_list_webhooks_by_event_and_query(state: AutomationState) -> None:
    page = call(state, "list_webhooks", event="deal.won", query="slack")["data"]
    assert page["total"] >= 2 and all("deal.won" in h["events"] for h in page["items"])


def test_get_webhook_unknown_id_is_404(state: AutomationState) -> None:
    env = call(state, "get_webhook", webhook_id="wh_9999")
    assert env["error"]["code"] == 404 and "'wh_9999'" in env["error"]["message"]


def test_create_webhook(state: AutomationState) -> None:
    env = call(
        state,
        "create_webhook",
        name="Won deals → BI",
        target_url="https://bi.example.com/hook",
        events=["deal.won", "deal.won", "deal.lost"],
    )
    assert env["success"] and env["data"]["status"] == "enabled" and env["data"]["events"] == ["deal.won", "deal.lost"]
    assert env["data"]["created_by"] == state.owner


def test_create_webhook_with_unknown_event_is_400(state: AutomationState) -> None:
    env = call(state, "create_webhook", name="x", target_url="https://x.example.com/h", events=["deal.closed"])
    assert env["error"]["code"] == 400 and "'events'" in env["error"]["message"]


def test_create_webhook_needs_https(state: AutomationState) -> None:
    env = call(state, "create_webhook", name="x", target_url="http://x.example.com/h", events=["deal.won"])
    assert env["error"]["code"] == 400 and "'target_url'" in env["error"]["message"]


def test_same_event_to_the_same_url_is_409(state: AutomationState) -> None:
    hook = healthy(state)
    before = svc.state_hash(state)
    env = call(state, "create_webhook", name="dup", target_url=hook.target_url, events=hook.events[:1])
    assert env["error"]["code"] == 409 and repr(hook.id) in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_update_webhook_url(state: AutomationState) -> None:
    hook = failing(state)
    env = call(state, "update_webhook", webhook_id=hook.id, target_url="https://orders.example.com/v2/hook")
    assert env["success"] and env["data"]["target_url"] == "https://orders.example.com/v2/hook"


def test_update_webhook_without_changes_is_400(state: AutomationState) -> None:
    env = call(state, "update_webhook", webhook_id=healthy(state).id)
    assert env["error"]["code"] == 400


def test_disable_then_enable(state: AutomationState) -> None:
    hook = failing(state)
    assert call(state, "set_webhook_status", webhook_id=hook.id, status="disabled")["data"]["status"] == "disabled"
    env = call(state, "set_webhook_status", webhook_id=hook.id, status="enabled")
    assert env["success"] and env["data"]["consecutive_failures"] == 0 and env["data"]["disabled_reason"] == ""


def test_setting_the_same_status_is_409(state: AutomationState) -> None:
    env = call(state, "set_webhook_status", webhook_id=healthy(state).id, status="enabled")
    assert env["error"]["code"] == 409


def test_enabled_webhook_cannot_be_deleted(state: AutomationState) -> None:
    env = call(state, "delete_webhook", webhook_id=healthy(state).id)
    assert env["error"]["code"] == 409 and "disable" in env["error"]["message"]


def test_delete_disabled_webhook_keeps_its_log(state: AutomationState) -> None:
    stale = next(h for h in state.webhooks.values() if h.status == "disabled")
    logged = [d.id for d in state.deliveries.values() if d.webhook_id == stale.id]
    env = call(state, "delete_webhook", webhook_id=stale.id)
    assert env["success"] and env["data"] == {"id": stale.id, "deleted": True}
    assert stale.id not in state.webhooks and all(d in state.deliveries for d in logged)


# --- deliveries ----------------------------------------------------------------------------------


def test_test_fire_records_a_delivery(state: AutomationState) -> None:
    hook = healthy(state)
    env = call(state, "test_webhook", webhook_id=hook.id)
    data = env["data"]
    assert env["success"] and data["test"] and data["status"] == "succeeded" and data["response_code"] == 200
    assert json.loads(data["payload"])["event"] == hook.events[0]
    listed = call(state, "list_deliveries", webhook_id=hook.id, limit=1)["data"]["items"]
    assert listed[0]["id"] == data["id"]


def test_test_fire_against_a_down_endpoint_fails(state: AutomationState) -> None:
    hook = failing(state)
    env = call(state, "test_webhook", webhook_id=hook.id, payload='{"event": "order.created", "data": {}}')
    assert env["success"] and env["data"]["status"] == "failed" and env["data"]["error"]
    assert state.webhooks[hook.id].consecutive_failures >= 1


def test_firing_a_disabled_webhook_is_409(state: AutomationState) -> None:
    stale = next(h for h in state.webhooks.values() if h.status == "disabled")
    before = svc.state_hash(state)
    env = call(state, "test_webhook", webhook_id=stale.id)
    assert env["error"]["code"] == 409 and repr(stale.id) in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_firing_an_unsubscribed_event_is_400(state: AutomationState) -> None:
    hook = healthy(state)
    other = next(e for e in EVENTS if e not in hook.events)
    env = call(state, "test_webhook", webhook_id=hook.id, event=other)
    assert env["error"]["code"] == 400 and "'event'" in env["error"]["message"]


def test_invalid_json_payload_is_400(state: AutomationState) -> None:
    env = call(state, "test_webhook", webhook_id=healthy(state).id, payload="{not json")
    assert env["error"]["code"] == 400 and "'payload'" in env["error"]["message"]


def test_list_deliveries_filters_failed(state: AutomationState) -> None:
    page = call(state, "list_deliveries", status="failed", limit=100)["data"]
    assert page["total"] >= 3 and all(d["status"] == "failed" for d in page["items"])
    times = [d["created_at"] for d in page["items"]]
    assert times == sorted(times, reverse=True)


def test_retry_fails_again_while_the_endpoint_is_down(state: AutomationState) -> None:
    delivery = failed_delivery(state, failing(state))
    attempts = delivery.attempts
    env = call(state, "retry_delivery", delivery_id=delivery.id)
    assert env["success"] and env["data"]["status"] == "failed" and env["data"]["attempts"] == attempts + 1


def test_retry_succeeds_after_fixing_the_url(state: AutomationState) -> None:
    hook = failing(state)
    delivery = failed_delivery(state, hook)
    call(state, "update_webhook", webhook_id=hook.id, target_url="https://orders.example.com/v2/hook")
    env = call(state, "retry_delivery", delivery_id=delivery.id)
    assert env["success"] and env["data"]["status"] == "succeeded"
    assert env["data"]["target_url"] == "https://orders.example.com/v2/hook"
    assert state.webhooks[hook.id].consecutive_failures == 0


def test_retrying_a_succeeded_delivery_is_409(state: AutomationState) -> None:
    done = next(d for d in state.deliveries.values() if d.status == "succeeded")
    env = call(state, "retry_delivery", delivery_id=done.id)
    assert env["error"]["code"] == 409 and repr(done.id) in env["error"]["message"]


def test_retry_on_a_disabled_webhook_is_409(state: AutomationState) -> None:
    stale = next(
        d
        for d in state.deliveries.values()
        if d.status == "failed" and state.webhooks[d.webhook_id].status == "disabled"
    )
    env = call(state, "retry_delivery", delivery_id=stale.id)
    assert env["error"]["code"] == 409 and "disabled" in env["error"]["message"]


def test_repeated_failures_auto_disable_the_webhook(state: AutomationState) -> None:
    hook = failing(state)
    delivery = failed_delivery(state, hook)
    while state.webhooks[hook.id].status == "enabled":
        assert call(state, "retry_delivery", delivery_id=delivery.id)["success"]
    assert (
        state.webhooks[hook.id].consecutive_failures == 5 and "Auto-disabled" in state.webhooks[hook.id].disabled_reason
    )


# --- rules -------------------------------------------------------------------------------------------


def test_list_rules_filters_and_paginates(state: AutomationState) -> None:
    won = [r for r in state.rules.values() if r.trigger_event == "deal.won"]
    page = call(state, "list_rules", trigger_event="deal.won", limit=2)["data"]
    assert page["total"] == len(won) and page["next_offset"] == 2
    assert call(state, "list_rules", status="archived")["data"]["total"] >= 1


def test_get_rule(state: AutomationState) -> None:
    rule_id = active_rule(state, "amount > 10000")
    env = call(state, "get_rule", rule_id=rule_id)
    assert env["success"] and env["data"]["trigger_event"] == "deal.won"


def test_create_rule(state: AutomationState) -> None:
    env = call(
        state,
        "create_rule",
        name="Lost deal → survey",
        trigger_event="deal.lost",
        condition="amount >= 5000 and currency == USD",
        action_service="email",
        action_tool="send_message",
        action_details="Ask the buyer why",
        owner=state.owner,
    )
    assert env["success"] and env["data"]["status"] == "active" and env["data"]["run_count"] == 0


def test_unreadable_condition_is_400(state: AutomationState) -> None:
    env = call(
        state,
        "create_rule",
        name="x",
        trigger_event="deal.won",
        condition="amount is big",
        action_service="crm",
        action_tool="create_task",
        action_details="",
        owner=state.owner,
    )
    assert env["error"]["code"] == 400 and "'condition'" in env["error"]["message"]


def test_rule_owner_must_be_a_member(state: AutomationState) -> None:
    env = call(
        state,
        "create_rule",
        name="x",
        trigger_event="deal.won",
        condition="always",
        action_service="crm",
        action_tool="create_task",
        action_details="",
        owner="stranger@example.com",
    )
    assert env["error"]["code"] == 404 and "'stranger@example.com'" in env["error"]["message"]


def test_duplicate_rule_name_is_409(state: AutomationState) -> None:
    existing = next(r for r in state.rules.values() if r.status == "active")
    env = call(
        state,
        "create_rule",
        name=existing.name.upper(),
        trigger_event="deal.won",
        condition="always",
        action_service="crm",
        action_tool="create_task",
        action_details="",
        owner=state.owner,
    )
    assert env["error"]["code"] == 409 and repr(existing.id) in env["error"]["message"]


def test_archived_rule_is_final(state: AutomationState) -> None:
    archived = next(r for r in state.rules.values() if r.status == "archived")
    env = call(state, "set_rule_status", rule_id=archived.id, status="active")
    assert env["error"]["code"] == 409 and "archived" in env["error"]["message"]


def test_pause_a_rule(state: AutomationState) -> None:
    rule_id = active_rule(state, "amount > 10000")
    assert call(state, "set_rule_status", rule_id=rule_id, status="paused")["data"]["status"] == "paused"


def test_run_rule_when_the_condition_holds(state: AutomationState) -> None:
    rule_id = active_rule(state, "amount > 10000")
    count = state.rules[rule_id].run_count
    env = call(state, "run_rule", rule_id=rule_id, payload='{"event": "deal.won", "data": {"amount": 25000}}')
    assert env["success"] and env["data"]["status"] == "succeeded" and env["data"]["manual"]
    assert "tracker.create_issue" in env["data"]["detail"] and state.rules[rule_id].run_count == count + 1
    runs = call(state, "list_rule_runs", rule_id=rule_id, limit=1)["data"]["items"]
    assert runs[0]["id"] == env["data"]["id"]


def test_run_rule_skips_when_the_condition_fails(state: AutomationState) -> None:
    rule_id = active_rule(state, "amount > 10000")
    env = call(state, "run_rule", rule_id=rule_id, payload='{"amount": 900}')
    assert env["data"]["status"] == "skipped"


def test_run_rule_fails_when_the_field_is_missing(state: AutomationState) -> None:
    env = call(state, "run_rule", rule_id=active_rule(state, "amount > 10000"), payload="{}")
    assert env["data"]["status"] == "failed" and "'amount'" in env["data"]["detail"]


def test_paused_rule_does_not_run(state: AutomationState) -> None:
    paused = next(r for r in state.rules.values() if r.status == "paused")
    before = svc.state_hash(state)
    env = call(state, "run_rule", rule_id=paused.id, payload="{}")
    assert env["error"]["code"] == 409 and svc.state_hash(state) == before


def test_run_rule_with_the_wrong_event_is_400(state: AutomationState) -> None:
    env = call(state, "run_rule", rule_id=active_rule(state, "amount > 10000"), payload='{"event": "ticket.created"}')
    assert env["error"]["code"] == 400 and "'payload'" in env["error"]["message"]


def test_list_rule_runs_by_status(state: AutomationState) -> None:
    page = call(state, "list_rule_runs", status="skipped")["data"]
    assert all(r["status"] == "skipped" for r in page["items"])


# --- API keys ---------------------------------------------------------------------------------------


def test_create_api_key_shows_the_secret_once(state: AutomationState) -> None:
    env = call(state, "create_api_key", name="Warehouse export", owner=state.owner, scopes=["rules:read"])
    key = env["data"]
    assert env["success"] and key["secret"].startswith("sk_live_") and key["status"] == "active"
    listed = call(state, "list_api_keys", owner=state.owner, limit=1)["data"]["items"][0]
    assert listed["id"] == key["id"] and "secret" not in listed


def test_admin_scope_is_reserved_to_admins(state: AutomationState) -> None:
    member = next(m for m in state.members if m not in state.admins)
    env = call(state, "create_api_key", name="Root", owner=member, scopes=["admin"])
    assert env["error"]["code"] == 403 and repr(member) in env["error"]["message"]


def test_too_many_active_keys_is_409(state: AutomationState) -> None:
    member = next(m for m in state.members if m not in state.admins)
    for index in range(5):
        call(state, "create_api_key", name=f"Script {index}", owner=member, scopes=["rules:read"])
    env = call(state, "create_api_key", name="One more", owner=member, scopes=["rules:read"])
    assert env["error"]["code"] == 409


def test_revoke_by_owner_then_again_is_409(state: AutomationState) -> None:
    key = next(k for k in state.api_keys.values() if k.status == "active")
    env = call(state, "revoke_api_key", key_id=key.id, revoked_by=key.owner)
    assert env["success"] and env["data"]["status"] == "revoked" and env["data"]["revoked_by"] == key.owner
    assert call(state, "revoke_api_key", key_id=key.id, revoked_by=key.owner)["error"]["code"] == 409


def test_revoke_by_someone_else_is_403(state: AutomationState) -> None:
    key = next(k for k in state.api_keys.values() if k.status == "active" and k.owner not in state.admins)
    other = next(m for m in state.members if m != key.owner and m not in state.admins)
    before = svc.state_hash(state)
    assert call(state, "revoke_api_key", key_id=key.id, revoked_by=other)["error"]["code"] == 403
    assert svc.state_hash(state) == before


def test_revoke_unknown_key_is_404(state: AutomationState) -> None:
    env = call(state, "revoke_api_key", key_id="key_0000", revoked_by=state.owner)
    assert env["error"]["code"] == 404 and "'key_0000'" in env["error"]["message"]


# --- the shared world --------------------------------------------------------------------------------


def test_people_are_population_employees_and_payloads_name_the_world() -> None:
    world = Population.generate(7)
    state = svc.seed_state(7)
    employees = {p.email for p in world.employees}
    assert state.owner == world.me.email and set(state.members) == employees
    assert all(r.owner in employees for r in state.rules.values())
    assert all(k.owner in employees for k in state.api_keys.values())
    companies = {c.name for c in world.companies}
    deal_payloads = [json.loads(d.payload)["data"] for d in state.deliveries.values() if d.event.startswith("deal.")]
    assert deal_payloads and all(p["company"] in companies and p["owner"] in employees for p in deal_payloads)
