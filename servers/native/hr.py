"""HR: the company's people system — employees, org chart, leave requests, balances and onboarding.

Tools: list_employees, get_employee, list_direct_reports, hire_employee, update_employee,
terminate_employee, list_leave_requests, get_leave_request, request_leave, approve_leave_request,
reject_leave_request, cancel_leave_request, get_leave_balances, set_leave_entitlement,
list_onboarding_tasks, add_onboarding_task, complete_onboarding_task.
State: employees, leave requests, leave balances (vacation and sick, current year) and onboarding
checklist items by id; the HR admins (the People department) and the IT contact for new hires.
Seed: every employee of the population with start date, salary, contract type and manager
(department heads manage their departments); two terminated employees, two on parental leave and
four recent or upcoming hires with onboarding checklists (one item overdue); about 45 leave
requests — past and upcoming, pending, approved, rejected and cancelled, last year's, and
re-submitted near-duplicates of cancelled ones — and balances, some nearly used up.
Rules: leave is decided only by the employee's active manager, or by an HR admin for employees
without one, never by the requester (403); only pending requests are decided (409); leave that
overlaps a pending or approved request is refused (409); vacation and sick leave may not exceed
the available balance and parental leave is capped at 80 working days (400); leave that has
started cannot be cancelled (409); terminated employees cannot request leave, be updated, manage
or own work (409); an employee with active direct reports cannot be terminated (409); reporting
lines cannot form a cycle (409); only HR admins change entitlements (403), never below the days
used and pending (409); an onboarding item is completed by its owner, the new hire's manager or an
HR admin (403), once (409).
Version history: 1 — first version.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Annotated, Literal

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
from servers.population import DEPARTMENTS, Population
from servers.types import (
    City,
    Currency,
    Date,
    DateTime,
    Days,
    Department,
    EmailAddress,
    Flag,
    JobTitle,
    Limit,
    MoneyAmount,
    Note,
    Offset,
    PersonName,
    Query,
    Title,
    ident,
    sem,
)

EmployeeId = Annotated[str, ident("hr", "employee")]
LeaveRequestId = Annotated[str, ident("hr", "leave_request")]
LeaveBalanceId = Annotated[str, ident("hr", "leave_balance")]
OnboardingTaskId = Annotated[str, ident("hr", "onboarding_task")]
EmploymentStatus = Annotated[
    Literal["active", "on_leave", "terminated"], sem("hr.employment_status", "Employment status of an employee.")
]
EmploymentType = Annotated[
    Literal["full_time", "part_time", "contractor"], sem("hr.employment_type", "Kind of employment contract.")
]
LeaveType = Annotated[Literal["vacation", "sick", "parental"], sem("hr.leave_type", "Kind of leave.")]
BalanceType = Annotated[Literal["vacation", "sick"], sem("hr.balance_type", "Leave that draws on a yearly balance.")]
LeaveStatus = Annotated[
    Literal["pending", "approved", "rejected", "cancelled"], sem("hr.leave_status", "Status of a leave request.")
]
TaskStatus = Annotated[Literal["open", "done"], sem("hr.onboarding_status", "Status of an onboarding checklist item.")]
Year = Annotated[int, sem("hr.year", "Calendar year.", ge=2000, le=2100)]

PARENTAL_CAP = 80
WINDOW_DAYS = 400  # dates further than this from today are typos, not plans
CHECKLIST = (  # (title, owner role, days from the start date)
    ("Sign employment contract", "hr", -7),
    ("Set up laptop and accounts", "it", -2),
    ("Welcome meeting with manager", "manager", 0),
    ("Complete security training", "self", 7),
    ("30-day check-in", "manager", 30),
)


class Employee(Record):
    id: EmployeeId
    email: EmailAddress = Field(description="Work email; identifies the employee in every service.")
    name: PersonName
    title: JobTitle
    department: Department
    manager_email: EmailAddress | None = Field(description="Work email of the manager; null for department heads.")
    location: City = Field(description="City the employee works from.")
    employment_type: EmploymentType
    start_date: Date = Field(description="First working day.")
    salary: MoneyAmount = Field(description="Annual base salary.")
    currency: Currency = Field(description="Currency of the salary.")
    status: EmploymentStatus
    termination_date: Date | None = Field(default=None, description="Last working day, once terminated.")
    termination_reason: Note = Field(default="", description="Why the employment ended.")


class LeaveRequest(Record):
    id: LeaveRequestId
    employee_email: EmailAddress = Field(description="Employee taking the leave.")
    leave_type: LeaveType
    start_date: Date = Field(description="First day of leave.")
    end_date: Date = Field(description="Last day of leave (inclusive).")
    days: Days = Field(description="Working days (Monday to Friday) the leave takes.")
    status: LeaveStatus
    note: Note = Field(default="", description="Reason given by the employee.")
    requested_at: DateTime
    decided_by: EmailAddress | None = Field(default=None, description="Who approved or rejected the request.")
    decided_at: DateTime | None = Field(default=None, description="When the request was decided.")
    decision_note: Note = Field(default="", description="Comment of the approver.")


class LeaveBalance(Record):
    id: LeaveBalanceId
    employee_email: EmailAddress = Field(description="Employee the balance belongs to.")
    leave_type: BalanceType
    year: Year
    entitled: Days = Field(description="Days granted this year, carry-over included.")
    used: Days = Field(description="Days of approved leave this year.")
    pending: Days = Field(description="Days requested and awaiting a decision.")
    available: Days = Field(description="Days that can still be requested.")


class OnboardingTask(Record):
    id: OnboardingTaskId
    employee_email: EmailAddress = Field(description="New hire the item is for.")
    title: Title
    owner_email: EmailAddress = Field(description="Person responsible for the item.")
    due_date: Date = Field(description="Day the item should be done by.")
    status: TaskStatus
    completed_by: EmailAddress | None = Field(default=None, description="Who completed the item.")
    completed_at: DateTime | None = Field(default=None, description="When the item was completed.")


class HrState(ServiceState):
    hr_admins: list[str] = []
    it_contact: str = ""
    employees: dict[str, Employee] = {}
    leave_requests: dict[str, LeaveRequest] = {}
    balances: dict[str, LeaveBalance] = {}
    onboarding: dict[str, OnboardingTask] = {}


def workdays(start: dt.date, end: dt.date) -> int:
    """Working days (Monday to Friday) from ``start`` to ``end`` inclusive."""
    return sum(1 for i in range((end - start).days + 1) if (start + dt.timedelta(days=i)).weekday() < 5)


def _find(state: HrState, email: str, argument: str = "employee") -> Employee:
    for employee in state.employees.values():
        if employee.email.lower() == email.lower():
            return employee
    raise NotFound(f"employee {email!r} not found (argument {argument!r})")


def _active(employee: Employee, argument: str) -> Employee:
    if employee.status == "terminated":
        raise Conflict(f"argument {argument!r}: employee {employee.email!r} is terminated")
    return employee


def _in_window(state: HrState, day: dt.date, argument: str) -> None:
    if abs((day - state.clock.date()).days) > WINDOW_DAYS:
        raise BadRequest(f"argument {argument!r}: {day.isoformat()} is more than {WINDOW_DAYS} days from today")


def _balance(state: HrState, email: str, leave_type: str) -> LeaveBalance | None:
    year = state.clock.year
    return next(
        (
            b
            for b in state.balances.values()
            if b.employee_email == email and b.leave_type == leave_type and b.year == year
        ),
        None,
    )


def _refresh(state: HrState, email: str) -> None:
    """Recompute the used, pending and available days of an employee's balances."""
    for balance in state.balances.values():
        if balance.employee_email != email:
            continue
        rows = [
            r
            for r in state.leave_requests.values()
            if r.employee_email == email and r.leave_type == balance.leave_type and r.start_date.year == balance.year
        ]
        balance.used = float(sum(r.days for r in rows if r.status == "approved"))
        balance.pending = float(sum(r.days for r in rows if r.status == "pending"))
        balance.available = max(0.0, balance.entitled - balance.used - balance.pending)


