"""Directory: the company directory and shared contacts — people, managers, groups, duplicates.

Tools: search_people, get_person, lookup_person, list_direct_reports, get_management_chain,
create_contact, update_person, archive_contact, restore_contact, find_duplicates, merge_contacts,
set_favourite, list_groups, get_group, create_group, add_group_members, remove_group_member.
State: people (employees and external contacts) and groups by id; the address of the user.
Seed: every employee (title, department, manager) and the population's external contacts, plus
near-duplicate entries (the same person saved twice with a personal address, a phone-only copy,
a misspelt name, a colleague saved as a contact), look-alike people at different companies who are
not duplicates, archived stale contacts and favourites; about 20 groups: all-staff, department
teams, a look-alike ops team, security groups and customer account lists.
Rules: employee records are managed by HR — only their phone, city and notes can change here, and
they cannot be archived or merged away (403); archived or merged entries cannot change (409); an
active address belongs to one entry only (409); two entries can only be merged when they share an
email or phone, or have similar names at the same company (409); merging fills the primary's empty
fields, moves group memberships and leaves the duplicate as merged; only a group's owners may change
its members (403); security groups take employees only (403); group addresses are unique (409).
Version history: 1 — first version.
"""

from __future__ import annotations

from servers.framework import BadRequest, Conflict, Forbidden, NotFound, Page, Service, contains, paginate, require
from servers.types import (
    City,
    CompanyName,
    Department,
    EmailAddress,
    Flag,
    JobTitle,
    Limit,
    Note,
    Offset,
    PersonName,
    PhoneNumber,
    Query,
    Title,
)

from .models import (
    DirectoryState,
    DuplicatePair,
    Group,
    GroupId,
    GroupKind,
    Kind,
    Person,
    PersonId,
    duplicate_reason,
    name_similarity,
    same_text,
)
from .seed import seed

service = Service(
    "directory",
    version=1,
    category="productivity",
    description="Company directory and shared contacts: people, managers, groups and duplicate clean-up.",
    modelled_on="Google Workspace Directory & People APIs (users, groups, contacts)",
    state=DirectoryState,
    seed=seed,
    system_fields=("updated_at",),
)


def _active(state: DirectoryState, person_id: str) -> Person:
    person = require(state.people, person_id, "person")
    if person.status != "active":
        raise Conflict(f"person {person_id!r} is {person.status}")
    return person


def _by_email(state: DirectoryState, email: str, skip: str = "") -> Person | None:
    return next(
        (p for p in state.people.values() if p.status == "active" and p.id != skip and same_text(p.email, email)), None
    )


def _owned_group(state: DirectoryState, group_id: str) -> Group:
    group = require(state.groups, group_id, "group")
    if state.me.lower() not in [o.lower() for o in group.owners]:
        raise Forbidden(f"only the owners {group.owners!r} may change the members of group {group_id!r}")
    return group


def _members(state: DirectoryState, emails: list[str], security: bool) -> list[str]:
    for email in emails:
        person = _by_email(state, email)
        if person is None:
            raise NotFound(f"person with email {email!r} not found in the directory")
        if security and person.kind != "employee":
            raise Forbidden(f"{email!r} is not an employee; security groups take employees only")
    return list(dict.fromkeys(emails))


@service.read(
    op="search",
    entity="person",
    collection="people",
    reads=("name", "email", "phone", "title", "kind", "department", "company", "manager_email", "starred", "status"),
)
def search_people(
    state: DirectoryState,
    query: Query | None = None,
    kind: Kind | None = None,
    department: Department | None = None,
    company: CompanyName | None = None,
    manager_email: EmailAddress | None = None,
    starred_only: Flag = False,
    include_archived: Flag = False,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Person]:
    """Search the directory by name, email, phone or title, sorted by name.

    Args:
        query: Case-insensitive text to find in the name, email, phone or title.
        kind: Only employees or only external contacts.
        department: Only people of this department.
        company: Only people of this company.
        manager_email: Only people reporting to this manager.
        starred_only: Only favourites.
        include_archived: Also list archived and merged entries.
        offset: Number of entries to skip.
        limit: Maximum number of entries to return.
    """
    rows = [
        p
        for p in state.people.values()
        if (query is None or any(contains(v, query) for v in (p.name, p.email, p.phone, p.title)))
        and (kind is None or p.kind == kind)
        and (department is None or same_text(p.department, department))
        and (company is None or same_text(p.company, company))
        and (manager_email is None or same_text(p.manager_email, manager_email))
        and (p.starred or not starred_only)
        and (include_archived or p.status == "active")
    ]
    return paginate(sorted(rows, key=lambda p: (p.name.lower(), p.id)), offset, limit)


