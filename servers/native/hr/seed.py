"""HR seed: the population's employees and balances, leavers, new hires' checklists and leave requests."""

from __future__ import annotations

import datetime as dt
import random

from servers.population import Population

from .models import (
    Employee,
    HrState,
    LeaveRequest,
    deciders,
    find_balance,
    find_employee,
    new_request,
    new_task,
    onboarding_checklist,
    open_balances,
    overlap,
    refresh,
    workdays,
)


def _weekday(day: dt.date) -> dt.date:
    return day + dt.timedelta(days=(7 - day.weekday()) % 7) if day.weekday() >= 5 else day


def seed(rng: random.Random, world: Population) -> HrState:
    now = world.now
    today = now.date()
    state = HrState(clock=now)
    by_id = {p.id: p for p in world.employees}
    people_team = sorted(
        (p for p in world.employees if p.department == "People"), key=lambda p: p.manager_id is not None
    )
    state.hr_admins = [p.email for p in people_team]
    state.it_contact = next(p.email for p in world.employees if p.department == "Engineering" and p.manager_id)
    mine = [p.id for p in world.employees if p.manager_id == world.me.id]
    pool = [p for p in world.employees if p.manager_id and p.department not in ("People", "Engineering")]
    picked = rng.sample([p for p in pool if p.id not in mine], 9)
    hires = {p.id: offset for p, offset in zip(picked[:4], (-60, -12, -4, 7), strict=True)}
    leavers, parents = {p.id for p in picked[4:6]}, {p.id for p in picked[6:8]}

    for person in world.employees:
        head = person.manager_id is None
        base = 150_000 if head else rng.choice((72_000, 85_000, 98_000, 110_000))
        start = _weekday(today + dt.timedelta(days=hires.get(person.id, -rng.randint(200, 3000))))
        employee = Employee(
            id=state.new_id("emp"),
            email=person.email,
            name=person.name,
            title=person.title,
            department=person.department,
            manager_email=by_id[person.manager_id].email if person.manager_id else None,
            location=person.city,
            employment_type="full_time" if head or rng.random() < 0.8 else rng.choice(("part_time", "contractor")),
            start_date=start,
            salary=float(round(base * rng.uniform(0.85, 1.2) / 500) * 500),
            currency=world.org.currency if rng.random() < 0.85 else rng.choice(("EUR", "GBP")),
            status="on_leave" if person.id in parents else "active",
        )
        if person.id in leavers:
            employee.status = "terminated"
            employee.termination_date = today - dt.timedelta(days=rng.randint(10, 90))
            employee.termination_reason = rng.choice(("Resigned", "Relocation", "Contract ended"))
        state.employees[employee.id] = employee
        open_balances(state, person.email, start, rng.choice((0, 0, 2, 3.5, 5)))

    def add(email: str, kind: str, offset: int, days: int, status: str, note: str = "") -> LeaveRequest | None:
        start = end = _weekday(today + dt.timedelta(days=offset))
        while workdays(start, end) < days:
            end += dt.timedelta(days=1)
        balance = find_balance(state, email, kind) if start.year == today.year else None
        short = balance is not None and balance.available < days
        if status in ("pending", "approved") and (short or overlap(state, email, start, end)):
            return None
        planned = dt.datetime.combine(start, dt.time(9), now.tzinfo) - dt.timedelta(days=rng.randint(2, 20))
        asked = min(
            planned + dt.timedelta(minutes=rng.randint(0, 480)), now - dt.timedelta(minutes=rng.randint(180, 600))
        )
        request = new_request(state, email, kind, (start, end), status, note, asked)
        if status in ("approved", "rejected"):
            request.decided_by = (deciders(state, find_employee(state, email)) or state.hr_admins)[0]
            request.decided_at = min(asked + dt.timedelta(minutes=rng.randint(30, 2880)), now - dt.timedelta(minutes=5))
            request.decision_note = (
                rng.choice(("Team coverage too thin", "Release week")) if status == "rejected" else ""
            )
        refresh(state, email)
        return request

    notes = ("Family trip", "Long weekend", "Wedding", "Moving house", "Ski holiday", "")
    for person in [p for p in world.employees if p.id not in leavers and p.id not in hires]:
        email = person.email
        if person.id in parents:
            add(email, "parental", -rng.randint(20, 60), 60, "approved", "Parental leave")
        if rng.random() < 0.3:  # last year's leave, stale
            add(email, "vacation", -rng.randint(75, 110), rng.randint(2, 8), "approved", rng.choice(notes))
        for _ in range(rng.randint(0, 3)):
            if rng.random() < 0.25:
                add(email, "sick", -rng.randint(3, 50), rng.randint(1, 3), "approved")
                continue
            offset = rng.randint(-50, 75)
            past = rng.choice(("approved", "approved", "rejected"))
            status = past if offset < 0 else rng.choice(("pending", "pending", "approved", "cancelled"))
            request = add(email, "vacation", offset, rng.randint(1, 8), status, rng.choice(notes))
            if request and status == "pending" and rng.random() < 0.5:  # an earlier attempt, withdrawn
                add(email, "vacation", offset, int(request.days), "cancelled", request.note)
    for pid in mine:  # the user always has a queue of their reports' requests to work through
        add(by_id[pid].email, "vacation", rng.randint(14, 40), rng.randint(2, 5), "pending", "Summer break")
    add(by_id[picked[8].id].email, "vacation", -35, 18, "approved", "Sabbatical block")  # a nearly used-up balance
    add(by_id[picked[8].id].email, "parental", 60, 40, "pending", "Parental leave")

    for request in state.leave_requests.values():  # whoever is off today shows as on leave
        employee = find_employee(state, request.employee_email)
        if request.status == "approved" and request.start_date <= today <= request.end_date:
            employee.status = "on_leave" if employee.status == "active" else employee.status
    for pid, offset in hires.items():
        for task in onboarding_checklist(state, find_employee(state, by_id[pid].email)):
            if task.due_date < today and (offset < -30 or rng.random() < 0.7):
                task.status, task.completed_by = "done", task.owner_email
                task.completed_at = dt.datetime.combine(task.due_date, dt.time(15), now.tzinfo)
        if offset == -4:  # a near-duplicate item someone added by hand
            new_task(state, find_employee(state, by_id[pid].email), "Set up laptop & accounts", state.it_contact, today)
    return state