def _deciders(state: HrState, employee: Employee) -> list[str]:
    """Who may decide the employee's leave: the active manager, else the HR admins."""
    if employee.manager_email:
        manager = _find(state, employee.manager_email)
        if manager.status != "terminated":
            return [manager.email]
    return list(state.hr_admins)


def _check_decider(state: HrState, request: LeaveRequest, approver_email: str) -> Employee:
    approver = _find(state, approver_email, "approver")
    employee = _find(state, request.employee_email)
    if approver.email == employee.email:
        raise Forbidden(f"{approver.email!r} cannot decide on their own leave request {request.id!r}")
    allowed = _deciders(state, employee)
    if approver.status == "terminated" or approver.email not in allowed:
        raise Forbidden(f"{approver.email!r} may not decide leave of {employee.email!r}; ask {', '.join(allowed)}")
    if request.status != "pending":
        raise Conflict(f"leave request {request.id!r} is already {request.status!r}")
    return approver


def _task(state: HrState, employee: Employee, title: str, owner: str, due: dt.date) -> OnboardingTask:
    task = OnboardingTask(
        id=state.new_id("onb"),
        employee_email=employee.email,
        title=title,
        owner_email=owner,
        due_date=due,
        status="open",
    )
    state.onboarding[task.id] = task
    return task


