"""Tracker: projects and tasks with assignees, due dates, subtasks, dependencies and comments.

Tools: list_projects, get_project, create_project, archive_project, list_tasks, get_task,
create_task, update_task, set_task_status, move_task, delete_task, add_dependency,
remove_dependency, add_comment, list_comments, list_members.
State: projects, tasks and comments by id; the next task number of each project; the workspace
members (the employees) by email; the signed-in user's email.
Seed: a dozen projects of the company's departments (the user's own operations projects among
them), customer rollouts named after the population's customers, archived projects whose names
differ from active ones only by year; about 70 tasks assigned to employees in every status, some
overdue, with subtasks, blocking dependencies and near-duplicate titles; about 30 comments.
Rules: a task blocked by an unfinished task, or with unfinished subtasks, cannot be completed
(409); dependencies never form a cycle (409); archived projects are read-only (409) and only
their owner may archive a project (403); only the reporter or the project owner may delete a
task, and not while it has subtasks; assignees are workspace members (400); subtasks live in
their parent's project and cannot have subtasks themselves; moving a task renumbers it.
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
    Page,
    Record,
    Service,
    ServiceState,
    contains,
    paginate,
    require,
)
from servers.population import Population
from servers.roles import ROLE_KEY, role
from servers.types import (
    Count,
    Date,
    DateTime,
    Department,
    DocumentText,
    EmailAddress,
    Flag,
    JobTitle,
    Limit,
    Note,
    Offset,
    PersonName,
    Priority,
    Query,
    Tag,
    Title,
    ident,
    sem,
)

ProjectId = Annotated[str, ident("tracker", "project")]
TaskId = Annotated[str, ident("tracker", "task")]
CommentId = Annotated[str, ident("tracker", "comment")]
ProjectKey = Annotated[
    str, sem("tracker.project_key", "Short uppercase key of a project, e.g. OPS.", pattern=r"^[A-Z]{2,6}$")
]
TaskKey = Annotated[str, sem("tracker.task_key", "Key of a task: project key and number, e.g. OPS-12.")]
ProjectStatus = Annotated[Literal["active", "archived"], sem("tracker.project_status", "Active or archived project.")]
TaskStatus = Annotated[
    Literal["todo", "in_progress", "in_review", "done", "cancelled"],
    sem("tracker.task_status", "Task status: todo, in_progress, in_review, done or cancelled."),
]

FINISHED = ("done", "cancelled")


class Project(Record):
    id: ProjectId
    key: ProjectKey
    name: Title
    description: DocumentText
    owner: EmailAddress = Field(
        description="Email of the employee who owns the project.", json_schema_extra={ROLE_KEY: "owner"}
    )
    status: ProjectStatus
    due_date: Date | None = Field(
        default=None, description="Target date of the project.", json_schema_extra={ROLE_KEY: "due"}
    )
    created_at: DateTime


class Task(Record):
    id: TaskId
    key: TaskKey
    project_id: ProjectId
    title: Title
    description: DocumentText
    assignee: EmailAddress | None = Field(
        default=None, description="Email of the employee doing the task.", json_schema_extra={ROLE_KEY: "assignee"}
    )
    reporter: EmailAddress = Field(
        description="Email of the employee who created the task.", json_schema_extra={ROLE_KEY: "requester"}
    )
    status: TaskStatus
    priority: Priority
    labels: list[Tag] = Field(default_factory=list, description="Labels on the task.")
    due_date: Date | None = Field(
        default=None, description="Date the task is due.", json_schema_extra={ROLE_KEY: "due"}
    )
    parent_id: TaskId | None = Field(default=None, description="Parent task, when this is a subtask.")
    blocked_by: list[TaskId] = Field(default_factory=list, description="Tasks that must finish before this one.")
    created_at: DateTime
    updated_at: DateTime
    completed_at: DateTime | None = Field(
        default=None, description="When the task was done.", json_schema_extra={ROLE_KEY: "event"}
    )


class Comment(Record):
    id: CommentId
    task_id: TaskId
    author: EmailAddress = Field(description="Email of the comment's author.", json_schema_extra={ROLE_KEY: "author"})
    body: Note
    created_at: DateTime


class Member(Record):
    email: Annotated[EmailAddress, role("member")]
    name: Annotated[PersonName, role("member")]
    title: JobTitle
    department: Department
    open_tasks: Count = Field(default=0, description="Unfinished tasks assigned to the member.")


class TrackerState(ServiceState):
    me: str = ""
    members: dict[str, Member] = Field(default_factory=dict)
    projects: dict[str, Project] = Field(default_factory=dict)
    tasks: dict[str, Task] = Field(default_factory=dict)
    comments: dict[str, Comment] = Field(default_factory=dict)
    counters: dict[str, int] = Field(default_factory=dict)


PROJECTS = (  # key, name, department, task template, archived
    ("OPS", "Office move 2026", "Operations", "move", False),
    ("OFF", "Office move 2025", "Operations", "move", True),
    ("VEND", "Vendor consolidation", "Operations", "vendors", False),
    ("WEB", "Website relaunch", "Marketing", "web", False),
    ("ONB", "Customer onboarding Q2", "Support", "onboarding", False),
    ("ONBQ", "Customer onboarding Q1", "Support", "onboarding", True),
    ("HIRE", "Hiring plan 2026", "People", "hiring", False),
    ("FIN", "Year-end close", "Finance", "close", False),
    ("PLAT", "Platform migration", "Engineering", "migration", False),
    ("SEC", "Security audit", "Legal", "audit", False),
)
DESKS = (  # key, name, department, task template: each team's standing project for day-to-day requests
    ("OPSQ", "Operations requests", "Operations", "requests"),
    ("FINOPS", "Finance requests", "Finance", "finops"),
    ("CS", "Support follow-ups", "Support", "support"),
    ("LEGAL", "Legal and compliance", "Legal", "legal"),
    ("PEOPLE", "People team requests", "People", "people"),
    ("ENG", "Engineering backlog", "Engineering", "backlog"),
    ("SALES", "Sales requests", "Sales", "sales"),
    ("MKT", "Marketing requests", "Marketing", "marketing"),
)
"""Where a team files what belongs to no initiative: a unit turnover or a chargeback follow-up filed
in "Office move 2026" reads as nonsense to the agent asked to do it (honest attempts reported it)."""
TASKS = {
    "move": ("Book movers", "Book movers (second quote)", "Order desks", "Plan seating", "Cancel old lease"),
    "vendors": ("List current vendors", "Compare vendor quotes", "Negotiate contracts", "Terminate duplicates"),
    "web": ("Draft homepage copy", "Pick photos", "Set up analytics", "Launch newsletter"),
    "onboarding": ("Write welcome guide", "Record demo video", "Set up kickoff call", "Import customer data"),
    "hiring": ("Open engineering roles", "Update job ladder", "Schedule interviews", "Prepare offer letters"),
    "close": ("Reconcile accounts", "Collect vendor invoices", "Close the books", "Prepare audit binder"),
    "migration": ("Inventory services", "Migrate database", "Switch DNS", "Decommission old cluster"),
    "audit": ("Collect policies", "Review access logs", "Fix audit findings", "Sign off report"),
    "rollout": ("Send kickoff deck", "Agree rollout plan", "Train customer admins", "Go live"),
    "requests": ("Restock the supply room", "Renew parking permits", "Service the printers", "Update the floor plan"),
    "finops": ("Chase unapplied payments", "Review card spend", "Update the vendor master", "Check the bank feeds"),
    "support": ("Triage the weekend queue", "Update canned replies", "Review CSAT comments", "Clean up stale tickets"),
    "legal": ("Review NDA template", "Renew trademark filings", "Update privacy notice", "File annual report"),
    "people": ("Refresh the handbook", "Plan benefits fair", "Collect timesheet fixes", "Update org chart"),
    "backlog": ("Fix flaky tests", "Upgrade dependencies", "Rotate API keys", "Tidy the dashboards"),
    "sales": ("Clean up the pipeline", "Update price book", "Review territory split", "Refresh battle cards"),
    "marketing": ("Refresh the brand kit", "Plan the webinar", "Update case studies", "Audit the email lists"),
}


def seed(rng: random.Random, world: Population) -> TrackerState:
    now, today = world.now, world.now.date()
    state = TrackerState(me=world.me.email, clock=now)
    for p in world.employees:
        state.members[p.email] = Member(email=p.email, name=p.name, title=p.title, department=p.department)
    by_dept: dict[str, list[str]] = {}
    for p in world.employees:
        by_dept.setdefault(p.department, []).append(p.email)
    heads = {dept: emails[0] for dept, emails in by_dept.items()}  # department heads come first
    customers = [c for c in world.companies if c.relation == "customer"][:3]
    rollouts = [(f"RO{'ABC'[i]}", f"Rollout: {c.name}", "Sales", "rollout", i == 2) for i, c in enumerate(customers)]

    desks = [(key, name, dept, template, False) for key, name, dept, template in DESKS]
    for key, name, dept, template, archived in list(PROJECTS) + rollouts + desks:
        created = now - dt.timedelta(days=rng.randint(200, 400) if archived else rng.randint(10, 120))
        project = Project(
            id=state.new_id("prj"), key=key, name=name, description=f"{name}, run by {dept}.",
            owner=world.me.email if dept == "Operations" else heads[dept], status="archived" if archived else "active",
            due_date=(created + dt.timedelta(days=rng.randint(60, 180))).date(), created_at=created,
        )  # fmt: skip
        state.projects[project.id] = project
        state.counters[project.id] = 0
        made: list[Task] = []
        for title in TASKS[template]:
            status = (
                "done" if archived else rng.choice(("todo", "todo", "in_progress", "in_review", "done", "cancelled"))
            )
            made.append(_seed_task(state, rng, project, title, status, rng.choice(by_dept[dept] + [world.me.email])))
        if not archived:
            blocker, blocked = made[0], made[-1]
            blocker.status, blocker.completed_at = "in_progress", None  # keeps the last task blocked
            blocked.blocked_by, blocked.status, blocked.completed_at = [blocker.id], "todo", None
            parent = made[1]
            parent.status, parent.completed_at = "in_progress", None
            for sub in ("Collect requirements", "Get sign-off"):
                child = _seed_task(state, rng, project, f"{parent.title}: {sub.lower()}", rng.choice(("todo", "done")),
                                   parent.assignee)  # fmt: skip
                child.parent_id = parent.id
    for task in rng.sample(list(state.tasks.values()), 30):
        author = task.assignee or task.reporter
        body = rng.choice(("Started on this.", "Waiting on a quote.", "Can we move the date?", "Done on my side."))
        when = task.created_at + dt.timedelta(minutes=rng.randint(60, 5000))
        comment = Comment(id=state.new_id("cmt"), task_id=task.id, author=author, body=body, created_at=min(when, now))
        state.comments[comment.id] = comment
    for task in state.tasks.values():  # due dates around today: some overdue, some far out
        if task.status not in FINISHED or rng.random() < 0.5:
            task.due_date = today + dt.timedelta(days=rng.randint(-15, 45))
    return state


def _seed_task(
    state: TrackerState, rng: random.Random, project: Project, title: str, status: str, assignee: str | None
) -> Task:
    created = project.created_at + dt.timedelta(minutes=rng.randint(60, 10 * 1440))
    done = status == "done"
    task = Task(
        id=state.new_id("tsk"), key=_next_key(state, project), project_id=project.id, title=title,
        description=f"{title} for {project.name}.", assignee=assignee, reporter=project.owner, status=status,
        priority=rng.choice(("low", "normal", "normal", "high", "urgent")), labels=[project.key.lower()],
        created_at=created, updated_at=created,
        completed_at=min(created + dt.timedelta(days=3), state.clock) if done else None,
    )  # fmt: skip
    state.tasks[task.id] = task
    return task


def _next_key(state: TrackerState, project: Project) -> str:
    state.counters[project.id] = state.counters.get(project.id, 0) + 1
    return f"{project.key}-{state.counters[project.id]}"


service = Service(
    "tracker",
    version=1,
    category="productivity",
    description="Project tracker: projects, tasks, subtasks, dependencies, assignees, due dates and comments.",
    modelled_on="Jira Cloud / Asana API (projects, issues, links, comments)",
    state=TrackerState,
    seed=seed,
    # counters issues task keys, which change when a task moves; project keys never change
    system_fields=("created_at", "updated_at", "counters", "key"),
)


def _active_project(state: TrackerState, project_id: str) -> Project:
    project = require(state.projects, project_id, "project")
    if project.status == "archived":
        raise Conflict(f"project {project_id!r} is archived and read-only")
    return project


def _editable(state: TrackerState, task_id: str) -> Task:
    task = require(state.tasks, task_id, "task")
    _active_project(state, task.project_id)
    return task


def _check_member(state: TrackerState, email: str | None) -> None:
    if email is not None and email.lower() not in state.members:
        raise BadRequest(f"argument 'assignee': {email!r} is not a member of the workspace")


def _blocks_transitively(state: TrackerState, start: str, target: str) -> bool:
    """Whether ``start`` already waits, directly or not, on ``target``."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        current = todo.pop()
        if current == target:
            return True
        if current not in seen:
            seen.add(current)
            todo.extend(state.tasks[current].blocked_by if current in state.tasks else [])
    return False


