"""Wiki: the company knowledge base — spaces, page trees, versions, comments, labels and search.

Tools: list_spaces, list_pages, search_pages, get_page, create_page, update_page,
list_page_versions, restore_page_version, add_comment, list_comments, resolve_comment,
add_label, remove_label, move_page, archive_page, restore_page.
State: spaces by key, pages by id, page versions by "<page id>:<version>", comments by id;
the acting user's address.
Seed: seven spaces (Operations, Engineering, Company handbook, Sales, and the restricted
Finance, People and Legal spaces — the user is a member of Finance only) holding about 50
pages written by the population's employees: vendor pages quoting contacts and PO numbers,
account plans for customers, runbooks quoting SKUs, policies with approval thresholds,
weekly meeting notes, near-duplicate titles ("Onboarding checklist" / "New hire onboarding
checklist", drafts), archived pages, edit histories and open and resolved comments.
Rules: pages of a restricted space are only visible to its members (403); titles are unique
among a space's current pages (409); archived pages cannot be edited, commented, labelled or
moved (409); an update must name the page's current version (stale → 409); a parent must be
a current page of the same space (400/409) and a page cannot move under itself (409); a page
with current children is archived only together with them (409); a page is restored only
under a current parent (409).
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
from servers.roles import ROLE_KEY
from servers.types import (
    DateTime,
    DocumentText,
    EmailAddress,
    Flag,
    Limit,
    Note,
    Offset,
    Query,
    Tag,
    Title,
    ident,
    sem,
)

SpaceKey = Annotated[str, ident("wiki", "space")]
PageId = Annotated[str, ident("wiki", "page")]
CommentId = Annotated[str, ident("wiki", "comment")]
Status = Annotated[Literal["current", "archived"], sem("wiki.page_status", "Lifecycle status of a wiki page.")]
VersionNumber = Annotated[int, sem("wiki.version_number", "Version number of a wiki page, starting at 1.", ge=1)]
Excerpt = Annotated[str, sem("wiki.excerpt", "Snippet of page text around a search match.", max_length=400)]


class Space(Record):
    key: SpaceKey
    name: Title
    description: Note
    restricted: Flag = Field(description="Whether only members can see the space's pages.")
    members: list[EmailAddress] = Field(
        description="People who can see a restricted space (empty when open).", json_schema_extra={ROLE_KEY: "member"}
    )
    admin: EmailAddress = Field(
        description="Address of the space administrator.", json_schema_extra={ROLE_KEY: "owner"}
    )


class PageSummary(Record):
    id: PageId
    space_key: SpaceKey
    title: Title
    parent_id: PageId | None = Field(description="Id of the parent page, or null at the top of the space.")
    labels: list[Tag] = Field(default_factory=list, description="Labels on the page.")
    status: Status
    version: VersionNumber = Field(description="Current version number.")
    author: EmailAddress = Field(description="Address of the page's creator.", json_schema_extra={ROLE_KEY: "author"})
    last_editor: EmailAddress = Field(description="Address of the person who saved the current version.")
    created_at: DateTime
    updated_at: DateTime


class WikiPage(PageSummary):
    body: DocumentText = Field(description="Page content (markdown).")


class SearchHit(Record):
    id: PageId
    space_key: SpaceKey
    title: Title
    excerpt: Excerpt
    status: Status
    updated_at: DateTime


class PageVersion(Record):
    page_id: PageId
    version: VersionNumber
    title: Title
    body: DocumentText = Field(description="Page content at this version.")
    author: EmailAddress = Field(
        description="Address of the person who saved this version.", json_schema_extra={ROLE_KEY: "author"}
    )
    created_at: DateTime
    message: Note = Field(default="", description="Change message saved with the version.")


class Comment(Record):
    id: CommentId
    page_id: PageId
    author: EmailAddress = Field(description="Address of the commenter.", json_schema_extra={ROLE_KEY: "author"})
    body: Note
    created_at: DateTime
    resolved: Flag = Field(description="Whether the comment thread is resolved.")


class WikiState(ServiceState):
    me: str = ""
    spaces: dict[str, Space] = {}
    pages: dict[str, WikiPage] = {}
    versions: dict[str, PageVersion] = {}
    comments: dict[str, Comment] = {}


def _save(state: WikiState, page: WikiPage, title: str, body: str, who: str, when: dt.datetime, msg: str) -> None:
    """Store ``title``/``body`` as the page's next version and make it current."""
    number = page.version + 1 if page.id in state.pages else 1
    key = f"{page.id}:{number}"
    state.versions[key] = PageVersion(
        page_id=page.id, version=number, title=title, body=body, author=who, created_at=when, message=msg
    )
    page.title, page.body, page.version, page.last_editor, page.updated_at = title, body, number, who, when
    state.pages[page.id] = page


