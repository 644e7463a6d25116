"""Files: the user's cloud drive — folders, documents, sharing, versions, trash and search.

Tools: list_files, search_files, get_file, list_folders, create_folder, create_file,
update_file_content, rename_file, move_file, copy_file, share_file, unshare_file,
list_versions, restore_version, trash_file, restore_file, delete_file_permanently.
State: folders, files and file versions by id; the acting user's address and the
organisation's email domain.
Seed: about 55 files for the population's user ("me") in ten folders: vendor and customer
invoices quoting INV-/PO- references and amounts, contracts owned by Legal (confidential),
customer proposals owned by Sales and shared with the user, weekly meeting notes, a product
catalogue with SKUs, near-duplicate copies ("(1)", "old", same name in Archive), trashed
files, files with several versions and colleagues' private files the user cannot open.
Rules: the user sees only files they own or that are shared with them (others → 403); only
the owner or an editor may change content, rename, move or share (viewer → 403); only the
owner may trash, restore, delete or unshare; names are unique among live files of a folder
(409); trashed files cannot be edited (409) and only trashed files can be deleted for good
(409); confidential files cannot be shared outside the organisation's domain (403); an edit
that names a stale base version is a conflict (409).
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
from servers.population import Population
from servers.roles import ROLE_KEY
from servers.types import (
    DateTime,
    DocumentText,
    EmailAddress,
    FileName,
    Flag,
    Limit,
    MimeType,
    Note,
    Offset,
    Query,
    ident,
    sem,
)

FileId = Annotated[str, ident("files", "file")]
FolderId = Annotated[str, ident("files", "folder")]
VersionId = Annotated[str, ident("files", "version")]
FolderName = Annotated[str, sem("files.folder_name", "Name of a folder in the drive.", min_length=1, max_length=255)]
Role = Annotated[Literal["viewer", "editor"], sem("files.role", "Access role granted to a person on a shared file.")]
Classification = Annotated[
    Literal["public", "internal", "confidential"],
    sem("files.classification", "Sensitivity label of a file; confidential files stay inside the organisation."),
]
SizeBytes = Annotated[int, sem("files.size_bytes", "Size of a file's content in bytes.", ge=0)]
VersionNumber = Annotated[int, sem("files.version_number", "Version number of a file, starting at 1.", ge=1)]

MIME = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "md": "text/markdown",
    "csv": "text/csv",
}
ROLES = ("viewer", "editor")


class Share(Record):
    email: EmailAddress = Field(
        description="Address of the person the file is shared with.", json_schema_extra={ROLE_KEY: "member"}
    )
    role: Role


class Folder(Record):
    id: FolderId
    name: FolderName
    parent_id: FolderId | None = Field(description="Id of the parent folder, or null at the drive root.")
    owner: EmailAddress = Field(description="Address of the folder's owner.", json_schema_extra={ROLE_KEY: "owner"})
    created_at: DateTime


class FileSummary(Record):
    id: FileId
    name: FileName
    mime_type: MimeType
    folder_id: FolderId | None = Field(description="Id of the containing folder, or null at the drive root.")
    owner: EmailAddress = Field(description="Address of the file's owner.", json_schema_extra={ROLE_KEY: "owner"})
    shared_with: list[Share] = Field(default_factory=list, description="People the file is shared with.")
    classification: Classification = "internal"
    size_bytes: SizeBytes = 0
    version: VersionNumber = Field(default=1, description="Current version number.")
    trashed: Flag = Field(default=False, description="Whether the file is in the trash.")
    created_at: DateTime
    modified_at: DateTime
    modified_by: EmailAddress = Field(description="Address of the person who last changed the content.")


class File(FileSummary):
    content: DocumentText = Field(default="", description="Text content of the file.")


class FileVersion(Record):
    id: VersionId
    file_id: FileId
    version: VersionNumber
    content: DocumentText = Field(description="Content of the file at this version.")
    size_bytes: SizeBytes
    modified_by: EmailAddress = Field(description="Address of the person who saved this version.")
    modified_at: DateTime
    note: Note = Field(default="", description="Comment saved with the version.")


class Deleted(Record):
    id: FileId = Field(description="Id of the deleted file.")
    deleted: Flag = Field(description="Always true.")


class FilesState(ServiceState):
    me: str = ""
    domain: str = ""
    folders: dict[str, Folder] = Field(default_factory=dict)
    files: dict[str, File] = Field(default_factory=dict)
    versions: dict[str, FileVersion] = Field(default_factory=dict)


def _save_version(state: FilesState, file: File, content: str, who: str, when: dt.datetime, note: str) -> File:
    """Record ``content`` as a new version of ``file`` and make it current (a new file starts at 1)."""
    number = file.version + 1 if file.id in state.files else 1
    size = len(content.encode())
    version = FileVersion(
        id=state.new_id("ver"),
        file_id=file.id,
        version=number,
        content=content,
        size_bytes=size,
        modified_by=who,
        modified_at=when,
        note=note,
    )
    state.versions[version.id] = version
    file.content, file.size_bytes, file.version = content, size, number
    file.modified_at, file.modified_by = when, who
    state.files[file.id] = file
    return file


def _new_file(state: FilesState, name: str, mime: str, where: str | None, who: str, when: dt.datetime) -> File:
    return File(
        id=state.new_id("file"),
        name=name,
        mime_type=mime,
        folder_id=where,
        owner=who,
        created_at=when,
        modified_at=when,
        modified_by=who,
    )


def seed(rng: random.Random, world: Population) -> FilesState:
    me, org = world.me.email, world.org.name
    state = FilesState(me=me, domain=world.org.domain, clock=world.now)
    staff = {d: [p.email for p in world.employees if p.department == d] for d in ("Sales", "Legal", "People")}
    finance = [p.email for p in world.employees if p.department == "Finance"]
    others = [p for p in world.employees if p.email != me]
    folders: dict[str, str] = {}
    tree = [("Finance", ""), ("Operations", ""), ("Projects", ""), ("Archive", ""), ("Invoices", "Finance")]
    tree += [("Vendors", "Operations"), ("Meeting notes", "Operations"), ("Contracts", "Legal")]
    tree += [("HR", "People"), ("Proposals", "Sales")]
    for name, parent in tree:  # a parent that is a department means a root folder owned by its head
        owner = staff[parent][0] if parent in staff else me
        when = world.now - dt.timedelta(days=400 + len(folders))
        made = Folder(id=state.new_id("fld"), name=name, parent_id=folders.get(parent), owner=owner, created_at=when)
        state.folders[made.id] = made
        folders[name] = made.id

    def add(name: str, text: str, where: str | None, days: float, owner: str = me, **kw: object) -> None:
        edits: list[tuple[str, str]] = kw.pop("edits", [])  # type: ignore[assignment]
        shares: dict[str, str] = kw.pop("shares", {})  # type: ignore[assignment]
        when = world.now - dt.timedelta(minutes=int((days + 5 * len(edits)) * 1440) + rng.randint(0, 600))
        file = _new_file(state, name, MIME[name.rsplit(".", 1)[1]], folders.get(where or ""), owner, when)
        file.classification = kw.pop("label", "internal")  # type: ignore[assignment]
        file.trashed = bool(kw.pop("trashed", False))
        file.shared_with = [Share(email=e, role=r) for e, r in shares.items()]
        _save_version(state, file, text, owner, when, "Upload")
        for index, (editor, new_text) in enumerate(edits, start=1):
            _save_version(state, file, new_text, editor, when + dt.timedelta(days=4 * index), "")

    for company in [c for c in world.companies if c.relation in ("vendor", "customer")][:8]:
        for _ in range(rng.randint(1, 2)):
            ref, po = f"INV-{rng.randint(1000, 9999)}", f"PO-{rng.randint(10000, 99999)}"
            body = (
                f"Invoice {ref}\nFrom: {company.name}, {company.address}, {company.city}\n"
                f"Bill to: {org}\nPurchase order: {po}\n"
                f"Amount due: {rng.uniform(400, 12000):.2f} {company.currency}\nPayment terms: net 30\n"
            )
            name = f"{ref} {company.name}.pdf"
            add(name, body, "Invoices", rng.uniform(2, 60), shares={finance[1]: "editor"})
            if rng.random() < 0.3:  # the same invoice saved twice
                add(name.replace(".pdf", " (1).pdf"), body, "Invoices", rng.uniform(1, 2))
    for company in [c for c in world.companies if c.relation in ("vendor", "partner")]:
        contact = world.contacts_of(company.id)[0]
        body = (
            f"Master Services Agreement between {org} and {company.name}.\nTerm: 24 months.\n"
            f"Annual cap: {rng.randint(20, 200) * 1000} {company.currency}.\n"
            f"Supplier contact: {contact.name} <{contact.email}>.\nConfidential: do not forward."
        )
        edits = [(staff["Legal"][1], body + "\nRedlined: liability cap under review.")]
        name, share = f"Master Services Agreement - {company.name}.docx", {me: rng.choice(ROLES)}
        add(name, body, "Contracts", 90, staff["Legal"][0], shares=share, label="confidential", edits=edits)
        profile = (
            f"# {company.name}\nIndustry: {company.industry}\nPhone: {company.phone}\n"
            f"Domain: {company.domain}\nMain contact: {contact.name} ({contact.title}), {contact.email}\n"
        )
        add(f"{company.name} vendor profile.md", profile, "Vendors", rng.uniform(5, 90))
    for company in [c for c in world.companies if c.relation in ("customer", "prospect")]:
        seller, product, qty = rng.choice(staff["Sales"]), rng.choice(world.products), rng.randint(5, 60)
        body = (
            f"Proposal for {company.name}\nPrepared by {seller}\n{qty} x {product.name} ({product.sku}) "
            f"at {product.unit_price:.2f} USD = {qty * product.unit_price:.2f} USD\nValid for 30 days."
        )
        edits = [(seller, body + "\nRevised: 5% volume discount.")] if rng.random() < 0.5 else []
        name, share = f"Proposal - {company.name}.docx", {me: rng.choice(ROLES)}
        add(name, body, "Proposals", rng.uniform(3, 40), seller, shares=share, edits=edits)
    for week in range(8):
        day, people = world.now - dt.timedelta(days=7 * week + 7), rng.sample(others, 3)
        topic = rng.choice(("Office move", "Supplier review", "Laptop refresh", "Budget check"))
        body = (
            f"# Weekly ops sync {day:%Y-%m-%d}\nAttendees: {', '.join(p.email for p in people)}\n"
            f"- {topic}: on track\n- Action: {people[0].name} to follow up by Friday\n"
        )
        name, share = f"Weekly ops sync {day:%Y-%m-%d}.md", {people[0].email: "viewer"}
        add(name, body, "Meeting notes", 7 * week + 7, shares=share)
    catalogue = "sku,name,unit_price,currency,category\n" + "".join(
        f"{p.sku},{p.name},{p.unit_price:.2f},{p.currency},{p.category}\n" for p in world.products
    )
    add("Product catalogue 2026.csv", catalogue, "Operations", 20, label="public")
    add("Product catalogue 2025.csv", catalogue.replace(".", ",", 3), "Archive", 380, label="public")
    plan = "Q1 plan\n1. Renew vendor contracts\n2. Replace label printers\n3. Hire two analysts\n"
    add("Q1 plan.docx", plan, "Projects", 30, edits=[(others[0].email, plan + "4. Office move\n")])
    add("Q1 plan.docx", plan.replace("Q1", "Q1 (2025)"), "Archive", 400)
    budget = "Operating budget FY2026: travel capped at {} USD."
    add("FY2026 budget notes.docx", budget.format(20000), "Finance", 45, shares={finance[0]: "editor"})
    add("FY2026 budget notes (old).docx", budget.format(25000), "Finance", 90)
    hr_head = staff["People"][0]
    add("Onboarding checklist.docx", "1. Laptop\n2. Badge\n3. Accounts", "HR", 120, hr_head, shares={me: "viewer"})
    bands = "Band,Min,Max\nL1,60000,80000\nL2,80000,105000"
    add("Salary bands 2026.csv", bands, "HR", 60, hr_head, label="confidential")
    for person in rng.sample(others, 4):  # colleagues' private files the user cannot open
        add(f"{person.first_name} personal notes.md", "Private scratch notes.", None, 9, person.email)
    for name in ("Old office floor plan.pdf", "Draft - vendor scorecard.docx", "Untitled document.docx"):
        add(name, "Superseded.", "Projects", rng.uniform(20, 200), trashed=True)
    return state


service = Service(
    "files",
    version=1,
    category="productivity",
    description="The user's cloud drive: folders, documents, sharing, versions, trash and full-text search.",
    modelled_on="Google Drive API (files, permissions, revisions) / Dropbox",
    state=FilesState,
    seed=seed,
    system_fields=("created_at", "modified_at", "modified_by", "version", "size_bytes"),
)


def _role(state: FilesState, file: File) -> str | None:
    if file.owner.lower() == state.me.lower():
        return "owner"
    return next((s.role for s in file.shared_with if s.email.lower() == state.me.lower()), None)


def _visible(state: FilesState, file_id: str) -> File:
    file = require(state.files, file_id, "file")
    if _role(state, file) is None:
        raise Forbidden(f"file {file_id!r} is not shared with {state.me!r}")
    return file


def _editable(state: FilesState, file_id: str, action: str) -> File:
    file = _visible(state, file_id)
    if _role(state, file) == "viewer":
        raise Forbidden(f"cannot {action} file {file_id!r}: {state.me!r} is only a viewer")
    if file.trashed:
        raise Conflict(f"file {file_id!r} is in the trash; restore it first")
    return file


def _owned(state: FilesState, file_id: str, action: str) -> File:
    file = _visible(state, file_id)
    if _role(state, file) != "owner":
        raise Forbidden(f"only the owner {file.owner!r} can {action} file {file_id!r}")
    return file


def _check_folder(state: FilesState, folder_id: str | None) -> None:
    if folder_id is not None:
        require(state.folders, folder_id, "folder")


def _check_name_free(state: FilesState, name: str, folder_id: str | None, exclude: str | None = None) -> None:
    for other in state.files.values():
        if other.folder_id == folder_id and not other.trashed and other.id != exclude and other.name == name:
            raise Conflict(f"folder {folder_id!r} already contains a file named {name!r} ({other.id!r})")


def _summary(file: File) -> FileSummary:
    return FileSummary.model_validate(file.model_dump(exclude={"content"}))


@service.read(
    op="list",
    entity="file",
    collection="files",
    reads=("folder_id", "owner", "shared_with.email", "mime_type", "name", "trashed"),
)
def list_files(
    state: FilesState,
    folder_id: FolderId | None = None,
    owner: EmailAddress | None = None,
    shared_with: EmailAddress | None = None,
    mime_type: MimeType | None = None,
    name_query: Query | None = None,
    trashed: Flag = False,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[FileSummary]:
    """List the files the user can see (owned or shared with them), most recently modified first.

    Args:
        folder_id: Only files directly inside this folder.
        owner: Only files owned by this address.
        shared_with: Only files shared with this address.
        mime_type: Only files of this media type.
        name_query: Case-insensitive text to find in the file name.
        trashed: List the trash instead of live files.
        offset: Number of files to skip.
        limit: Maximum number of files to return.
    """
    rows = [
        f
        for f in state.files.values()
        if _role(state, f) is not None
        and f.trashed == trashed
        and (folder_id is None or f.folder_id == folder_id)
        and (owner is None or f.owner.lower() == owner.lower())
        and (shared_with is None or shared_with.lower() in [s.email.lower() for s in f.shared_with])
        and (mime_type is None or f.mime_type == mime_type)
        and contains(f.name, name_query)
    ]
    rows.sort(key=lambda f: (f.modified_at, f.id), reverse=True)
    return paginate([_summary(f) for f in rows], offset, limit)


@service.read(op="search", entity="file", collection="files", reads=("name", "content", "mime_type"))
def search_files(
    state: FilesState, query: Query, mime_type: MimeType | None = None, offset: Offset = 0, limit: Limit = 20
) -> Page[FileSummary]:
    """Full-text search over the names and contents of the user's live files.

    Args:
        query: Case-insensitive text to find in the file name or content.
        mime_type: Only files of this media type.
        offset: Number of files to skip.
        limit: Maximum number of files to return.
    """
    rows = [
        f
        for f in state.files.values()
        if _role(state, f) is not None
        and not f.trashed
        and (contains(f.name, query) or contains(f.content, query))
        and (mime_type is None or f.mime_type == mime_type)
    ]
    rows.sort(key=lambda f: (not contains(f.name, query), -f.modified_at.timestamp(), f.id))
    return paginate([_summary(f) for f in rows], offset, limit)


@service.read(op="get", entity="file", collection="files")
def get_file(state: FilesState, file_id: FileId) -> File:
    """Get one file with its content and sharing settings.

    Args:
        file_id: Id of the file.
    """
    return _visible(state, file_id)


@service.read(op="list", entity="folder", collection="folders", reads=("parent_id", "name"))
def list_folders(
    state: FilesState,
    parent_id: FolderId | None = None,
    name_query: Query | None = None,
    offset: Offset = 0,
    limit: Limit = 50,
) -> Page[Folder]:
    """List folders, by name; without a parent, every folder of the drive.

    Args:
        parent_id: Only folders directly inside this folder.
        name_query: Case-insensitive text to find in the folder name.
        offset: Number of folders to skip.
        limit: Maximum number of folders to return.
    """
    rows = [
        f
        for f in state.folders.values()
        if (parent_id is None or f.parent_id == parent_id) and contains(f.name, name_query)
    ]
    return paginate(sorted(rows, key=lambda f: (f.name.lower(), f.id)), offset, limit)


@service.write(op="create", entity="folder", collection="folders", sets=("name", "parent_id", "owner"))
def create_folder(state: FilesState, name: FolderName, parent_id: FolderId | None = None) -> Folder:
    """Create a folder, at the drive root or inside another folder.

    Args:
        name: Name of the new folder (unique within its parent).
        parent_id: Id of the parent folder; omit for the drive root.
    """
    _check_folder(state, parent_id)
    if any(f.parent_id == parent_id and f.name.lower() == name.lower() for f in state.folders.values()):
        raise Conflict(f"a folder named {name!r} already exists in {parent_id!r}")
    now = state.tick()
    made = Folder(id=state.new_id("fld"), name=name, parent_id=parent_id, owner=state.me, created_at=now)
    state.folders[made.id] = made
    return made


@service.write(
    op="create",
    entity="file",
    collection="files",
    sets=("name", "mime_type", "folder_id", "owner", "classification", "content"),
)
def create_file(
    state: FilesState,
    name: FileName,
    content: DocumentText,
    mime_type: MimeType = "text/plain",
    folder_id: FolderId | None = None,
    classification: Classification = "internal",
) -> File:
    """Create a file owned by the user.

    Args:
        name: File name including its extension (unique among live files of the folder).
        content: Text content of the file.
        mime_type: Media type of the file.
        folder_id: Id of the folder to create it in; omit for the drive root.
        classification: Sensitivity label of the file.
    """
    _check_folder(state, folder_id)
    _check_name_free(state, name, folder_id)
    file = _new_file(state, name, mime_type, folder_id, state.me, state.tick())
    file.classification = classification
    return _save_version(state, file, content, state.me, file.created_at, "Created")


@service.write(op="update", entity="file", collection="files", sets=("content",))
def update_file_content(
    state: FilesState,
    file_id: FileId,
    content: DocumentText,
    base_version: VersionNumber | None = None,
    note: Note = "",
) -> File:
    """Replace the content of a file, saving a new version.

    Args:
        file_id: Id of the file.
        content: New text content.
        base_version: Version the edit is based on; if the file has moved on since, the edit is refused.
        note: Comment saved with the new version.
    """
    file = _editable(state, file_id, "edit")
    if base_version is not None and base_version != file.version:
        raise Conflict(f"file {file_id!r} is at version {file.version}, not {base_version}; re-read it first")
    if content == file.content:
        raise Conflict(f"file {file_id!r} already has this content")
    return _save_version(state, file, content, state.me, state.tick(), note)


@service.write(op="update", entity="file", collection="files", sets=("name",))
def rename_file(state: FilesState, file_id: FileId, name: FileName) -> File:
    """Rename a file in place.

    Args:
        file_id: Id of the file.
        name: New file name (unique among live files of the folder).
    """
    file = _editable(state, file_id, "rename")
    _check_name_free(state, name, file.folder_id, exclude=file_id)
    file.name, file.modified_at = name, state.tick()
    return file


@service.write(op="update", entity="file", collection="files", sets=("folder_id",))
def move_file(state: FilesState, file_id: FileId, folder_id: FolderId | None = None) -> File:
    """Move a file into another folder.

    Args:
        file_id: Id of the file.
        folder_id: Id of the destination folder; omit for the drive root.
    """
    file = _editable(state, file_id, "move")
    _check_folder(state, folder_id)
    if file.folder_id == folder_id:
        raise Conflict(f"file {file_id!r} is already in folder {folder_id!r}")
    _check_name_free(state, file.name, folder_id)
    file.folder_id, file.modified_at = folder_id, state.tick()
    return file


@service.write(
    op="create",
    entity="file",
    collection="files",
    sets=("name", "mime_type", "folder_id", "owner", "classification", "content"),
)
def copy_file(
    state: FilesState, file_id: FileId, name: FileName | None = None, folder_id: FolderId | None = None
) -> File:
    """Copy a file the user can see into a new file owned by the user (not shared with anyone).

    Args:
        file_id: Id of the file to copy.
        name: Name of the copy; defaults to "Copy of <name>".
        folder_id: Folder of the copy; defaults to the original's folder.
    """
    original = _visible(state, file_id)
    if original.trashed:
        raise Conflict(f"file {file_id!r} is in the trash; restore it first")
    _check_folder(state, folder_id)
    target = folder_id if folder_id is not None else original.folder_id
    new_name = name or f"Copy of {original.name}"[:255]
    _check_name_free(state, new_name, target)
    return create_file(state, new_name, original.content, original.mime_type, target, original.classification)


@service.write(op="append", entity="file", collection="files", sets=("shared_with",))
def share_file(state: FilesState, file_id: FileId, email: EmailAddress, role: Role = "viewer") -> File:
    """Share a file with a person, or change the role they already have.

    Args:
        file_id: Id of the file.
        email: Address of the person to share with.
        role: Role to grant: viewer (read only) or editor.
    """
    file = _editable(state, file_id, "share")
    if email.lower() == file.owner.lower():
        raise Conflict(f"{email!r} already owns file {file_id!r}")
    current = next((s for s in file.shared_with if s.email.lower() == email.lower()), None)
    if current is not None and current.role == role:
        raise Conflict(f"file {file_id!r} is already shared with {email!r} as {role!r}")
    external = not email.lower().endswith("@" + state.domain.lower())
    if file.classification == "confidential" and external:
        raise Forbidden(f"file {file_id!r} is confidential and cannot be shared outside {state.domain!r}")
    file.shared_with = [s for s in file.shared_with if s is not current] + [Share(email=email, role=role)]
    file.modified_at = state.tick()
    return file


@service.write(op="remove", entity="file", collection="files", sets=("shared_with",))
def unshare_file(state: FilesState, file_id: FileId, email: EmailAddress) -> File:
    """Remove a person's access to a file (owner only).

    Args:
        file_id: Id of the file.
        email: Address of the person whose access is removed.
    """
    file = _owned(state, file_id, "unshare")
    if email.lower() not in [s.email.lower() for s in file.shared_with]:
        raise NotFound(f"file {file_id!r} is not shared with {email!r}")
    file.shared_with = [s for s in file.shared_with if s.email.lower() != email.lower()]
    file.modified_at = state.tick()
    return file


@service.read(op="list", entity="version", collection="versions", reads=("file_id",))
def list_versions(state: FilesState, file_id: FileId) -> list[FileVersion]:
    """List every saved version of a file, newest first.

    Args:
        file_id: Id of the file.
    """
    _visible(state, file_id)
    rows = [v for v in state.versions.values() if v.file_id == file_id]
    return sorted(rows, key=lambda v: v.version, reverse=True)


@service.write(op="update", entity="file", collection="files", sets=("content",))
def restore_version(state: FilesState, file_id: FileId, version_id: VersionId) -> File:
    """Make an earlier version's content current again (saved as a new version).

    Args:
        file_id: Id of the file.
        version_id: Id of the version to restore (from list_versions).
    """
    file = _editable(state, file_id, "restore a version of")
    version = require(state.versions, version_id, "version")
    if version.file_id != file_id:
        raise BadRequest(f"argument 'version_id': version {version_id!r} belongs to file {version.file_id!r}")
    if version.content == file.content:
        raise Conflict(f"file {file_id!r} already has the content of version {version.version}")
    note = f"Restored version {version.version}"
    return _save_version(state, file, version.content, state.me, state.tick(), note)


@service.write(op="transition", entity="file", collection="files", sets=("trashed",))
def trash_file(state: FilesState, file_id: FileId) -> File:
    """Move a file to the trash (owner only).

    Args:
        file_id: Id of the file.
    """
    file = _owned(state, file_id, "trash")
    if file.trashed:
        raise Conflict(f"file {file_id!r} is already in the trash")
    file.trashed, file.modified_at = True, state.tick()
    return file


@service.write(op="transition", entity="file", collection="files", sets=("trashed",))
def restore_file(state: FilesState, file_id: FileId) -> File:
    """Bring a file back from the trash into its folder (owner only).

    Args:
        file_id: Id of the file.
    """
    file = _owned(state, file_id, "restore")
    if not file.trashed:
        raise Conflict(f"file {file_id!r} is not in the trash")
    _check_name_free(state, file.name, file.folder_id)
    file.trashed, file.modified_at = False, state.tick()
    return file


@service.write(op="delete", entity="file", collection="files")
def delete_file_permanently(state: FilesState, file_id: FileId) -> Deleted:
    """Delete a trashed file and its versions for good (owner only; trash it first).

    Args:
        file_id: Id of the file.
    """
    file = _owned(state, file_id, "delete")
    if not file.trashed:
        raise Conflict(f"file {file_id!r} is not in the trash; trash it before deleting it for good")
    for version_id in [v.id for v in state.versions.values() if v.file_id == file_id]:
        del state.versions[version_id]
    del state.files[file_id]
    return Deleted(id=file_id, deleted=True)