@service.read(
    op="list", entity="project", collection="projects", reads=("name", "key", "description", "status", "owner")
)
def list_projects(
    state: TrackerState,
    query: Query | None = None,
    status: ProjectStatus | None = None,
    owner: EmailAddress | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Project]:
    """List projects sorted by name, with optional filters.

    Args:
        query: Case-insensitive text to find in the project name, key or description.
        status: Only active or only archived projects.
        owner: Only projects owned by this employee.
        offset: Number of projects to skip.
        limit: Maximum number of projects to return.
    """
    rows = [
        p
        for p in state.projects.values()
        if any(contains(v, query) for v in (p.name, p.key, p.description))
        and (status is None or p.status == status)
        and (owner is None or p.owner.lower() == owner.lower())
    ]
    return paginate(sorted(rows, key=lambda p: (p.name.lower(), p.id)), offset, limit)


@service.read(op="get", entity="project", collection="projects")
def get_project(state: TrackerState, project_id: ProjectId) -> Project:
    """Get one project.

    Args:
        project_id: Id of the project.
    """
    return require(state.projects, project_id, "project")


@service.write(
    op="create", entity="project", collection="projects", sets=("name", "description", "owner", "status", "due_date")
)
def create_project(
    state: TrackerState,
    name: Title,
    key: ProjectKey,
    owner: EmailAddress,
    description: DocumentText = "",
    due_date: Date | None = None,
) -> Project:
    """Create a project; its key prefixes every task key and must be unique.

    Args:
        name: Project name.
        key: Unique uppercase key, e.g. OPS.
        owner: Email of the employee who owns the project.
        description: What the project is about.
        due_date: Target date of the project.
    """
    if owner.lower() not in state.members:
        raise BadRequest(f"argument 'owner': {owner!r} is not a member of the workspace")
    for other in state.projects.values():
        if other.key == key:
            raise Conflict(f"project key {key!r} is already used by project {other.id!r}")
    project = Project(
        id=state.new_id("prj"), key=key, name=name, description=description, owner=owner.lower(), status="active",
        due_date=due_date, created_at=state.tick(),
    )  # fmt: skip
    state.projects[project.id] = project
    return project