def _checklist(state: HrState, employee: Employee) -> list[OnboardingTask]:
    """The standard onboarding checklist of a new hire, owned by HR, IT, the manager and the hire."""
    owners = {
        "hr": state.hr_admins[-1],
        "it": state.it_contact,
        "manager": employee.manager_email or state.hr_admins[0],
    }
    return [
        _task(state, employee, title, owners.get(role, employee.email), employee.start_date + dt.timedelta(days))
        for title, role, days in CHECKLIST
    ]


def _open_balances(state: HrState, email: str, start: dt.date, extra: float = 0.0) -> None:
    """This year's vacation (prorated to half days for this year's hires) and sick balances."""
    year = state.clock.year
    vacation = 25.0 if start.year < year else 25.0 * (13 - start.month) // 6 / 2
    for leave_type, days in (("vacation", vacation + extra), ("sick", 10.0)):
        bid = state.new_id("bal")
        state.balances[bid] = LeaveBalance(
            id=bid,
            employee_email=email,
            leave_type=leave_type,
            year=year,
            entitled=days,
            used=0,
            pending=0,
            available=days,
        )


def _new_request(
    state: HrState, email: str, kind: str, span: tuple[dt.date, dt.date], status: str, note: str, at: dt.datetime
) -> LeaveRequest:
    start, end = span
    rid = state.new_id("lv")
    request = LeaveRequest(
        id=rid,
        employee_email=email,
        leave_type=kind,
        start_date=start,
        end_date=end,
        days=float(workdays(start, end)),
        status=status,
        note=note,
        requested_at=at,
    )
    state.leave_requests[rid] = request
    return request


def _overlap(state: HrState, email: str, start: dt.date, end: dt.date) -> LeaveRequest | None:
    """The employee's pending or approved request that overlaps the period, if any."""
    for other in state.leave_requests.values():
        mine = other.employee_email == email and other.status in ("pending", "approved")
        if mine and other.start_date <= end and start <= other.end_date:
            return other
    return None


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
        _open_balances(state, person.email, start, rng.choice((0, 0, 2, 3.5, 5)))

    def add(email: str, kind: str, offset: int, days: int, status: str, note: str = "") -> LeaveRequest | None:
        start = end = _weekday(today + dt.timedelta(days=offset))
        while workdays(start, end) < days:
            end += dt.timedelta(days=1)
        balance = _balance(state, email, kind) if start.year == today.year else None
        short = balance is not None and balance.available < days
        if status in ("pending", "approved") and (short or _overlap(state, email, start, end)):
            return None
        planned = dt.datetime.combine(start, dt.time(9), now.tzinfo) - dt.timedelta(days=rng.randint(2, 20))
        asked = min(
            planned + dt.timedelta(minutes=rng.randint(0, 480)), now - dt.timedelta(minutes=rng.randint(180, 600))
        )
        request = _new_request(state, email, kind, (start, end), status, note, asked)
        if status in ("approved", "rejected"):
            request.decided_by = (_deciders(state, _find(state, email)) or state.hr_admins)[0]
            request.decided_at = min(asked + dt.timedelta(minutes=rng.randint(30, 2880)), now - dt.timedelta(minutes=5))
            request.decision_note = (
                rng.choice(("Team coverage too thin", "Release week")) if status == "rejected" else ""
            )
        _refresh(state, email)
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
        employee = _find(state, request.employee_email)
        if request.status == "approved" and request.start_date <= today <= request.end_date:
            employee.status = "on_leave" if employee.status == "active" else employee.status
    for pid, offset in hires.items():
        for task in _checklist(state, _find(state, by_id[pid].email)):
            if task.due_date < today and (offset < -30 or rng.random() < 0.7):
                task.status, task.completed_by = "done", task.owner_email
                task.completed_at = dt.datetime.combine(task.due_date, dt.time(15), now.tzinfo)
        if offset == -4:  # a near-duplicate item someone added by hand
            _task(state, _find(state, by_id[pid].email), "Set up laptop & accounts", state.it_contact, today)
    return state


