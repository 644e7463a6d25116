"""HR service: id and semantic types, limits, records, state and the leave and onboarding helpers."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import Field

from servers.framework import BadRequest, Conflict, Forbidden, NotFound, Record, ServiceState
from servers.roles import ROLE_KEY, role
from servers.types import (
    City,
    Currency,
    Date,
    DateTime,
    Days,
    Department,
    EmailAddress,
    JobTitle,
    MoneyAmount,
    Note,
    PersonName,
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
    email: EmailAddress = Field(
        description="Work email; identifies the employee in every service.", json_schema_extra={ROLE_KEY: "employee"}
    )
    name: Annotated[PersonName, role("employee")]
    title: JobTitle
    department: Department
    manager_email: EmailAddress | None = Field(
        description="Work email of the manager; null for department heads.", json_schema_extra={ROLE_KEY: "manager"}
    )
    location: City = Field(description="City the employee works from.")
    employment_type: EmploymentType
    start_date: Date = Field(description="First working day.", json_schema_extra={ROLE_KEY: "start"})
    salary: MoneyAmount = Field(description="Annual base salary.", json_schema_extra={ROLE_KEY: "salary"})
    currency: Currency = Field(description="Currency of the salary.")
    status: EmploymentStatus
    termination_date: Date | None = Field(
        default=None, description="Last working day, once terminated.", json_schema_extra={ROLE_KEY: "end"}
    )
    termination_reason: Note = Field(default="", description="Why the employment ended.")


class LeaveRequest(Record):
    id: LeaveRequestId
    employee_email: EmailAddress = Field(
        description="Employee taking the leave.", json_schema_extra={ROLE_KEY: "employee"}
    )
    leave_type: LeaveType
    start_date: Date = Field(description="First day of leave.", json_schema_extra={ROLE_KEY: "start"})
    end_date: Date = Field(description="Last day of leave (inclusive).", json_schema_extra={ROLE_KEY: "end"})
    days: Days = Field(description="Working days (Monday to Friday) the leave takes.")
    status: LeaveStatus
    note: Note = Field(default="", description="Reason given by the employee.")
    requested_at: Annotated[DateTime, role("event")]
    decided_by: EmailAddress | None = Field(
        default=None, description="Who approved or rejected the request.", json_schema_extra={ROLE_KEY: "approver"}
    )
    decided_at: DateTime | None = Field(
        default=None, description="When the request was decided.", json_schema_extra={ROLE_KEY: "event"}
    )
    decision_note: Note = Field(default="", description="Comment of the approver.")


class LeaveBalance(Record):
    id: LeaveBalanceId
    employee_email: EmailAddress = Field(
        description="Employee the balance belongs to.", json_schema_extra={ROLE_KEY: "employee"}
    )
    leave_type: BalanceType
    year: Year
    entitled: Days = Field(description="Days granted this year, carry-over included.")
    used: Days = Field(description="Days of approved leave this year.")
    pending: Days = Field(description="Days requested and awaiting a decision.")
    available: Days = Field(description="Days that can still be requested.")


class OnboardingTask(Record):
    id: OnboardingTaskId
    employee_email: EmailAddress = Field(
        description="New hire the item is for.", json_schema_extra={ROLE_KEY: "employee"}
    )
    title: Title
    owner_email: EmailAddress = Field(
        description="Person responsible for the item.", json_schema_extra={ROLE_KEY: "assignee"}
    )
    due_date: Date = Field(description="Day the item should be done by.", json_schema_extra={ROLE_KEY: "due"})
    status: TaskStatus
    completed_by: EmailAddress | None = Field(
        default=None, description="Who completed the item.", json_schema_extra={ROLE_KEY: "assignee"}
    )
    completed_at: DateTime | None = Field(
        default=None, description="When the item was completed.", json_schema_extra={ROLE_KEY: "event"}
    )


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


def find_employee(state: HrState, email: str, argument: str = "employee") -> Employee:
    for employee in state.employees.values():
        if employee.email.lower() == email.lower():
            return employee
    raise NotFound(f"employee {email!r} not found (argument {argument!r})")


def active_employee(employee: Employee, argument: str) -> Employee:
    if employee.status == "terminated":
        raise Conflict(f"argument {argument!r}: employee {employee.email!r} is terminated")
    return employee


def in_window(state: HrState, day: dt.date, argument: str) -> None:
    if abs((day - state.clock.date()).days) > WINDOW_DAYS:
        raise BadRequest(f"argument {argument!r}: {day.isoformat()} is more than {WINDOW_DAYS} days from today")


def find_balance(state: HrState, email: str, leave_type: str) -> LeaveBalance | None:
    year = state.clock.year
    return next(
        (
            b
            for b in state.balances.values()
            if b.employee_email == email and b.leave_type == leave_type and b.year == year
        ),
        None,
    )


def refresh(state: HrState, email: str) -> None:
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


def deciders(state: HrState, employee: Employee) -> list[str]:
    """Who may decide the employee's leave: the active manager, else the HR admins."""
    if employee.manager_email:
        manager = find_employee(state, employee.manager_email)
        if manager.status != "terminated":
            return [manager.email]
    return list(state.hr_admins)


def check_decider(state: HrState, request: LeaveRequest, approver_email: str) -> Employee:
    approver = find_employee(state, approver_email, "approver")
    employee = find_employee(state, request.employee_email)
    if approver.email == employee.email:
        raise Forbidden(f"{approver.email!r} cannot decide on their own leave request {request.id!r}")
    allowed = deciders(state, employee)
    if approver.status == "terminated" or approver.email not in allowed:
        raise Forbidden(f"{approver.email!r} may not decide leave of {employee.email!r}; ask {', '.join(allowed)}")
    if request.status != "pending":
        raise Conflict(f"leave request {request.id!r} is already {request.status!r}")
    return approver


def new_task(state: HrState, employee: Employee, title: str, owner: str, due: dt.date) -> OnboardingTask:
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


def onboarding_checklist(state: HrState, employee: Employee) -> list[OnboardingTask]:
    """The standard onboarding checklist of a new hire, owned by HR, IT, the manager and the hire."""
    owners = {
        "hr": state.hr_admins[-1],
        "it": state.it_contact,
        "manager": employee.manager_email or state.hr_admins[0],
    }
    return [
        new_task(state, employee, title, owners.get(role, employee.email), employee.start_date + dt.timedelta(days))
        for title, role, days in CHECKLIST
    ]


def open_balances(state: HrState, email: str, start: dt.date, extra: float = 0.0) -> None:
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


def new_request(
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


def overlap(state: HrState, email: str, start: dt.date, end: dt.date) -> LeaveRequest | None:
    """The employee's pending or approved request that overlaps the period, if any."""
    for other in state.leave_requests.values():
        mine = other.employee_email == email and other.status in ("pending", "approved")
        if mine and other.start_date <= end and start <= other.end_date:
            return other
    return None