@service.write(op="transition", entity="project", collection="projects", sets=("status",))
def archive_project(state: TrackerState, project_id: ProjectId) -> Project:
    """Archive a project you own; it and its tasks become read-only.

    Args:
        project_id: Id of the project.
    """
    project = _active_project(state, project_id)
    if project.owner.lower() != state.me.lower():
        raise Forbidden(f"project {project_id!r} is owned by {project.owner!r}; only its owner may archive it")
    state.tick()
    project.status = "archived"
    return project


@service.read(
    op="list",
    entity="task",
    collection="tasks",
    reads=(
        "project_id",
        "assignee",
        "status",
        "priority",
        "labels",
        "title",
        "description",
        "key",
        "due_date",
        "parent_id",
    ),
)
def list_tasks(
    state: TrackerState,
    project_id: ProjectId | None = None,
    assignee: EmailAddress | None = None,
    status: TaskStatus | None = None,
    priority: Priority | None = None,
    label: Tag | None = None,
    query: Query | None = None,
    due_before: Date | None = None,
    overdue_only: Flag = False,
    parent_id: TaskId | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Task]:
    """List tasks by due date (undated last), with optional filters.

    Args:
        project_id: Only tasks of this project.
        assignee: Only tasks assigned to this employee.
        status: Only tasks in this status.
        priority: Only tasks of this priority.
        label: Only tasks carrying this label.
        query: Case-insensitive text to find in the title, description or key.
        due_before: Only tasks due on or before this date.
        overdue_only: Only unfinished tasks whose due date has passed.
        parent_id: Only the subtasks of this task.
        offset: Number of tasks to skip.
        limit: Maximum number of tasks to return.
    """
    today = state.clock.date()
    rows = [
        t
        for t in state.tasks.values()
        if (project_id is None or t.project_id == project_id)
        and (assignee is None or (t.assignee or "").lower() == assignee.lower())
        and (status is None or t.status == status)
        and (priority is None or t.priority == priority)
        and (label is None or label in t.labels)
        and any(contains(v, query) for v in (t.title, t.description, t.key))
        and (due_before is None or (t.due_date is not None and t.due_date <= due_before))
        and (not overdue_only or (t.status not in FINISHED and t.due_date is not None and t.due_date < today))
        and (parent_id is None or t.parent_id == parent_id)
    ]
    return paginate(sorted(rows, key=lambda t: (t.due_date or dt.date.max, t.id)), offset, limit)