service = Service(
    "hr",
    version=1,
    category="people",
    description="HR system: employees, org chart, leave requests and balances, onboarding checklists.",
    state=HrState,
    seed=seed,
)


@service.read
def list_employees(
    state: HrState,
    department: Department | None = None,
    status: EmploymentStatus | None = None,
    manager_email: EmailAddress | None = None,
    title: JobTitle | None = None,
    query: Query | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Employee]:
    """List employees sorted by name, with optional filters.

    Args:
        department: Only employees of this department (exact name, e.g. Sales).
        status: Only employees with this status.
        manager_email: Only direct reports of the manager with this email.
        title: Case-insensitive text to find in the job title.
        query: Case-insensitive text to find in the name or email.
        offset: Number of employees to skip.
        limit: Maximum number of employees to return.
    """
    rows = [
        e
        for e in state.employees.values()
        if (department is None or e.department.lower() == department.lower())
        and (status is None or e.status == status)
        and (manager_email is None or (e.manager_email or "").lower() == manager_email.lower())
        and contains(e.title, title)
        and (query is None or contains(e.name, query) or contains(e.email, query))
    ]
    return paginate(sorted(rows, key=lambda e: (e.name, e.id)), offset, limit)


@service.read
def get_employee(state: HrState, email: EmailAddress) -> Employee:
    """Get one employee's record by work email.

    Args:
        email: Work email of the employee.
    """
    return _find(state, email, "email")


@service.read
def list_direct_reports(
    state: HrState,
    manager_email: EmailAddress,
    include_indirect: Flag = False,
    include_terminated: Flag = False,
) -> list[Employee]:
    """List the people reporting to a manager (the org chart below them), sorted by name.

    Args:
        manager_email: Work email of the manager.
        include_indirect: Also list the reports of reports, all the way down.
        include_terminated: Also list terminated employees.
    """
    top = _find(state, manager_email, "manager_email")
    found: list[Employee] = []
    frontier = [top.email]
    while frontier:
        below = [e for e in state.employees.values() if e.manager_email in frontier and e not in found]
        found.extend(below)
        frontier = [e.email for e in below] if include_indirect else []
    rows = [e for e in found if include_terminated or e.status != "terminated"]
    return sorted(rows, key=lambda e: (e.name, e.id))


def _department(department: str) -> str:
    match = next((d for d in DEPARTMENTS if d.lower() == department.lower()), None)
    if match is None:
        raise BadRequest(f"argument 'department': unknown department {department!r}; one of {', '.join(DEPARTMENTS)}")
    return match


@service.write
def hire_employee(
    state: HrState,
    email: EmailAddress,
    name: PersonName,
    title: JobTitle,
    department: Department,
    manager_email: EmailAddress,
    start_date: Date,
    salary: MoneyAmount,
    currency: Currency,
    location: City,
    employment_type: EmploymentType = "full_time",
) -> Employee:
    """Add a new hire; creates their leave balances and the standard onboarding checklist.

    Args:
        email: Work email of the new hire (must not belong to any employee, past or present).
        name: Full name.
        title: Job title.
        department: Department (e.g. Sales, Engineering).
        manager_email: Work email of the manager, an active employee.
        start_date: First working day (within about a year of today).
        salary: Annual base salary.
        currency: Currency of the salary.
        location: City the new hire works from.
        employment_type: Kind of contract.
    """
    if any(e.email.lower() == email.lower() for e in state.employees.values()):
        raise Conflict(f"argument 'email': {email!r} already belongs to an employee")
    dept = _department(department)
    manager = _active(_find(state, manager_email, "manager_email"), "manager_email")
    _in_window(state, start_date, "start_date")
    if salary <= 0:
        raise BadRequest("argument 'salary': must be positive")
    employee = Employee(
        id=state.new_id("emp"),
        email=email,
        name=name,
        title=title,
        department=dept,
        manager_email=manager.email,
        location=location,
        employment_type=employment_type,
        start_date=start_date,
        salary=salary,
        currency=currency,
        status="active",
    )
    state.employees[employee.id] = employee
    _open_balances(state, email, start_date)
    _checklist(state, employee)
    state.tick()
    return employee