def _blank(state: WikiState, space: str, title: str, parent: str | None, labels: list[str], who: str,
           when: dt.datetime) -> WikiPage:  # fmt: skip
    """A new, empty page at version 1 (``_save`` gives it its first content)."""
    return WikiPage(
        id=state.new_id("pg"), space_key=space, title=title, parent_id=parent, labels=labels, status="current",
        version=1, author=who, last_editor=who, created_at=when, updated_at=when, body="",
    )  # fmt: skip


def seed(rng: random.Random, world: Population) -> WikiState:
    me = world.me.email
    state = WikiState(me=me, clock=world.now)
    staff: dict[str, list[str]] = {}
    for person in world.employees:
        staff.setdefault(person.department, []).append(person.email)
    everyone = [p.email for p in world.employees]
    dept_of = {"OPS": "Operations", "ENG": "Engineering", "TEAM": "People", "SALES": "Sales", "FIN": "Finance"}
    dept_of |= {"HR": "People", "LEGAL": "Legal"}
    names = {"OPS": "Operations", "ENG": "Engineering", "TEAM": "Company handbook", "SALES": "Sales"}
    names |= {"FIN": "Finance", "HR": "People team", "LEGAL": "Legal"}
    for key, name in names.items():
        restricted, dept = key in ("FIN", "HR", "LEGAL"), dept_of[key]
        members = staff[dept] + ([me] if key == "FIN" else []) if restricted else []
        desc = f"{name} space{' (restricted to members)' if restricted else ''}."
        state.spaces[key] = Space(
            key=key, name=name, description=desc, restricted=restricted, members=members, admin=staff[dept][0]
        )

    def add(space: str, title: str, body: str, days: float, parent: str | None = None, **kw: object) -> str:
        author = str(kw.get("author") or rng.choice(staff[dept_of[space]]))
        edits = int(kw.get("edits", rng.choice((0, 0, 1, 2))))  # type: ignore[call-overload]
        when = world.now - dt.timedelta(minutes=int(days * 1440) + 3 * 1440 * edits + rng.randint(0, 600))
        labels = list(kw.get("labels", []))  # type: ignore[call-overload]
        page = _blank(state, space, title, parent, labels, author, when)
        drafts = [f"{body}\n\n(Draft {n} — to be reviewed.)" for n in range(edits, 0, -1)] + [body]
        for number, text in enumerate(drafts):
            editor = author if number == 0 else rng.choice(staff[dept_of[space]] + everyone[:4])
            _save(state, page, title, text, editor, when + dt.timedelta(days=3 * number), "" if number else "Created")
        if kw.get("archived"):
            page.status = "archived"
        return page.id

    home = add("OPS", "Operations home", f"# Operations\nOwner: {me}\nVendor pages and runbooks.", 300, author=me)
    policy = (
        "# Procurement policy\nPurchases over 5000 USD need Finance approval before a PO is raised.\n"
        "Purchases over 25000 USD need a second quote."
    )
    add("OPS", "Procurement policy", policy, 60, home, labels=["policy", "procurement"])
    add("OPS", "Procurement policy (2023)", policy.replace("5000", "2500"), 700, home, labels=["policy"], archived=True)
    vendors = add("OPS", "Vendor management", "How we onboard, review and offboard suppliers.", 200, home)
    for company in [c for c in world.companies if c.relation in ("vendor", "partner")]:
        contact = world.contacts_of(company.id)[0]
        body = (
            f"# {company.name}\nRelation: {company.relation}\nMain contact: {contact.name} <{contact.email}>, "
            f"{contact.phone}\nAddress: {company.address}, {company.city} ({company.country})\n"
            f"Current PO: PO-{rng.randint(10000, 99999)}\nBilling currency: {company.currency}"
        )
        add("OPS", f"Vendor: {company.name}", body, rng.uniform(5, 120), vendors, labels=["vendor"])
    hardware = [p for p in world.products if p.category == "hardware"]
    runbook = "# Inventory reorder runbook\n" + "".join(f"- {p.sku} {p.name}: reorder at 10 units\n" for p in hardware)
    add("OPS", "Inventory reorder runbook", runbook, 30, home, labels=["runbook", "inventory"], author=me)
    add("OPS", "Office move plan", "Move to the new office on 2026-04-20. Movers booked.", 14, home, author=me)
    add("OPS", "Office move plan (draft)", "Move in April? Movers not booked yet.", 90, home, author=me, edits=0)
    old = add("OPS", "Old office (2024)", "Floor plans of the previous office.", 400, home, archived=True)
    add("OPS", "Old office seating plan", "Desks by team, second floor.", 420, old, archived=True)
    for week in range(1, 7):
        day = world.now - dt.timedelta(days=7 * week)
        attendees = rng.sample(everyone, 3)
        notes = f"# Weekly ops sync {day:%Y-%m-%d}\nAttendees: {', '.join(attendees)}\n- Action items reviewed."
        add("OPS", f"Weekly ops sync {day:%Y-%m-%d}", notes, 7 * week, home, labels=["meeting-notes"], edits=0)

    eng = add("ENG", "Engineering home", "Runbooks, postmortems and guides.", 400)
    oncall = "Page the on-call engineer through the paging tool; escalate after 15 minutes."
    add("ENG", "On-call runbook", oncall, 40, eng, labels=["runbook", "on-call"])
    for days in (12, 45, 110):
        title = f"Incident postmortem {world.now - dt.timedelta(days=days):%Y-%m-%d}"
        add("ENG", title, "Root cause, timeline and actions.", days, eng, labels=["postmortem"])
    add("ENG", "Laptop setup guide", "Install the VPN, the password manager and request a Docking Station.", 80, eng)
    add("ENG", "Deploy checklist", "1. Green CI\n2. Change approved\n3. Announce in #deploys", 20, eng)
    add("ENG", "Deploy checklist (old)", "1. Green CI\n2. Email the release manager", 500, eng, archived=True)

    team = add("TEAM", "Company handbook", f"Welcome to {world.org.name}.", 500)
    expense = "# Expense policy\nMeals up to 60 USD per day. Hotels up to 220 USD per night. Receipts over 25 USD."
    add("TEAM", "Expense policy", expense, 100, team, labels=["policy", "expenses"])
    add("TEAM", "Travel policy", "Book economy for flights under 6 hours.", 120, team, labels=["policy", "travel"])
    add("TEAM", "Holiday calendar 2026", "Office closed on public holidays.", 70, team)
    add("TEAM", "Onboarding checklist", "1. Laptop\n2. Badge\n3. Accounts\n4. Buddy", 150, team, labels=["onboarding"])
    add("TEAM", "New hire onboarding checklist", "1. Contract\n2. Payroll\n3. Laptop", 40, team, labels=["onboarding"])
    heads = "\n".join(f"- {p.department}: {p.name} <{p.email}>" for p in world.employees if p.manager_id is None)
    add("TEAM", "Org chart", f"# Department heads\n{heads}", 30, team, labels=["people"])

    sales = add("SALES", "Sales playbook", "Discovery, proposal, negotiation, close.", 250)
    for company in [c for c in world.companies if c.relation in ("customer", "prospect")]:
        contact, product = world.contacts_of(company.id)[0], rng.choice(world.products)
        body = (
            f"# Account plan: {company.name}\nStatus: {company.relation}\nDecision maker: {contact.name} "
            f"<{contact.email}>\nOpportunity: {rng.randint(5, 50)} x {product.name} ({product.sku})\n"
            f"Target close: {world.now + dt.timedelta(days=rng.randint(10, 90)):%Y-%m-%d}"
        )
        add("SALES", f"Account plan: {company.name}", body, rng.uniform(3, 60), sales, labels=["account-plan"])

    fin = add("FIN", "Finance home", "Budget process and approvals.", 300)
    matrix = "Up to 5000 USD: manager. Up to 25000 USD: Finance Manager. Above: CFO."
    add("FIN", "Approval matrix", matrix, 50, fin, labels=["policy", "approvals"])
    add("FIN", "Month-end close checklist", "Accruals, reconciliations, vendor invoices.", 25, fin)
    add("FIN", "Budget process FY2026", "Department budgets are due by 2026-03-31.", 35, fin, labels=["budget"])
    hr = add("HR", "People team home", "Confidential HR space.", 300)
    add("HR", "Salary review 2026", "Confidential: salary review timeline.", 20, hr)
    add("HR", "Hiring plan 2026", "Two operations analysts, one support lead.", 45, hr)
    legal = add("LEGAL", "Legal home", "Contract templates and guidance.", 300)
    add("LEGAL", "Contract templates", "MSA, NDA and DPA templates.", 60, legal, labels=["templates"])

    pages = [p for p in state.pages.values() if p.status == "current" and not state.spaces[p.space_key].restricted]
    remarks = ("Is this still up to date?", "Added the new contact, please check.", "Typo in step 2.", "Approved.")
    for page in rng.sample(pages, 18):
        when = world.now - dt.timedelta(minutes=rng.randint(60, 20 * 1440))
        comment = Comment(
            id=state.new_id("cm"), page_id=page.id, author=rng.choice(everyone), body=rng.choice(remarks),
            created_at=when, resolved=rng.random() < 0.4,
        )  # fmt: skip
        state.comments[comment.id] = comment
    return state