@service.read(op="get", entity="task", collection="tasks")
def get_task(state: TrackerState, task_id: TaskId) -> Task:
    """Get one task.

    Args:
        task_id: Id of the task.
    """
    return require(state.tasks, task_id, "task")


@service.write(
    op="create",
    entity="task",
    collection="tasks",
    sets=(
        "project_id",
        "title",
        "description",
        "assignee",
        "reporter",
        "status",
        "priority",
        "labels",
        "due_date",
        "parent_id",
    ),
)
def create_task(
    state: TrackerState,
    project_id: ProjectId,
    title: Title,
    description: DocumentText = "",
    assignee: EmailAddress | None = None,
    priority: Priority = "normal",
    due_date: Date | None = None,
    labels: list[Tag] | None = None,
    parent_task_id: TaskId | None = None,
) -> Task:
    """Create a task, or a subtask of a task, in an active project; you are its reporter.

    Args:
        project_id: Id of the project.
        title: Task title.
        description: What needs doing.
        assignee: Email of the employee doing the task.
        priority: Priority of the task.
        due_date: Date the task is due.
        labels: Labels for the task.
        parent_task_id: Id of the parent task, in the same project, to create a subtask.
    """
    project = _active_project(state, project_id)
    _check_member(state, assignee)
    if parent_task_id is not None:
        parent = require(state.tasks, parent_task_id, "task")
        if parent.project_id != project_id:
            raise BadRequest(f"argument 'parent_task_id': task {parent_task_id!r} is in another project")
        if parent.parent_id is not None:
            raise BadRequest(f"argument 'parent_task_id': task {parent_task_id!r} is itself a subtask")
    now = state.tick()
    task = Task(
        id=state.new_id("tsk"), key=_next_key(state, project), project_id=project_id, title=title,
        description=description, assignee=assignee.lower() if assignee else None, reporter=state.me, status="todo",
        priority=priority, labels=sorted(set(labels or [])), due_date=due_date, parent_id=parent_task_id,
        created_at=now, updated_at=now,
    )  # fmt: skip
    state.tasks[task.id] = task
    return task


