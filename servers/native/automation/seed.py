"""Automation seed: webhooks and their deliveries, rules and their runs, API keys."""

from __future__ import annotations

import datetime as dt
import json
import random
from typing import Any

from servers.population import Population

from .models import (
    AUTO_DISABLE,
    ERRORS,
    ApiKey,
    AutomationState,
    Delivery,
    Rule,
    Run,
    Webhook,
    evaluate,
    host_of,
    payload_data,
)


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
        failing = host_of(hook.target_url) in state.down_hosts
        count = rng.randint(1, 3) if disabled or failing else rng.randint(1, 5)
        for when in sorted(ago(rng.uniform(95, 115) if disabled else rng.uniform(0.1, 14)) for _ in range(count)):
            event = rng.choice(events)
            code = state.down_hosts.get(host_of(hook.target_url), 200) if failing or rng.random() > 0.08 else 500
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
            outcome, detail = evaluate(rule, payload_data(payload))
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