@service.read(op="get", entity="person", collection="people")
def get_person(state: DirectoryState, person_id: PersonId) -> Person:
    """Get one directory entry.

    Args:
        person_id: Id of the entry.
    """
    return require(state.people, person_id, "person")


@service.read(op="list", entity="person", collection="people", reads=("email", "phone", "status"))
def lookup_person(
    state: DirectoryState, email: EmailAddress | None = None, phone: PhoneNumber | None = None
) -> list[Person]:
    """Find the active entries with exactly this email address or phone number (employees first).

    Args:
        email: Email address to look up.
        phone: Phone number to look up.
    """
    if email is None and phone is None:
        raise BadRequest("argument 'email': give an email or a phone number")
    rows = [
        p
        for p in state.people.values()
        if p.status == "active" and (email is None or same_text(p.email, email)) and (phone is None or p.phone == phone)
    ]
    return sorted(rows, key=lambda p: (p.kind != "employee", p.id))


@service.read(op="list", entity="person", collection="people", reads=("manager_email", "status"))
def list_direct_reports(state: DirectoryState, manager_email: EmailAddress) -> list[Person]:
    """List the employees who report directly to a manager.

    Args:
        manager_email: Email address of the manager (an employee).
    """
    manager = _by_email(state, manager_email)
    if manager is None or manager.kind != "employee":
        raise NotFound(f"employee with email {manager_email!r} not found")
    rows = [p for p in state.people.values() if p.status == "active" and same_text(p.manager_email, manager_email)]
    return sorted(rows, key=lambda p: (p.name, p.id))


@service.read(op="lookup", entity="person", collection="people", reads=("manager_email", "email"))
def get_management_chain(state: DirectoryState, person_id: PersonId) -> list[Person]:
    """List a person's manager, that manager's manager and so on up to the top.

    Args:
        person_id: Id of an employee entry.
    """
    person = require(state.people, person_id, "person")
    chain: list[Person] = []
    while person.manager_email and len(chain) < 20:
        manager = _by_email(state, person.manager_email)
        if manager is None or manager in chain:
            break
        chain.append(manager)
        person = manager
    return chain


@service.write(
    op="create",
    entity="person",
    collection="people",
    sets=("kind", "name", "email", "phone", "title", "company", "city", "notes"),
)
def create_contact(
    state: DirectoryState,
    name: PersonName,
    company: CompanyName,
    email: EmailAddress | None = None,
    phone: PhoneNumber | None = None,
    title: JobTitle | None = None,
    city: City | None = None,
    notes: Note = "",
) -> Person:
    """Add an external contact; it needs an email or a phone, and the email must be new.

    Args:
        name: Full name.
        company: Company the person works for.
        email: Work email address.
        phone: Phone number.
        title: Job title.
        city: City.
        notes: Free-form notes.
    """
    if email is None and phone is None:
        raise BadRequest("argument 'email': a contact needs an email or a phone number")
    clash = _by_email(state, email) if email else None
    if clash is not None:
        raise Conflict(f"email {email!r} already belongs to person {clash.id!r} ({clash.name})")
    person = Person(
        id=state.new_id("per"),
        kind="external",
        name=name,
        email=email,
        phone=phone,
        title=title,
        company=company,
        city=city,
        notes=notes,
        updated_at=state.tick(),
    )
    state.people[person.id] = person
    return person