@service.write(
    op="update",
    entity="task",
    collection="tasks",
    sets=("title", "description", "assignee", "priority", "due_date", "labels"),
)
def update_task(
    state: TrackerState,
    task_id: TaskId,
    title: Title | None = None,
    description: DocumentText | None = None,
    assignee: EmailAddress | None = None,
    priority: Priority | None = None,
    due_date: Date | None = None,
    labels: list[Tag] | None = None,
) -> Task:
    """Change fields of a task in an active project; omitted fields stay as they are.

    Args:
        task_id: Id of the task.
        title: New title.
        description: New description.
        assignee: Email of the new assignee.
        priority: New priority.
        due_date: New due date.
        labels: New full list of labels (replaces the old list).
    """
    task = _editable(state, task_id)
    _check_member(state, assignee)
    update = {
        "title": title, "description": description, "assignee": assignee.lower() if assignee else None,
        "priority": priority, "due_date": due_date, "labels": sorted(set(labels)) if labels is not None else None,
    }  # fmt: skip
    changes = {k: v for k, v in update.items() if v is not None}
    updated = task.model_copy(update={**changes, "updated_at": state.tick()})
    state.tasks[task_id] = updated
    return updated


@service.write(op="transition", entity="task", collection="tasks", sets=("status", "completed_at"))
def set_task_status(state: TrackerState, task_id: TaskId, status: TaskStatus) -> Task:
    """Move a task to another status; done needs its blockers and subtasks finished.

    Args:
        task_id: Id of the task.
        status: New status.
    """
    task = _editable(state, task_id)
    if task.status == status:
        raise Conflict(f"task {task_id!r} is already {status!r}")
    if status == "done":
        waiting = [b for b in task.blocked_by if b in state.tasks and state.tasks[b].status not in FINISHED]
        if waiting:
            raise Conflict(f"task {task_id!r} is blocked by unfinished task(s) {waiting!r}")
        open_subtasks = sorted(
            t.id for t in state.tasks.values() if t.parent_id == task_id and t.status not in FINISHED
        )
        if open_subtasks:
            raise Conflict(f"task {task_id!r} has unfinished subtask(s) {open_subtasks!r}")
    now = state.tick()
    task.status, task.updated_at = status, now
    task.completed_at = now if status == "done" else None
    return task