service = Service(
    "wiki",
    version=1,
    category="productivity",
    description="The company wiki: spaces, page trees, versions, comments, labels and full-text search.",
    modelled_on="Confluence Cloud REST API (spaces, pages, versions, comments, labels)",
    state=WikiState,
    seed=seed,
    system_fields=("created_at", "updated_at", "version", "last_editor"),
)


def _can_see(state: WikiState, space: Space) -> bool:
    return not space.restricted or state.me.lower() in [m.lower() for m in space.members]


def _space(state: WikiState, key: str) -> Space:
    space = require(state.spaces, key, "space")
    if not _can_see(state, space):
        raise Forbidden(f"space {key!r} is restricted and {state.me!r} is not a member")
    return space


def _page(state: WikiState, page_id: str) -> WikiPage:
    page = require(state.pages, page_id, "page")
    _space(state, page.space_key)
    return page


def _current(state: WikiState, page_id: str, action: str) -> WikiPage:
    page = _page(state, page_id)
    if page.status == "archived":
        raise Conflict(f"page {page_id!r} is archived and cannot be {action}; restore it first")
    return page


def _title_free(state: WikiState, space: str, title: str, exclude: str | None = None) -> None:
    for other in state.pages.values():
        if other.space_key == space and other.status == "current" and other.id != exclude and other.title == title:
            raise Conflict(f"space {space!r} already has a page titled {title!r} ({other.id!r})")