@service.write(
    op="update",
    entity="person",
    collection="people",
    sets=("name", "email", "phone", "title", "company", "city", "notes"),
)
def update_person(
    state: DirectoryState,
    person_id: PersonId,
    name: PersonName | None = None,
    email: EmailAddress | None = None,
    phone: PhoneNumber | None = None,
    title: JobTitle | None = None,
    company: CompanyName | None = None,
    city: City | None = None,
    notes: Note | None = None,
) -> Person:
    """Change an entry; omitted fields stay as they are (employees: phone, city and notes only).

    Args:
        person_id: Id of the entry.
        name: New full name.
        email: New email address.
        phone: New phone number.
        title: New job title.
        company: New company.
        city: New city.
        notes: New notes (replace the old ones).
    """
    person = _active(state, person_id)
    hr_fields = {"name": name, "email": email, "title": title, "company": company}
    if person.kind == "employee" and any(v is not None for v in hr_fields.values()):
        changed = sorted(k for k, v in hr_fields.items() if v is not None)
        raise Forbidden(f"employee {person_id!r} is managed by HR; {changed} cannot be changed here")
    clash = _by_email(state, email, skip=person_id) if email else None
    if clash is not None:
        raise Conflict(f"email {email!r} already belongs to person {clash.id!r} ({clash.name})")
    for key, value in {**hr_fields, "phone": phone, "city": city, "notes": notes}.items():
        if value is not None:
            setattr(person, key, value)
    person.updated_at = state.tick()
    return person


@service.write(op="transition", entity="person", collection="people", sets=("status",))
def archive_contact(state: DirectoryState, person_id: PersonId) -> Person:
    """Archive a stale external contact; it leaves every group it belonged to.

    Args:
        person_id: Id of the external contact.
    """
    person = require(state.people, person_id, "person")
    if person.kind == "employee":
        raise Forbidden(f"person {person_id!r} is an employee; employees leave the directory through HR")
    person = _active(state, person_id)
    for group in state.groups.values():
        group.members = [m for m in group.members if not same_text(m, person.email)]
    person.status = "archived"
    person.updated_at = state.tick()
    return person


@service.write(op="transition", entity="person", collection="people", sets=("status",))
def restore_contact(state: DirectoryState, person_id: PersonId) -> Person:
    """Bring an archived contact back (not a merged one).

    Args:
        person_id: Id of the archived contact.
    """
    person = require(state.people, person_id, "person")
    if person.status != "archived":
        raise Conflict(f"person {person_id!r} is {person.status}, not archived")
    clash = _by_email(state, person.email) if person.email else None
    if clash is not None:
        raise Conflict(f"email {person.email!r} now belongs to person {clash.id!r}; merge instead")
    person.status = "active"
    person.updated_at = state.tick()
    return person


@service.read(op="lookup", entity="person", collection="people", reads=("email", "phone", "name", "company", "status"))
def find_duplicates(state: DirectoryState, person_id: PersonId | None = None) -> list[DuplicatePair]:
    """Find pairs of active entries that look like the same person (same email or phone, or similar name
    at the same company).

    Args:
        person_id: Only pairs involving this entry.
    """
    if person_id is not None:
        require(state.people, person_id, "person")
    people = sorted(
        (p for p in state.people.values() if p.status == "active"), key=lambda p: (p.kind != "employee", p.id)
    )
    pairs = []
    for index, first in enumerate(people):
        for second in people[index + 1 :]:
            if person_id not in (None, first.id, second.id) or second.kind == "employee":
                continue
            reason = duplicate_reason(first, second)
            if reason:
                pairs.append(
                    DuplicatePair(
                        person_id=first.id,
                        duplicate_id=second.id,
                        reason=reason,
                        similarity=name_similarity(first, second),
                    )
                )
    return pairs


@service.write(
    op="action",
    entity="person",
    collection="people",
    sets=("email", "phone", "title", "city", "notes", "starred", "status", "merged_into"),
)
def merge_contacts(state: DirectoryState, primary_id: PersonId, duplicate_id: PersonId) -> Person:
    """Merge a duplicate entry into the primary one: empty fields are filled, group memberships move,
    notes are kept, and the duplicate is marked merged.

    Args:
        primary_id: Id of the entry to keep.
        duplicate_id: Id of the duplicate to merge away (never an employee).
    """
    if primary_id == duplicate_id:
        raise BadRequest("argument 'duplicate_id': an entry cannot be merged into itself")
    primary, duplicate = _active(state, primary_id), _active(state, duplicate_id)
    if duplicate.kind == "employee":
        raise Forbidden(f"person {duplicate_id!r} is an employee; merge the contact into the employee instead")
    if duplicate_reason(primary, duplicate) is None:
        raise Conflict(f"persons {primary_id!r} and {duplicate_id!r} share no email or phone and differ in name")
    for key in ("email", "phone", "title", "city"):
        if getattr(primary, key) is None:
            setattr(primary, key, getattr(duplicate, key))
    primary.notes = "\n".join(n for n in (primary.notes, duplicate.notes) if n)[:5000]
    primary.starred = primary.starred or duplicate.starred
    for group in state.groups.values():
        swapped = [primary.email if same_text(m, duplicate.email) and primary.email else m for m in group.members]
        group.members = list(dict.fromkeys(swapped))
    now = state.tick()
    duplicate.status, duplicate.merged_into, duplicate.updated_at = "merged", primary_id, now
    primary.updated_at = now
    return primary