@service.write(op="update", entity="task", collection="tasks", sets=("project_id",))
def move_task(state: TrackerState, task_id: TaskId, project_id: ProjectId) -> Task:
    """Move a task, with its subtasks, to another active project; they get new keys there.

    Args:
        task_id: Id of the task (not a subtask: move its parent instead).
        project_id: Id of the destination project.
    """
    task = _editable(state, task_id)
    target = _active_project(state, project_id)
    if task.project_id == project_id:
        raise Conflict(f"task {task_id!r} is already in project {project_id!r}")
    if task.parent_id is not None:
        raise Conflict(f"task {task_id!r} is a subtask; move its parent {task.parent_id!r} instead")
    now = state.tick()
    subtasks = sorted((t for t in state.tasks.values() if t.parent_id == task_id), key=lambda t: t.id)
    for moved in [task, *subtasks]:
        moved.project_id, moved.key, moved.updated_at = project_id, _next_key(state, target), now
    return task


@service.write(op="delete", entity="task", collection="tasks")
def delete_task(state: TrackerState, task_id: TaskId) -> Task:
    """Delete a task you reported or whose project you own, with its comments, and return it.

    Args:
        task_id: Id of the task (delete its subtasks first).
    """
    task = _editable(state, task_id)
    owner = state.projects[task.project_id].owner
    if state.me.lower() not in (task.reporter.lower(), owner.lower()):
        raise Forbidden(f"task {task_id!r} was reported by {task.reporter!r}; only they or {owner!r} may delete it")
    subtasks = sorted(t.id for t in state.tasks.values() if t.parent_id == task_id)
    if subtasks:
        raise Conflict(f"task {task_id!r} has subtasks {subtasks!r}; delete or move them first")
    del state.tasks[task_id]
    for other in state.tasks.values():
        if task_id in other.blocked_by:
            other.blocked_by = [b for b in other.blocked_by if b != task_id]
    for comment_id in [c.id for c in state.comments.values() if c.task_id == task_id]:
        del state.comments[comment_id]
    return task