def _descendants(state: WikiState, page_id: str) -> list[WikiPage]:
    found: list[WikiPage] = []
    frontier = [page_id]
    while frontier:
        children = [p for p in state.pages.values() if p.parent_id in frontier]
        found += children
        frontier = [c.id for c in children]
    return found


def _summary(page: WikiPage) -> PageSummary:
    return PageSummary.model_validate(page.model_dump(exclude={"body"}))


def _excerpt(page: WikiPage, query: str) -> str:
    at = page.body.lower().find(query.lower())
    start = max(at - 80, 0) if at >= 0 else 0
    return page.body[start : start + 240]


@service.read(op="list", entity="space", collection="spaces", reads=("name", "key"))
def list_spaces(state: WikiState, query: Query | None = None) -> list[Space]:
    """List the wiki's spaces (restricted ones included, flagged), by key.

    Args:
        query: Case-insensitive text to find in the space key or name.
    """
    return [s for k, s in sorted(state.spaces.items()) if contains(s.name, query) or contains(k, query)]


@service.read(
    op="list",
    entity="page",
    collection="pages",
    reads=("space_key", "parent_id", "labels", "author", "title", "status"),
)
def list_pages(
    state: WikiState,
    space_key: SpaceKey | None = None,
    parent_id: PageId | None = None,
    label: Tag | None = None,
    author: EmailAddress | None = None,
    title_query: Query | None = None,
    status: Status = "current",
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[PageSummary]:
    """List pages the user can see (without bodies), most recently updated first.

    Args:
        space_key: Only pages of this space (a restricted space needs membership).
        parent_id: Only direct children of this page.
        label: Only pages carrying this label.
        author: Only pages created by this address.
        title_query: Case-insensitive text to find in the title.
        status: current or archived pages.
        offset: Number of pages to skip.
        limit: Maximum number of pages to return.
    """
    if space_key is not None:
        _space(state, space_key)
    rows = [
        p
        for p in state.pages.values()
        if _can_see(state, state.spaces[p.space_key])
        and p.status == status
        and (space_key is None or p.space_key == space_key)
        and (parent_id is None or p.parent_id == parent_id)
        and (label is None or label in p.labels)
        and (author is None or p.author.lower() == author.lower())
        and contains(p.title, title_query)
    ]
    rows.sort(key=lambda p: (p.updated_at, p.id), reverse=True)
    return paginate([_summary(p) for p in rows], offset, limit)


@service.read(op="search", entity="page", collection="pages", reads=("title", "body", "space_key", "status"))
def search_pages(
    state: WikiState,
    query: Query,
    space_key: SpaceKey | None = None,
    include_archived: Flag = False,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[SearchHit]:
    """Full-text search over the titles and bodies of the pages the user can see; title matches first.

    Args:
        query: Case-insensitive text to find.
        space_key: Only search this space.
        include_archived: Also return archived pages.
        offset: Number of hits to skip.
        limit: Maximum number of hits to return.
    """
    if space_key is not None:
        _space(state, space_key)
    rows = [
        p
        for p in state.pages.values()
        if _can_see(state, state.spaces[p.space_key])
        and (include_archived or p.status == "current")
        and (space_key is None or p.space_key == space_key)
        and (contains(p.title, query) or contains(p.body, query))
    ]
    rows.sort(key=lambda p: (not contains(p.title, query), -p.updated_at.timestamp(), p.id))
    hits = [
        SearchHit(
            id=p.id,
            space_key=p.space_key,
            title=p.title,
            excerpt=_excerpt(p, query),
            status=p.status,
            updated_at=p.updated_at,
        )
        for p in rows
    ]
    return paginate(hits, offset, limit)


@service.read(op="get", entity="page", collection="pages")
def get_page(state: WikiState, page_id: PageId) -> WikiPage:
    """Get one page with its body.

    Args:
        page_id: Id of the page.
    """
    return _page(state, page_id)


@service.write(
    op="create",
    entity="page",
    collection="pages",
    sets=("space_key", "title", "parent_id", "labels", "status", "author", "body"),
)
def create_page(
    state: WikiState,
    space_key: SpaceKey,
    title: Title,
    body: DocumentText,
    parent_id: PageId | None = None,
    labels: list[Tag] | None = None,
) -> WikiPage:
    """Create a page in a space, optionally under a parent page.

    Args:
        space_key: Key of the space.
        title: Page title (unique among the space's current pages).
        body: Page content (markdown).
        parent_id: Id of the parent page (a current page of the same space).
        labels: Labels to put on the page.
    """
    _space(state, space_key)
    if parent_id is not None:
        parent = _current(state, parent_id, "a parent")
        if parent.space_key != space_key:
            raise BadRequest(f"argument 'parent_id': page {parent_id!r} is in space {parent.space_key!r}")
    _title_free(state, space_key, title)
    now = state.tick()
    page = _blank(state, space_key, title, parent_id, list(dict.fromkeys(labels or [])), state.me, now)
    _save(state, page, title, body, state.me, now, "Created")
    return page


@service.write(op="update", entity="page", collection="pages", sets=("title", "body"))
def update_page(
    state: WikiState,
    page_id: PageId,
    version: VersionNumber,
    title: Title | None = None,
    body: DocumentText | None = None,
    message: Note = "",
) -> WikiPage:
    """Save a new version of a page; ``version`` must be the version you read (no lost updates).

    Args:
        page_id: Id of the page.
        version: The page's current version number, as last read.
        title: New title; omit to keep it.
        body: New content; omit to keep it.
        message: Change message saved with the version.
    """
    page = _current(state, page_id, "edited")
    if version != page.version:
        raise Conflict(f"page {page_id!r} is at version {page.version}, not {version}; re-read it first")
    new_title, new_body = title or page.title, body if body is not None else page.body
    if (new_title, new_body) == (page.title, page.body):
        raise BadRequest("arguments 'title' and 'body': nothing to change")
    _title_free(state, page.space_key, new_title, exclude=page_id)
    _save(state, page, new_title, new_body, state.me, state.tick(), message)
    return page


@service.read(op="list", entity="version", collection="versions", reads=("page_id",))
def list_page_versions(state: WikiState, page_id: PageId) -> list[PageVersion]:
    """List every saved version of a page, newest first.

    Args:
        page_id: Id of the page.
    """
    _page(state, page_id)
    return sorted((v for v in state.versions.values() if v.page_id == page_id), key=lambda v: -v.version)


@service.write(op="update", entity="page", collection="pages", sets=("title", "body"))
def restore_page_version(state: WikiState, page_id: PageId, version: VersionNumber) -> WikiPage:
    """Make an earlier version current again (saved as a new version).

    Args:
        page_id: Id of the page.
        version: Number of the version to restore.
    """
    page = _current(state, page_id, "edited")
    old = require(state.versions, f"{page_id}:{version}", "page version")
    if (old.title, old.body) == (page.title, page.body):
        raise Conflict(f"page {page_id!r} already has the content of version {version}")
    _title_free(state, page.space_key, old.title, exclude=page_id)
    _save(state, page, old.title, old.body, state.me, state.tick(), f"Restored version {version}")
    return page


@service.write(op="create", entity="comment", collection="comments", sets=("page_id", "author", "body", "resolved"))
def add_comment(state: WikiState, page_id: PageId, body: Note) -> Comment:
    """Comment on a page.

    Args:
        page_id: Id of the page.
        body: Comment text.
    """
    _current(state, page_id, "commented")
    if not body.strip():
        raise BadRequest("argument 'body': the comment is empty")
    comment = Comment(
        id=state.new_id("cm"), page_id=page_id, author=state.me, body=body, created_at=state.tick(), resolved=False
    )
    state.comments[comment.id] = comment
    return comment


@service.read(op="list", entity="comment", collection="comments", reads=("page_id", "resolved"))
def list_comments(state: WikiState, page_id: PageId, include_resolved: Flag = False) -> list[Comment]:
    """List the comments of a page, oldest first.

    Args:
        page_id: Id of the page.
        include_resolved: Also return resolved comments.
    """
    _page(state, page_id)
    rows = [c for c in state.comments.values() if c.page_id == page_id and (include_resolved or not c.resolved)]
    return sorted(rows, key=lambda c: (c.created_at, c.id))


@service.write(op="transition", entity="comment", collection="comments", sets=("resolved",))
def resolve_comment(state: WikiState, comment_id: CommentId) -> Comment:
    """Mark a comment thread as resolved.

    Args:
        comment_id: Id of the comment.
    """
    comment = require(state.comments, comment_id, "comment")
    _page(state, comment.page_id)
    if comment.resolved:
        raise Conflict(f"comment {comment_id!r} is already resolved")
    comment.resolved = True
    return comment


@service.write(op="append", entity="page", collection="pages", sets=("labels",))
def add_label(state: WikiState, page_id: PageId, label: Tag) -> WikiPage:
    """Put a label on a page.

    Args:
        page_id: Id of the page.
        label: Label to add.
    """
    page = _current(state, page_id, "labelled")
    if label in page.labels:
        raise Conflict(f"page {page_id!r} already has label {label!r}")
    page.labels.append(label)
    return page


@service.write(op="remove", entity="page", collection="pages", sets=("labels",))
def remove_label(state: WikiState, page_id: PageId, label: Tag) -> WikiPage:
    """Take a label off a page.

    Args:
        page_id: Id of the page.
        label: Label to remove.
    """
    page = _current(state, page_id, "labelled")
    if label not in page.labels:
        raise BadRequest(f"argument 'label': page {page_id!r} has no label {label!r}")
    page.labels.remove(label)
    return page


@service.write(op="update", entity="page", collection="pages", sets=("space_key", "parent_id"))
def move_page(
    state: WikiState, page_id: PageId, space_key: SpaceKey | None = None, parent_id: PageId | None = None
) -> WikiPage:
    """Move a page (with its subtree) under another parent and/or into another space.

    Args:
        page_id: Id of the page to move.
        space_key: Destination space; defaults to the parent's space, or the page's own space.
        parent_id: New parent page; omit to move the page to the top of the destination space.
    """
    page = _current(state, page_id, "moved")
    parent = _current(state, parent_id, "a parent") if parent_id is not None else None
    target = space_key or (parent.space_key if parent else page.space_key)
    _space(state, target)
    if parent is not None and parent.space_key != target:
        raise BadRequest(f"argument 'parent_id': page {parent_id!r} is not in space {target!r}")
    subtree = _descendants(state, page_id)
    if parent_id == page_id or parent_id in [p.id for p in subtree]:
        raise Conflict(f"page {page_id!r} cannot move under itself or its own descendant {parent_id!r}")
    if (target, parent_id) == (page.space_key, page.parent_id):
        raise Conflict(f"page {page_id!r} is already there")
    for moving in [page, *subtree]:
        if target != page.space_key:
            _title_free(state, target, moving.title)
    now = state.tick()
    for moving in [page, *subtree]:
        moving.space_key, moving.updated_at = target, now
    page.parent_id = parent_id
    return page


@service.write(op="transition", entity="page", collection="pages", sets=("status",))
def archive_page(state: WikiState, page_id: PageId, include_children: Flag = False) -> WikiPage:
    """Archive a page; with ``include_children`` its whole subtree is archived too.

    Args:
        page_id: Id of the page.
        include_children: Also archive the page's descendants (required when it has current children).
    """
    page = _page(state, page_id)
    if page.status == "archived":
        raise Conflict(f"page {page_id!r} is already archived")
    live = [p for p in _descendants(state, page_id) if p.status == "current"]
    if live and not include_children:
        raise Conflict(f"page {page_id!r} has current child pages {[p.id for p in live][:5]!r}; pass include_children")
    now = state.tick()
    for target in [page, *live]:
        target.status, target.updated_at = "archived", now
    return page


@service.write(op="transition", entity="page", collection="pages", sets=("status",))
def restore_page(state: WikiState, page_id: PageId) -> WikiPage:
    """Bring an archived page back (its parent must be current).

    Args:
        page_id: Id of the page.
    """
    page = _page(state, page_id)
    if page.status != "archived":
        raise Conflict(f"page {page_id!r} is not archived")
    parent = state.pages.get(page.parent_id or "")
    if parent is not None and parent.status == "archived":
        raise Conflict(f"the parent {parent.id!r} of page {page_id!r} is archived; restore it first")
    _title_free(state, page.space_key, page.title)
    page.status, page.updated_at = "current", state.tick()
    return page
