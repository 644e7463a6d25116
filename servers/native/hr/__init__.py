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

from servers.framework import BadRequest, Conflict, Forbidden, NotFound, Page, Service, contains, paginate, require
from servers.population import DEPARTMENTS
from servers.types import (
    City,
    Currency,
    Date,
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
)

from .models import CHECKLIST as CHECKLIST
from .models import (
    PARENTAL_CAP,
    BalanceType,
    Employee,
    EmploymentStatus,
    EmploymentType,
    HrState,
    LeaveBalance,
    LeaveRequest,
    LeaveRequestId,
    LeaveStatus,
    LeaveType,
    OnboardingTask,
    OnboardingTaskId,
    TaskStatus,
    active_employee,
    check_decider,
    deciders,
    find_balance,
    find_employee,
    in_window,
    new_request,
    new_task,
    onboarding_checklist,
    open_balances,
    overlap,
    refresh,
    workdays,
)
from .models import WINDOW_DAYS as WINDOW_DAYS
from .models import EmployeeId as EmployeeId
from .models import LeaveBalanceId as LeaveBalanceId
from .models import Year as Year
from .seed import seed

service = Service(
    "hr",
    version=1,
    category="people",
    description="HR system: employees, org chart, leave requests and balances, onboarding checklists.",
    modelled_on="BambooHR API (employees, time off, onboarding) / Workday",
    state=HrState,
    seed=seed,
    system_fields=("used", "pending", "available"),  # leave balances follow the requests
)


@service.read(
    op="list",
    entity="employee",
    collection="employees",
    reads=("department", "status", "manager_email", "title", "name", "email"),
)
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


@service.read(op="get", entity="employee", collection="employees", reads=("email",))
def get_employee(state: HrState, email: EmailAddress) -> Employee:
    """Get one employee's record by work email.

    Args:
        email: Work email of the employee.
    """
    return find_employee(state, email, "email")


@service.read(op="list", entity="employee", collection="employees", reads=("manager_email", "status"))
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
    top = find_employee(state, manager_email, "manager_email")
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


@service.write(
    op="create",
    entity="employee",
    collection="employees",
    sets=(
        "email",
        "name",
        "title",
        "department",
        "manager_email",
        "location",
        "employment_type",
        "start_date",
        "salary",
        "currency",
        "status",
    ),
)
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
    manager = active_employee(find_employee(state, manager_email, "manager_email"), "manager_email")
    in_window(state, start_date, "start_date")
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
    open_balances(state, email, start_date)
    onboarding_checklist(state, employee)
    state.tick()
    return employee


@service.write(
    op="update",
    entity="employee",
    collection="employees",
    reads=("email",),
    sets=("title", "department", "manager_email"),
)
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
    employee = active_employee(find_employee(state, email, "email"), "email")
    if title is None and department is None and manager_email is None:
        raise BadRequest("argument 'title': give at least one of title, department or manager_email")
    dept = _department(department) if department is not None else employee.department
    manager = employee.manager_email
    if manager_email is not None:
        new = active_employee(find_employee(state, manager_email, "manager_email"), "manager_email")
        if new.email == employee.email:
            raise BadRequest(f"argument 'manager_email': {email!r} cannot manage themselves")
        chain, seen = new, {new.email}
        while chain.manager_email and chain.manager_email not in seen:
            if chain.manager_email == employee.email:
                raise Conflict(f"argument 'manager_email': {new.email!r} reports to {employee.email!r} (cycle)")
            seen.add(chain.manager_email)
            chain = find_employee(state, chain.manager_email)
        manager = new.email
    employee.title, employee.department, employee.manager_email = title or employee.title, dept, manager
    state.tick()
    return employee


@service.write(
    op="transition",
    entity="employee",
    collection="employees",
    reads=("email",),
    sets=("status", "termination_date", "termination_reason"),
)
def terminate_employee(state: HrState, email: EmailAddress, termination_date: Date, reason: Note) -> Employee:
    """Terminate an employee; their pending leave and approved leave after the last day is cancelled.

    Args:
        email: Work email of the employee.
        termination_date: Last working day.
        reason: Why the employment ends.
    """
    employee = active_employee(find_employee(state, email, "email"), "email")
    if not reason.strip():
        raise BadRequest("argument 'reason': a reason is required")
    in_window(state, termination_date, "termination_date")
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
    refresh(state, employee.email)
    state.tick()
    return employee


@service.read(
    op="list",
    entity="leave_request",
    collection="leave_requests",
    reads=("employee_email", "status", "leave_type", "start_date", "end_date"),
)
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
        allowed = deciders(state, by_email[request.employee_email])
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


@service.read(op="get", entity="leave_request", collection="leave_requests")
def get_leave_request(state: HrState, request_id: LeaveRequestId) -> LeaveRequest:
    """Get one leave request.

    Args:
        request_id: Id of the leave request.
    """
    return require(state.leave_requests, request_id, "leave request")