@service.write(op="append", entity="task", collection="tasks", sets=("blocked_by",))
def add_dependency(state: TrackerState, task_id: TaskId, blocked_by_task_id: TaskId) -> Task:
    """Record that a task cannot be completed before another one is finished.

    Args:
        task_id: Id of the task that waits.
        blocked_by_task_id: Id of the task it waits for.
    """
    task = _editable(state, task_id)
    require(state.tasks, blocked_by_task_id, "task")
    if blocked_by_task_id == task_id:
        raise BadRequest("argument 'blocked_by_task_id': a task cannot block itself")
    if blocked_by_task_id in task.blocked_by:
        raise Conflict(f"task {task_id!r} is already blocked by {blocked_by_task_id!r}")
    if _blocks_transitively(state, blocked_by_task_id, task_id):
        raise Conflict(f"task {blocked_by_task_id!r} already waits on {task_id!r}; the dependency would form a cycle")
    task.blocked_by = [*task.blocked_by, blocked_by_task_id]
    task.updated_at = state.tick()
    return task


@service.write(op="remove", entity="task", collection="tasks", sets=("blocked_by",))
def remove_dependency(state: TrackerState, task_id: TaskId, blocked_by_task_id: TaskId) -> Task:
    """Remove a dependency between two tasks.

    Args:
        task_id: Id of the task that waits.
        blocked_by_task_id: Id of the task it no longer waits for.
    """
    task = _editable(state, task_id)
    require(state.tasks, blocked_by_task_id, "task")
    if blocked_by_task_id not in task.blocked_by:
        raise BadRequest(f"argument 'blocked_by_task_id': task {task_id!r} is not blocked by {blocked_by_task_id!r}")
    task.blocked_by = [b for b in task.blocked_by if b != blocked_by_task_id]
    task.updated_at = state.tick()
    return task


@service.write(op="create", entity="comment", collection="comments", sets=("task_id", "author", "body"))
def add_comment(state: TrackerState, task_id: TaskId, body: Note) -> Comment:
    """Comment on a task in an active project.

    Args:
        task_id: Id of the task.
        body: Text of the comment.
    """
    task = _editable(state, task_id)
    if not body.strip():
        raise BadRequest("argument 'body': a comment cannot be empty")
    now = state.tick()
    comment = Comment(id=state.new_id("cmt"), task_id=task.id, author=state.me, body=body, created_at=now)
    state.comments[comment.id] = comment
    return comment


@service.read(op="list", entity="comment", collection="comments", reads=("task_id",))
def list_comments(state: TrackerState, task_id: TaskId) -> list[Comment]:
    """List the comments of a task, oldest first.

    Args:
        task_id: Id of the task.
    """
    require(state.tasks, task_id, "task")
    return sorted((c for c in state.comments.values() if c.task_id == task_id), key=lambda c: (c.created_at, c.id))


@service.read(op="list", entity="member", collection="members", reads=("name", "email", "title", "department"))
def list_members(state: TrackerState, query: Query | None = None, department: Department | None = None) -> list[Member]:
    """List the workspace members (who can own projects and be assigned tasks) with their open task counts.

    Args:
        query: Case-insensitive text to find in the name, email or title.
        department: Only members of this department, e.g. Operations.
    """
    counts: dict[str, int] = {}
    for task in state.tasks.values():
        if task.assignee and task.status not in FINISHED:
            counts[task.assignee] = counts.get(task.assignee, 0) + 1
    return [
        m.model_copy(update={"open_tasks": counts.get(email, 0)})
        for email, m in sorted(state.members.items())
        if any(contains(v, query) for v in (m.name, m.email, m.title))
        and (department is None or m.department.lower() == department.lower())
    ]