@service.write
def update_employee(
    state: HrState,
    email: EmailAddress,
    title: JobTitle | None = None,
    department: Department | None = None,
    manager_email: EmailAddress | None = None,
) -> Employee:
    """Change an employee's job title, department or manager; omitted fields stay as they are.

    Args:
        email: Work email of the employee.
        title: New job title.
        department: New department.
        manager_email: Work email of the new manager (an active employee; no reporting cycles).
    """
    employee = _active(_find(state, email, "email"), "email")
    if title is None and department is None and manager_email is None:
        raise BadRequest("argument 'title': give at least one of title, department or manager_email")
    dept = _department(department) if department is not None else employee.department
    manager = employee.manager_email
    if manager_email is not None:
        new = _active(_find(state, manager_email, "manager_email"), "manager_email")
        if new.email == employee.email:
            raise BadRequest(f"argument 'manager_email': {email!r} cannot manage themselves")
        chain, seen = new, {new.email}
        while chain.manager_email and chain.manager_email not in seen:
            if chain.manager_email == employee.email:
                raise Conflict(f"argument 'manager_email': {new.email!r} reports to {employee.email!r} (cycle)")
            seen.add(chain.manager_email)
            chain = _find(state, chain.manager_email)
        manager = new.email
    employee.title, employee.department, employee.manager_email = title or employee.title, dept, manager
    state.tick()
    return employee


@service.write
def terminate_employee(state: HrState, email: EmailAddress, termination_date: Date, reason: Note) -> Employee:
    """Terminate an employee; their pending leave and approved leave after the last day is cancelled.

    Args:
        email: Work email of the employee.
        termination_date: Last working day.
        reason: Why the employment ends.
    """
    employee = _active(_find(state, email, "email"), "email")
    if not reason.strip():
        raise BadRequest("argument 'reason': a reason is required")
    _in_window(state, termination_date, "termination_date")
    if termination_date < employee.start_date:
        raise BadRequest(f"argument 'termination_date': before the start date {employee.start_date.isoformat()}")
    reports = [
        e.email for e in state.employees.values() if e.manager_email == employee.email and e.status != "terminated"
    ]
    if reports:
        raise Conflict(f"employee {email!r} still manages {', '.join(reports)}; reassign them first")
    employee.status = "terminated"
    employee.termination_date, employee.termination_reason = termination_date, reason
    for request in state.leave_requests.values():
        ends_later = request.status == "approved" and request.start_date > termination_date
        if request.employee_email == employee.email and (request.status == "pending" or ends_later):
            request.status = "cancelled"
    _refresh(state, employee.email)
    state.tick()
    return employee