@service.write(op="update", entity="person", collection="people", sets=("starred",))
def set_favourite(state: DirectoryState, person_id: PersonId, starred: Flag = True) -> Person:
    """Star an entry as a favourite, or unstar it.

    Args:
        person_id: Id of the entry.
        starred: True to star, false to unstar.
    """
    person = _active(state, person_id)
    person.starred = starred
    person.updated_at = state.tick()
    return person


@service.read(op="list", entity="group", collection="groups", reads=("name", "email", "description", "members", "kind"))
def list_groups(
    state: DirectoryState,
    query: Query | None = None,
    member_email: EmailAddress | None = None,
    kind: GroupKind | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Group]:
    """List groups by name, with optional filters.

    Args:
        query: Case-insensitive text to find in the name, address or description.
        member_email: Only groups with this member.
        kind: Only groups of this kind.
        offset: Number of groups to skip.
        limit: Maximum number of groups to return.
    """
    rows = [
        g
        for g in state.groups.values()
        if (query is None or any(contains(v, query) for v in (g.name, g.email, g.description)))
        and (member_email is None or any(same_text(m, member_email) for m in g.members))
        and (kind is None or g.kind == kind)
    ]
    return paginate(sorted(rows, key=lambda g: (g.name.lower(), g.id)), offset, limit)


@service.read(op="get", entity="group", collection="groups")
def get_group(state: DirectoryState, group_id: GroupId) -> Group:
    """Get one group with its owners and members.

    Args:
        group_id: Id of the group.
    """
    return require(state.groups, group_id, "group")


@service.write(
    op="create", entity="group", collection="groups", sets=("name", "email", "kind", "description", "owners", "members")
)
def create_group(
    state: DirectoryState,
    name: Title,
    email: EmailAddress,
    kind: GroupKind = "mailing_list",
    description: Note = "",
    members: list[EmailAddress] | None = None,
) -> Group:
    """Create a group owned by the user.

    Args:
        name: Display name.
        email: Address of the group (not used by another group or person).
        kind: Kind of group.
        description: What the group is for.
        members: Addresses of directory entries to add.
    """
    taken = next((g for g in state.groups.values() if same_text(g.email, email)), None) or _by_email(state, email)
    if taken is not None:
        raise Conflict(f"address {email!r} is already used by {taken.id!r}")
    added = _members(state, members or [], kind == "security")
    group = Group(
        id=state.new_id("grp"),
        name=name,
        email=email,
        kind=kind,
        description=description,
        owners=[state.me],
        members=added,
    )
    state.tick()
    state.groups[group.id] = group
    return group


@service.write(op="append", entity="group", collection="groups", sets=("members",))
def add_group_members(state: DirectoryState, group_id: GroupId, emails: list[EmailAddress]) -> Group:
    """Add directory entries to a group the user owns.

    Args:
        group_id: Id of the group.
        emails: Addresses to add (not members yet).
    """
    group = _owned_group(state, group_id)
    if not emails:
        raise BadRequest("argument 'emails': at least one address is required")
    added = _members(state, emails, group.kind == "security")
    for email in added:
        if any(same_text(m, email) for m in group.members):
            raise Conflict(f"{email!r} is already a member of group {group_id!r}")
    group.members.extend(added)
    state.tick()
    return group


@service.write(op="remove", entity="group", collection="groups", sets=("members",))
def remove_group_member(state: DirectoryState, group_id: GroupId, email: EmailAddress) -> Group:
    """Remove a member from a group the user owns.

    Args:
        group_id: Id of the group.
        email: Address of the member to remove.
    """
    group = _owned_group(state, group_id)
    if not any(same_text(m, email) for m in group.members):
        raise NotFound(f"member {email!r} not found in group {group_id!r}")
    group.members = [m for m in group.members if not same_text(m, email)]
    state.tick()
    return group