@service.write(
    op="create",
    entity="leave_request",
    collection="leave_requests",
    sets=("employee_email", "leave_type", "start_date", "end_date", "days", "status", "note", "requested_at"),
)
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
    employee = active_employee(find_employee(state, employee_email, "employee_email"), "employee_email")
    in_window(state, start_date, "start_date")
    if end_date < start_date:
        raise BadRequest("argument 'end_date': ends before start_date")
    if (end_date - start_date).days > 180:
        raise BadRequest("argument 'end_date': a single request may span at most 180 days")
    if leave_type == "vacation" and start_date < state.clock.date():
        raise BadRequest("argument 'start_date': vacation cannot start in the past")
    days = workdays(start_date, end_date)
    if days == 0:
        raise BadRequest("argument 'end_date': the period has no working days")
    other = overlap(state, employee.email, start_date, end_date)
    if other is not None:
        raise Conflict(f"overlaps {other.status} leave request {other.id!r} ({other.start_date}–{other.end_date})")
    if leave_type == "parental" and days > PARENTAL_CAP:
        raise BadRequest(f"argument 'end_date': parental leave is capped at {PARENTAL_CAP} working days per request")
    balance = find_balance(state, employee.email, leave_type) if start_date.year == state.clock.year else None
    if leave_type != "parental" and balance is not None and days > balance.available:
        raise BadRequest(
            f"argument 'end_date': {days} days exceed the available {leave_type} balance of {balance.available:g}"
        )
    span = (start_date, end_date)
    request = new_request(state, employee.email, leave_type, span, "pending", note, state.tick())
    refresh(state, employee.email)
    return request


@service.write(
    op="transition",
    entity="leave_request",
    collection="leave_requests",
    sets=("status", "decided_by", "decided_at", "decision_note"),
)
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
    approver = check_decider(state, request, approver_email)
    request.status, request.decided_by, request.decided_at = "approved", approver.email, state.tick()
    request.decision_note = note
    employee = find_employee(state, request.employee_email)
    if request.start_date <= state.clock.date() <= request.end_date and employee.status == "active":
        employee.status = "on_leave"
    refresh(state, employee.email)
    return request


@service.write(
    op="transition",
    entity="leave_request",
    collection="leave_requests",
    sets=("status", "decided_by", "decided_at", "decision_note"),
)
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
    approver = check_decider(state, request, approver_email)
    request.status, request.decided_by, request.decided_at = "rejected", approver.email, state.tick()
    request.decision_note = reason
    refresh(state, request.employee_email)
    return request


@service.write(op="transition", entity="leave_request", collection="leave_requests", sets=("status",))
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
    refresh(state, request.employee_email)
    state.tick()
    return request


@service.read(op="list", entity="leave_balance", collection="balances", reads=("employee_email", "year"))
def get_leave_balances(state: HrState, employee_email: EmailAddress) -> list[LeaveBalance]:
    """Get an employee's vacation and sick leave balances for the current year.

    Args:
        employee_email: Work email of the employee.
    """
    employee = find_employee(state, employee_email, "employee_email")
    return [b for b in state.balances.values() if b.employee_email == employee.email and b.year == state.clock.year]


@service.write(
    op="update",
    entity="leave_balance",
    collection="balances",
    reads=("employee_email", "leave_type", "year"),
    sets=("entitled",),
)
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
    employee = active_employee(find_employee(state, employee_email, "employee_email"), "employee_email")
    admin = find_employee(state, changed_by, "changed_by")
    if admin.email not in state.hr_admins or admin.status == "terminated":
        raise Forbidden(
            f"{admin.email!r} is not an HR admin; only {', '.join(state.hr_admins)} may change entitlements"
        )
    balance = find_balance(state, employee.email, leave_type)
    if balance is None:
        raise NotFound(f"{leave_type} balance of {employee.email!r} not found")
    if days < balance.used + balance.pending:
        raise Conflict(f"{days:g} days is below the {balance.used + balance.pending:g} days already used or pending")
    balance.entitled = days
    refresh(state, employee.email)
    state.tick()
    return balance


@service.read(
    op="list",
    entity="onboarding_task",
    collection="onboarding",
    reads=("employee_email", "owner_email", "status", "due_date"),
)
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


@service.write(
    op="create",
    entity="onboarding_task",
    collection="onboarding",
    sets=("employee_email", "title", "owner_email", "due_date", "status"),
)
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
    employee = active_employee(find_employee(state, employee_email, "employee_email"), "employee_email")
    owner = active_employee(find_employee(state, owner_email, "owner_email"), "owner_email")
    in_window(state, due_date, "due_date")
    for task in state.onboarding.values():
        if task.employee_email == employee.email and task.status == "open" and task.title.lower() == title.lower():
            raise Conflict(f"onboarding item {task.id!r} {task.title!r} is already open for {employee.email!r}")
    task = new_task(state, employee, title, owner.email, due_date)
    state.tick()
    return task


@service.write(
    op="transition", entity="onboarding_task", collection="onboarding", sets=("status", "completed_by", "completed_at")
)
def complete_onboarding_task(state: HrState, task_id: OnboardingTaskId, completed_by: EmailAddress) -> OnboardingTask:
    """Mark an onboarding item done (by its owner, the new hire's manager or an HR admin).

    Args:
        task_id: Id of the onboarding item.
        completed_by: Work email of the person completing it.
    """
    task = require(state.onboarding, task_id, "onboarding task")
    person = find_employee(state, completed_by, "completed_by")
    hire = find_employee(state, task.employee_email)
    allowed = {task.owner_email, hire.manager_email, *state.hr_admins}
    if person.email not in allowed or person.status == "terminated":
        raise Forbidden(f"{person.email!r} may not complete {task_id!r}; its owner is {task.owner_email!r}")
    if task.status == "done":
        raise Conflict(f"onboarding task {task_id!r} was already completed by {task.completed_by!r}")
    task.status, task.completed_by, task.completed_at = "done", person.email, state.tick()
    return task
