"""The HR service: employees, org chart, leave requests, balances, onboarding and their rules."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from servers.native.hr import Employee, HrState, LeaveRequest, workdays
from servers.native.hr import service as svc
from servers.population import Population


@pytest.fixture
def state() -> HrState:
    return svc.seed_state(7)


def call(state: HrState, tool: str, **args: Any) -> dict[str, Any]:
    return svc.call(state, tool, args)


def employee(state: HrState, email: str) -> Employee:
    return next(e for e in state.employees.values() if e.email == email)


def me(state: HrState) -> Employee:
    return employee(state, Population.generate(7).me.email)


def report_of(state: HrState, manager: Employee) -> Employee:
    return next(e for e in state.employees.values() if e.manager_email == manager.email and e.status == "active")


def pending_of_report(state: HrState) -> LeaveRequest:
    """A pending request that the user (a department head) may decide."""
    reports = {e.email for e in state.employees.values() if e.manager_email == me(state).email}
    return next(r for r in state.leave_requests.values() if r.status == "pending" and r.employee_email in reports)


def next_monday(state: HrState, weeks: int) -> dt.date:
    today = state.clock.date()
    return today + dt.timedelta(days=7 * weeks - today.weekday())


def free_span(state: HrState, email: str, days: int = 5) -> tuple[dt.date, dt.date]:
    """Monday to the day that makes ``days`` working days, with no pending or approved leave in between."""
    for weeks in range(1, 40):
        start = next_monday(state, weeks)
        end = start + dt.timedelta(days=days + 2 * ((days - 1) // 5) - 1)
        busy = any(
            r.employee_email == email
            and r.status in ("pending", "approved")
            and r.start_date <= end
            and start <= r.end_date
            for r in state.leave_requests.values()
        )
        if not busy:
            return start, end
    raise AssertionError("no free span")


def request(state: HrState, email: str, kind: str = "vacation", days: int = 5) -> dict[str, Any]:
    start, end = free_span(state, email, days)
    return call(
        state,
        "request_leave",
        employee_email=email,
        leave_type=kind,
        start_date=start.isoformat(),
        end_date=end.isoformat(),
    )


# --- reading ---------------------------------------------------------------------------------


def test_list_employees_filters_by_department_and_paginates(state: HrState) -> None:
    sales = [e for e in state.employees.values() if e.department == "Sales"]
    page = call(state, "list_employees", department="sales", limit=2)["data"]
    assert page["total"] == len(sales) and len(page["items"]) == 2 and page["next_offset"] == 2
    rest = call(state, "list_employees", department="Sales", offset=2)["data"]
    assert rest["next_offset"] is None and len(rest["items"]) == len(sales) - 2
    names = [e["name"] for e in page["items"] + rest["items"]]
    assert names == sorted(names)


def test_list_employees_filters_by_status(state: HrState) -> None:
    page = call(state, "list_employees", status="terminated")["data"]
    assert page["total"] == 2 and all(e["termination_date"] for e in page["items"])


def test_get_employee_by_email(state: HrState) -> None:
    user = me(state)
    env = call(state, "get_employee", email=user.email.upper())
    assert env["success"] and env["data"]["id"] == user.id and env["data"]["title"] == user.title


def test_get_employee_unknown_email_is_404(state: HrState) -> None:
    env = call(state, "get_employee", email="nobody@example.com")
    assert env["error"]["code"] == 404 and "'nobody@example.com'" in env["error"]["message"]


def test_direct_reports_of_the_user(state: HrState) -> None:
    user = me(state)
    rows = call(state, "list_direct_reports", manager_email=user.email)["data"]
    assert rows and all(r["manager_email"] == user.email and r["status"] != "terminated" for r in rows)


def test_indirect_reports_include_reports_of_reports(state: HrState) -> None:
    user = me(state)
    report = report_of(state, user)
    call(
        state,
        "update_employee",
        email=report_of(state, employee(state, state.hr_admins[0])).email,
        manager_email=report.email,
    )
    direct = call(state, "list_direct_reports", manager_email=user.email)["data"]
    everyone = call(state, "list_direct_reports", manager_email=user.email, include_indirect=True)["data"]
    assert len(everyone) == len(direct) + 1


def test_leave_requests_filter_by_approver_queue(state: HrState) -> None:
    user = me(state)
    page = call(state, "list_leave_requests", approver_email=user.email, status="pending")["data"]
    reports = {e.email for e in state.employees.values() if e.manager_email == user.email}
    assert page["total"] >= 1 and all(r["employee_email"] in reports for r in page["items"])


def test_leave_requests_filter_by_date_window(state: HrState) -> None:
    today = state.clock.date().isoformat()
    page = call(state, "list_leave_requests", from_date=today, to_date=today, status="approved")["data"]
    assert page["total"] >= 1
    assert all(r["start_date"] <= today <= r["end_date"] for r in page["items"])


def test_get_leave_request_unknown_id_is_404(state: HrState) -> None:
    env = call(state, "get_leave_request", request_id="lv_9999")
    assert env["error"]["code"] == 404 and "'lv_9999'" in env["error"]["message"]


def test_balances_account_for_approved_and_pending_days(state: HrState) -> None:
    for balance in state.balances.values():
        rows = [
            r
            for r in state.leave_requests.values()
            if r.employee_email == balance.employee_email
            and r.leave_type == balance.leave_type
            and r.start_date.year == balance.year
        ]
        assert balance.used == sum(r.days for r in rows if r.status == "approved")
        assert balance.available == balance.entitled - balance.used - balance.pending


# --- leave requests ----------------------------------------------------------------------------


def test_request_leave_counts_working_days_and_reserves_balance(state: HrState) -> None:
    email = report_of(state, me(state)).email
    before = next(
        b for b in call(state, "get_leave_balances", employee_email=email)["data"] if b["leave_type"] == "vacation"
    )
    env = request(state, email, days=5)
    assert env["success"] and env["data"]["days"] == 5 and env["data"]["status"] == "pending"
    after = next(
        b for b in call(state, "get_leave_balances", employee_email=email)["data"] if b["leave_type"] == "vacation"
    )
    assert after["pending"] == before["pending"] + 5 and after["available"] == before["available"] - 5


def test_overlapping_leave_is_409(state: HrState) -> None:
    other = next(r for r in state.leave_requests.values() if r.status == "pending" and r.leave_type == "vacation")
    env = call(
        state,
        "request_leave",
        employee_email=other.employee_email,
        leave_type="sick",
        start_date=other.start_date.isoformat(),
        end_date=other.start_date.isoformat(),
    )
    assert env["error"]["code"] == 409 and repr(other.id) in env["error"]["message"]


def test_leave_beyond_the_balance_is_400_and_changes_nothing(state: HrState) -> None:
    email = report_of(state, me(state)).email
    before = svc.state_hash(state)
    env = request(state, email, days=30)
    assert (
        env["error"]["code"] == 400 and "'end_date'" in env["error"]["message"] and "balance" in env["error"]["message"]
    )
    assert svc.state_hash(state) == before


def test_parental_leave_skips_the_balance_but_is_capped(state: HrState) -> None:
    email = report_of(state, me(state)).email
    assert request(state, email, kind="parental", days=30)["success"]
    env = request(state, email, kind="parental", days=85)
    assert env["error"]["code"] == 400 and "80" in env["error"]["message"]


def test_vacation_cannot_start_in_the_past(state: HrState) -> None:
    day = (state.clock.date() - dt.timedelta(days=7)).isoformat()
    env = call(
        state, "request_leave", employee_email=me(state).email, leave_type="vacation", start_date=day, end_date=day
    )
    assert env["error"]["code"] == 400 and "'start_date'" in env["error"]["message"]


def test_end_before_start_is_400(state: HrState) -> None:
    start, _ = free_span(state, me(state).email)
    env = call(
        state,
        "request_leave",
        employee_email=me(state).email,
        leave_type="vacation",
        start_date=start.isoformat(),
        end_date=(start - dt.timedelta(days=1)).isoformat(),
    )
    assert env["error"]["code"] == 400 and "'end_date'" in env["error"]["message"]


def test_terminated_employee_cannot_request_leave(state: HrState) -> None:
    gone = next(e for e in state.employees.values() if e.status == "terminated")
    env = request(state, gone.email)
    assert env["error"]["code"] == 409 and "terminated" in env["error"]["message"]


def test_manager_approves_a_pending_request(state: HrState) -> None:
    pending = pending_of_report(state)
    env = call(state, "approve_leave_request", request_id=pending.id, approver_email=me(state).email, note="Enjoy")
    assert env["success"] and env["data"]["status"] == "approved" and env["data"]["decided_by"] == me(state).email
    balance = next(
        b
        for b in state.balances.values()
        if b.employee_email == pending.employee_email and b.leave_type == pending.leave_type
    )
    assert balance.pending == sum(
        r.days
        for r in state.leave_requests.values()
        if r.status == "pending" and r.employee_email == pending.employee_email and r.leave_type == pending.leave_type
    )


def test_someone_else_than_the_manager_gets_403(state: HrState) -> None:
    pending = pending_of_report(state)
    outsider = next(e for e in state.employees.values() if e.department == "Sales" and e.status == "active")
    before = svc.state_hash(state)
    env = call(state, "approve_leave_request", request_id=pending.id, approver_email=outsider.email)
    assert env["error"]["code"] == 403 and repr(outsider.email) in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_nobody_approves_their_own_leave(state: HrState) -> None:
    admin = employee(state, state.hr_admins[0])
    assert request(state, admin.email)["success"]
    own = max(state.leave_requests.values(), key=lambda r: r.id)
    env = call(state, "approve_leave_request", request_id=own.id, approver_email=admin.email)
    assert env["error"]["code"] == 403


def test_managerless_employees_are_decided_by_hr(state: HrState) -> None:
    user = me(state)
    assert request(state, user.email, days=2)["success"]
    own = max(state.leave_requests.values(), key=lambda r: r.id)
    env = call(state, "approve_leave_request", request_id=own.id, approver_email=state.hr_admins[1])
    assert env["success"] and env["data"]["decided_by"] == state.hr_admins[1]


def test_deciding_twice_is_409(state: HrState) -> None:
    pending = pending_of_report(state)
    call(state, "reject_leave_request", request_id=pending.id, approver_email=me(state).email, reason="Release week")
    env = call(state, "approve_leave_request", request_id=pending.id, approver_email=me(state).email)
    assert env["error"]["code"] == 409 and "'rejected'" in env["error"]["message"]


def test_reject_needs_a_reason(state: HrState) -> None:
    env = call(
        state,
        "reject_leave_request",
        request_id=pending_of_report(state).id,
        approver_email=me(state).email,
        reason=" ",
    )
    assert env["error"]["code"] == 400 and "'reason'" in env["error"]["message"]


def test_approve_unknown_request_is_404(state: HrState) -> None:
    env = call(state, "approve_leave_request", request_id="lv_0000", approver_email=me(state).email)
    assert env["error"]["code"] == 404 and "'lv_0000'" in env["error"]["message"]


def test_cancel_pending_request_frees_the_days(state: HrState) -> None:
    pending = pending_of_report(state)
    env = call(state, "cancel_leave_request", request_id=pending.id)
    assert env["success"] and env["data"]["status"] == "cancelled"
    balance = next(
        b
        for b in state.balances.values()
        if b.employee_email == pending.employee_email and b.leave_type == pending.leave_type
    )
    assert balance.available == balance.entitled - balance.used - balance.pending


def test_leave_that_started_cannot_be_cancelled(state: HrState) -> None:
    started = next(
        r for r in state.leave_requests.values() if r.status == "approved" and r.start_date <= state.clock.date()
    )
    env = call(state, "cancel_leave_request", request_id=started.id)
    assert env["error"]["code"] == 409 and repr(started.id) in env["error"]["message"]


# --- people changes --------------------------------------------------------------------------


def test_hire_employee_creates_balances_and_checklist(state: HrState) -> None:
    start = next_monday(state, 3).isoformat()
    env = call(
        state,
        "hire_employee",
        email="nina.okafor@example.com",
        name="Nina Okafor",
        title="Accountant",
        department="Finance",
        manager_email=me(state).email,
        start_date=start,
        salary=78000,
        currency="USD",
        location="Austin",
    )
    assert env["success"] and env["data"]["status"] == "active"
    balances = call(state, "get_leave_balances", employee_email="nina.okafor@example.com")["data"]
    assert {b["leave_type"] for b in balances} == {"vacation", "sick"}
    tasks = call(state, "list_onboarding_tasks", employee_email="nina.okafor@example.com")["data"]
    assert tasks["total"] == 5 and all(t["status"] == "open" for t in tasks["items"])


def test_hiring_an_existing_email_is_409(state: HrState) -> None:
    user = me(state)
    env = call(
        state,
        "hire_employee",
        email=user.email,
        name=user.name,
        title="Buyer",
        department="Operations",
        manager_email=user.email,
        start_date=state.clock.date().isoformat(),
        salary=1,
        currency="USD",
        location="Austin",
    )
    assert env["error"]["code"] == 409 and "'email'" in env["error"]["message"]


def test_hire_into_unknown_department_is_400(state: HrState) -> None:
    env = call(
        state,
        "hire_employee",
        email="a.b@example.com",
        name="A B",
        title="Buyer",
        department="Space",
        manager_email=me(state).email,
        start_date=state.clock.date().isoformat(),
        salary=1,
        currency="USD",
        location="Austin",
    )
    assert env["error"]["code"] == 400 and "'department'" in env["error"]["message"]


def test_update_title_and_department(state: HrState) -> None:
    target = report_of(state, me(state))
    env = call(state, "update_employee", email=target.email, title="Senior Buyer", department="finance")
    assert env["success"] and env["data"]["title"] == "Senior Buyer" and env["data"]["department"] == "Finance"


def test_reporting_cycle_is_409(state: HrState) -> None:
    user = me(state)
    env = call(state, "update_employee", email=user.email, manager_email=report_of(state, user).email)
    assert env["error"]["code"] == 409 and "cycle" in env["error"]["message"]


def test_terminate_cancels_future_leave(state: HrState) -> None:
    pending = pending_of_report(state)
    day = state.clock.date().isoformat()
    env = call(state, "terminate_employee", email=pending.employee_email, termination_date=day, reason="Resigned")
    assert env["success"] and env["data"]["status"] == "terminated"
    assert state.leave_requests[pending.id].status == "cancelled"


def test_manager_with_reports_cannot_be_terminated(state: HrState) -> None:
    before = svc.state_hash(state)
    env = call(
        state,
        "terminate_employee",
        email=me(state).email,
        termination_date=state.clock.date().isoformat(),
        reason="Restructuring",
    )
    assert env["error"]["code"] == 409 and "reassign" in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_only_hr_admins_change_entitlements(state: HrState) -> None:
    email = report_of(state, me(state)).email
    env = call(
        state, "set_leave_entitlement", employee_email=email, leave_type="vacation", days=30, changed_by=me(state).email
    )
    assert env["error"]["code"] == 403
    env = call(
        state,
        "set_leave_entitlement",
        employee_email=email,
        leave_type="vacation",
        days=30,
        changed_by=state.hr_admins[0],
    )
    assert env["success"] and env["data"]["entitled"] == 30


def test_entitlement_below_used_days_is_409(state: HrState) -> None:
    used = next(b for b in state.balances.values() if b.used > 0)
    env = call(
        state,
        "set_leave_entitlement",
        employee_email=used.employee_email,
        leave_type=used.leave_type,
        days=0,
        changed_by=state.hr_admins[0],
    )
    assert env["error"]["code"] == 409


# --- onboarding ------------------------------------------------------------------------------


def test_overdue_onboarding_items(state: HrState) -> None:
    page = call(state, "list_onboarding_tasks", overdue_only=True)["data"]
    assert page["total"] >= 1
    assert all(t["status"] == "open" and t["due_date"] < state.clock.date().isoformat() for t in page["items"])


def test_owner_completes_an_onboarding_item(state: HrState) -> None:
    task = next(t for t in state.onboarding.values() if t.status == "open")
    env = call(state, "complete_onboarding_task", task_id=task.id, completed_by=task.owner_email)
    assert env["success"] and env["data"]["status"] == "done" and env["data"]["completed_by"] == task.owner_email


def test_outsider_cannot_complete_an_item_and_done_is_409(state: HrState) -> None:
    task = next(t for t in state.onboarding.values() if t.status == "open")
    hire = employee(state, task.employee_email)
    outsider = next(
        e
        for e in state.employees.values()
        if e.email not in {task.owner_email, hire.manager_email, *state.hr_admins} and e.status == "active"
    )
    assert call(state, "complete_onboarding_task", task_id=task.id, completed_by=outsider.email)["error"]["code"] == 403
    done = next(t for t in state.onboarding.values() if t.status == "done")
    env = call(state, "complete_onboarding_task", task_id=done.id, completed_by=done.owner_email)
    assert env["error"]["code"] == 409


def test_duplicate_open_onboarding_item_is_409(state: HrState) -> None:
    task = next(t for t in state.onboarding.values() if t.status == "open")
    env = call(
        state,
        "add_onboarding_task",
        employee_email=task.employee_email,
        title=task.title.upper(),
        owner_email=task.owner_email,
        due_date=task.due_date.isoformat(),
    )
    assert env["error"]["code"] == 409 and repr(task.id) in env["error"]["message"]


# --- the shared world ------------------------------------------------------------------------


def test_employees_are_the_population_employees() -> None:
    world = Population.generate(7)
    state = svc.seed_state(7)
    assert {e.email for e in state.employees.values()} == {p.email for p in world.employees}
    people = {p.email: p for p in world.employees}
    for e in state.employees.values():
        assert e.name == people[e.email].name and e.department == people[e.email].department
        manager = people[e.email].manager_id
        assert e.manager_email == (world.person(manager).email if manager else None)
    emails = set(people)
    assert all(r.employee_email in emails for r in state.leave_requests.values())
    assert all(t.owner_email in emails for t in state.onboarding.values())


def test_workdays_skip_weekends() -> None:
    monday = dt.date(2026, 3, 2)
    assert workdays(monday, monday + dt.timedelta(days=6)) == 5
    assert workdays(monday + dt.timedelta(days=5), monday + dt.timedelta(days=6)) == 0


def test_seed_is_deterministic() -> None:
    assert svc.state_hash(svc.seed_state(3)) == svc.state_hash(svc.seed_state(3))