@service.read
def list_leave_requests(
    state: HrState,
    employee_email: EmailAddress | None = None,
    approver_email: EmailAddress | None = None,
    status: LeaveStatus | None = None,
    leave_type: LeaveType | None = None,
    from_date: Date | None = None,
    to_date: Date | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[LeaveRequest]:
    """List leave requests, latest start first, with optional filters.

    Args:
        employee_email: Only requests of this employee.
        approver_email: Only requests this person may decide (their reports', or all managerless ones for HR).
        status: Only requests with this status.
        leave_type: Only this kind of leave.
        from_date: Only leave that ends on or after this day.
        to_date: Only leave that starts on or before this day.
        offset: Number of requests to skip.
        limit: Maximum number of requests to return.
    """
    by_email = {e.email: e for e in state.employees.values()}

    def decides(request: LeaveRequest) -> bool:
        allowed = _deciders(state, by_email[request.employee_email])
        mine = approver_email is not None and request.employee_email.lower() == approver_email.lower()
        return approver_email is not None and not mine and approver_email.lower() in [a.lower() for a in allowed]

    rows = [
        r
        for r in state.leave_requests.values()
        if (employee_email is None or r.employee_email.lower() == employee_email.lower())
        and (approver_email is None or decides(r))
        and (status is None or r.status == status)
        and (leave_type is None or r.leave_type == leave_type)
        and (from_date is None or r.end_date >= from_date)
        and (to_date is None or r.start_date <= to_date)
    ]
    return paginate(sorted(rows, key=lambda r: (r.start_date, r.id), reverse=True), offset, limit)


@service.read
def get_leave_request(state: HrState, request_id: LeaveRequestId) -> LeaveRequest:
    """Get one leave request.

    Args:
        request_id: Id of the leave request.
    """
    return require(state.leave_requests, request_id, "leave request")


@service.write
def request_leave(
    state: HrState,
    employee_email: EmailAddress,
    leave_type: LeaveType,
    start_date: Date,
    end_date: Date,
    note: Note = "",
) -> LeaveRequest:
    """File a leave request for an employee; it waits for their manager's decision.

    Args:
        employee_email: Work email of the employee taking leave.
        leave_type: Kind of leave; vacation and sick leave draw on the yearly balance.
        start_date: First day of leave (vacation cannot start in the past).
        end_date: Last day of leave (inclusive).
        note: Reason or comment for the approver.
    """
    employee = _active(_find(state, employee_email, "employee_email"), "employee_email")
    _in_window(state, start_date, "start_date")
    if end_date < start_date:
        raise BadRequest("argument 'end_date': ends before start_date")
    if (end_date - start_date).days > 180:
        raise BadRequest("argument 'end_date': a single request may span at most 180 days")
    if leave_type == "vacation" and start_date < state.clock.date():
        raise BadRequest("argument 'start_date': vacation cannot start in the past")
    days = workdays(start_date, end_date)
    if days == 0:
        raise BadRequest("argument 'end_date': the period has no working days")
    other = _overlap(state, employee.email, start_date, end_date)
    if other is not None:
        raise Conflict(f"overlaps {other.status} leave request {other.id!r} ({other.start_date}–{other.end_date})")
    if leave_type == "parental" and days > PARENTAL_CAP:
        raise BadRequest(f"argument 'end_date': parental leave is capped at {PARENTAL_CAP} working days per request")
    balance = _balance(state, employee.email, leave_type) if start_date.year == state.clock.year else None
    if leave_type != "parental" and balance is not None and days > balance.available:
        raise BadRequest(
            f"argument 'end_date': {days} days exceed the available {leave_type} balance of {balance.available:g}"
        )
    span = (start_date, end_date)
    request = _new_request(state, employee.email, leave_type, span, "pending", note, state.tick())
    _refresh(state, employee.email)
    return request


@service.write
def approve_leave_request(
    state: HrState, request_id: LeaveRequestId, approver_email: EmailAddress, note: Note = ""
) -> LeaveRequest:
    """Approve a pending leave request (only the employee's manager may, or HR for managerless staff).

    Args:
        request_id: Id of the leave request.
        approver_email: Work email of the person approving.
        note: Comment for the employee.
    """
    request = require(state.leave_requests, request_id, "leave request")
    approver = _check_decider(state, request, approver_email)
    request.status, request.decided_by, request.decided_at = "approved", approver.email, state.tick()
    request.decision_note = note
    employee = _find(state, request.employee_email)
    if request.start_date <= state.clock.date() <= request.end_date and employee.status == "active":
        employee.status = "on_leave"
    _refresh(state, employee.email)
    return request


@service.write
def reject_leave_request(
    state: HrState, request_id: LeaveRequestId, approver_email: EmailAddress, reason: Note
) -> LeaveRequest:
    """Reject a pending leave request with a reason (same permission as approving).

    Args:
        request_id: Id of the leave request.
        approver_email: Work email of the person rejecting.
        reason: Why the leave is refused (required).
    """
    request = require(state.leave_requests, request_id, "leave request")
    if not reason.strip():
        raise BadRequest("argument 'reason': a reason is required")
    approver = _check_decider(state, request, approver_email)
    request.status, request.decided_by, request.decided_at = "rejected", approver.email, state.tick()
    request.decision_note = reason
    _refresh(state, request.employee_email)
    return request


@service.write
def cancel_leave_request(state: HrState, request_id: LeaveRequestId) -> LeaveRequest:
    """Withdraw a pending request, or an approved one that has not started; its days return to the balance.

    Args:
        request_id: Id of the leave request.
    """
    request = require(state.leave_requests, request_id, "leave request")
    if request.status not in ("pending", "approved"):
        raise Conflict(f"leave request {request_id!r} is already {request.status!r}")
    if request.status == "approved" and request.start_date <= state.clock.date():
        raise Conflict(
            f"leave request {request_id!r} started on {request.start_date.isoformat()}; it cannot be cancelled"
        )
    request.status = "cancelled"
    _refresh(state, request.employee_email)
    state.tick()
    return request


@service.read
def get_leave_balances(state: HrState, employee_email: EmailAddress) -> list[LeaveBalance]:
    """Get an employee's vacation and sick leave balances for the current year.

    Args:
        employee_email: Work email of the employee.
    """
    employee = _find(state, employee_email, "employee_email")
    return [b for b in state.balances.values() if b.employee_email == employee.email and b.year == state.clock.year]


@service.write
def set_leave_entitlement(
    state: HrState,
    employee_email: EmailAddress,
    leave_type: BalanceType,
    days: Days,
    changed_by: EmailAddress,
) -> LeaveBalance:
    """Set how many days of vacation or sick leave an employee is entitled to this year (HR admins only).

    Args:
        employee_email: Work email of the employee.
        leave_type: Balance to change.
        days: New yearly entitlement, carry-over included.
        changed_by: Work email of the HR admin making the change.
    """
    employee = _active(_find(state, employee_email, "employee_email"), "employee_email")
    admin = _find(state, changed_by, "changed_by")
    if admin.email not in state.hr_admins or admin.status == "terminated":
        raise Forbidden(
            f"{admin.email!r} is not an HR admin; only {', '.join(state.hr_admins)} may change entitlements"
        )
    balance = _balance(state, employee.email, leave_type)
    if balance is None:
        raise NotFound(f"{leave_type} balance of {employee.email!r} not found")
    if days < balance.used + balance.pending:
        raise Conflict(f"{days:g} days is below the {balance.used + balance.pending:g} days already used or pending")
    balance.entitled = days
    _refresh(state, employee.email)
    state.tick()
    return balance


@service.read
def list_onboarding_tasks(
    state: HrState,
    employee_email: EmailAddress | None = None,
    owner_email: EmailAddress | None = None,
    status: TaskStatus | None = None,
    overdue_only: Flag = False,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[OnboardingTask]:
    """List onboarding checklist items by due date, with optional filters.

    Args:
        employee_email: Only items of this new hire.
        owner_email: Only items this person is responsible for.
        status: Only items with this status.
        overdue_only: Only open items past their due date.
        offset: Number of items to skip.
        limit: Maximum number of items to return.
    """
    today = state.clock.date()
    rows = [
        t
        for t in state.onboarding.values()
        if (employee_email is None or t.employee_email.lower() == employee_email.lower())
        and (owner_email is None or t.owner_email.lower() == owner_email.lower())
        and (status is None or t.status == status)
        and (not overdue_only or (t.status == "open" and t.due_date < today))
    ]
    return paginate(sorted(rows, key=lambda t: (t.due_date, t.id)), offset, limit)


@service.write
def add_onboarding_task(
    state: HrState, employee_email: EmailAddress, title: Title, owner_email: EmailAddress, due_date: Date
) -> OnboardingTask:
    """Add an item to a new hire's onboarding checklist.

    Args:
        employee_email: Work email of the new hire.
        title: What has to be done.
        owner_email: Work email of the person responsible (an active employee).
        due_date: Day it should be done by.
    """
    employee = _active(_find(state, employee_email, "employee_email"), "employee_email")
    owner = _active(_find(state, owner_email, "owner_email"), "owner_email")
    _in_window(state, due_date, "due_date")
    for task in state.onboarding.values():
        if task.employee_email == employee.email and task.status == "open" and task.title.lower() == title.lower():
            raise Conflict(f"onboarding item {task.id!r} {task.title!r} is already open for {employee.email!r}")
    task = _task(state, employee, title, owner.email, due_date)
    state.tick()
    return task


@service.write
def complete_onboarding_task(state: HrState, task_id: OnboardingTaskId, completed_by: EmailAddress) -> OnboardingTask:
    """Mark an onboarding item done (by its owner, the new hire's manager or an HR admin).

    Args:
        task_id: Id of the onboarding item.
        completed_by: Work email of the person completing it.
    """
    task = require(state.onboarding, task_id, "onboarding task")
    person = _find(state, completed_by, "completed_by")
    hire = _find(state, task.employee_email)
    allowed = {task.owner_email, hire.manager_email, *state.hr_admins}
    if person.email not in allowed or person.status == "terminated":
        raise Forbidden(f"{person.email!r} may not complete {task_id!r}; its owner is {task.owner_email!r}")
    if task.status == "done":
        raise Conflict(f"onboarding task {task_id!r} was already completed by {task.completed_by!r}")
    task.status, task.completed_by, task.completed_at = "done", person.email, state.tick()
    return task
