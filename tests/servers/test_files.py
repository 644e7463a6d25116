"""Behaviour of the files service, through its public tool interface."""

from __future__ import annotations

from typing import Any

import pytest

from servers.native.files import FilesState, service
from servers.population import Population

svc = service


@pytest.fixture
def state() -> FilesState:
    return svc.seed_state(7)


def call(state: FilesState, tool: str, **args: Any) -> dict[str, Any]:
    return svc.call(state, tool, args)


def find(state: FilesState, name: str) -> dict[str, Any]:
    """The first live file the user can see whose name contains ``name``."""
    env = call(state, "list_files", name_query=name, limit=200)
    assert env["success"] and env["data"]["items"], name
    return env["data"]["items"][0]


def with_role(state: FilesState, role: str) -> dict[str, Any]:
    env = call(state, "list_files", shared_with=state.me, limit=200)
    return next(f for f in env["data"]["items"] if any(s["role"] == role for s in f["shared_with"]))


def test_list_files_shows_only_files_the_user_can_see(state: FilesState) -> None:
    env = call(state, "list_files", limit=200)
    assert env["success"]
    for item in env["data"]["items"]:
        assert item["owner"] == state.me or state.me in [s["email"] for s in item["shared_with"]]
        assert not item["trashed"]
        assert "content" not in item


def test_list_files_paginates(state: FilesState) -> None:
    first = call(state, "list_files", limit=5)["data"]
    second = call(state, "list_files", offset=5, limit=5)["data"]
    assert len(first["items"]) == 5 and first["next_offset"] == 5
    assert {f["id"] for f in first["items"]}.isdisjoint(f["id"] for f in second["items"])
    assert first["total"] == second["total"] > 10


def test_list_files_filters_by_folder(state: FilesState) -> None:
    folders = call(state, "list_folders", name_query="Invoices")["data"]["items"]
    env = call(state, "list_files", folder_id=folders[0]["id"], limit=200)
    assert env["data"]["total"] > 0
    assert all(f["folder_id"] == folders[0]["id"] and f["name"].startswith("INV-") for f in env["data"]["items"])


def test_list_files_trashed_lists_the_trash(state: FilesState) -> None:
    items = call(state, "list_files", trashed=True)["data"]["items"]
    assert items and all(f["trashed"] for f in items)


def test_search_files_matches_content(state: FilesState) -> None:
    invoice = call(state, "get_file", file_id=find(state, "INV-")["id"])["data"]
    po = next(w for w in invoice["content"].split() if w.startswith("PO-"))
    hits = call(state, "search_files", query=po)["data"]["items"]
    assert invoice["id"] in [h["id"] for h in hits]


def test_get_file_returns_content_and_versions(state: FilesState) -> None:
    file = call(state, "get_file", file_id=find(state, "Q1 plan")["id"])["data"]
    assert "Renew vendor contracts" in file["content"]
    versions = call(state, "list_versions", file_id=file["id"])["data"]
    assert [v["version"] for v in versions] == list(range(file["version"], 0, -1))


def test_get_unknown_file_is_404_quoting_the_id(state: FilesState) -> None:
    env = call(state, "get_file", file_id="file_9999")
    assert env["error"]["code"] == 404 and "'file_9999'" in env["error"]["message"]


def test_get_private_file_of_a_colleague_is_403(state: FilesState) -> None:
    private = next(f for f in state.files.values() if f.owner != state.me and not f.shared_with)
    env = call(state, "get_file", file_id=private.id)
    assert env["error"]["code"] == 403 and repr(private.id) in env["error"]["message"]


def test_create_file_in_folder(state: FilesState) -> None:
    folder = call(state, "create_folder", name="Offsite 2026")["data"]
    env = call(state, "create_file", name="agenda.md", content="# Day 1", folder_id=folder["id"])
    assert env["success"] and env["data"]["owner"] == state.me and env["data"]["version"] == 1
    assert call(state, "list_files", folder_id=folder["id"])["data"]["total"] == 1


def test_create_file_with_taken_name_is_409(state: FilesState) -> None:
    existing = find(state, "Product catalogue 2026")
    env = call(state, "create_file", name=existing["name"], content="x", folder_id=existing["folder_id"])
    assert env["error"]["code"] == 409


def test_create_file_with_bad_mime_type_is_400_naming_the_field(state: FilesState) -> None:
    env = call(state, "create_file", name="a.txt", content="x", mime_type="not a mime")
    assert env["error"]["code"] == 400 and "mime_type" in env["error"]["message"]


def test_update_file_content_saves_a_new_version(state: FilesState) -> None:
    file = find(state, "FY2026 budget notes.docx")
    env = call(state, "update_file_content", file_id=file["id"], content="Travel capped at 18000 USD.", base_version=1)
    assert env["success"] and env["data"]["version"] == 2 and env["data"]["modified_by"] == state.me
    assert len(call(state, "list_versions", file_id=file["id"])["data"]) == 2


def test_update_with_stale_base_version_is_409(state: FilesState) -> None:
    file = find(state, "Q1 plan")
    env = call(state, "update_file_content", file_id=file["id"], content="new", base_version=1)
    assert file["version"] == 2 and env["error"]["code"] == 409


def test_viewer_cannot_edit_a_file(state: FilesState) -> None:
    file = with_role(state, "viewer")
    env = call(state, "update_file_content", file_id=file["id"], content="changed")
    assert env["error"]["code"] == 403 and "viewer" in env["error"]["message"]


def test_editor_can_rename_but_not_trash(state: FilesState) -> None:
    file = with_role(state, "editor")
    assert call(state, "rename_file", file_id=file["id"], name="Renamed proposal.docx")["success"]
    assert call(state, "trash_file", file_id=file["id"])["error"]["code"] == 403


def test_rename_to_a_taken_name_is_409(state: FilesState) -> None:
    one, two = call(state, "list_files", name_query="Weekly ops sync", limit=2)["data"]["items"]
    env = call(state, "rename_file", file_id=one["id"], name=two["name"])
    assert env["error"]["code"] == 409 and repr(two["name"]) in env["error"]["message"]


def test_move_file_to_another_folder(state: FilesState) -> None:
    archive = call(state, "list_folders", name_query="Archive")["data"]["items"][0]
    file = find(state, "FY2026 budget notes (old)")
    env = call(state, "move_file", file_id=file["id"], folder_id=archive["id"])
    assert env["success"] and env["data"]["folder_id"] == archive["id"]


def test_move_file_to_unknown_folder_is_404(state: FilesState) -> None:
    env = call(state, "move_file", file_id=find(state, "Q1 plan")["id"], folder_id="fld_9999")
    assert env["error"]["code"] == 404 and "'fld_9999'" in env["error"]["message"]


def test_copy_of_a_shared_file_belongs_to_the_user(state: FilesState) -> None:
    original = with_role(state, "viewer")
    copy = call(state, "copy_file", file_id=original["id"])["data"]
    assert copy["owner"] == state.me and copy["shared_with"] == [] and copy["name"].startswith("Copy of ")
    assert copy["content"] == call(state, "get_file", file_id=original["id"])["data"]["content"]


def test_share_file_then_change_the_role(state: FilesState) -> None:
    file = find(state, "Product catalogue 2026")
    colleague = Population.generate(7).employees[0].email
    assert call(state, "share_file", file_id=file["id"], email=colleague)["success"]
    env = call(state, "share_file", file_id=file["id"], email=colleague, role="editor")
    assert {"email": colleague, "role": "editor"} in env["data"]["shared_with"]
    assert len(env["data"]["shared_with"]) == 1


def test_sharing_twice_with_the_same_role_is_409(state: FilesState) -> None:
    file = find(state, "FY2026 budget notes.docx")
    share = file["shared_with"][0]
    assert call(state, "share_file", file_id=file["id"], **share)["error"]["code"] == 409


def test_confidential_file_cannot_be_shared_outside_the_organisation(state: FilesState) -> None:
    env = call(state, "create_file", name="secret.txt", content="s", classification="confidential")
    outsider = Population.generate(7).contacts[0].email
    denied = call(state, "share_file", file_id=env["data"]["id"], email=outsider)
    assert denied["error"]["code"] == 403 and "confidential" in denied["error"]["message"]


def test_only_the_owner_can_unshare(state: FilesState) -> None:
    file = with_role(state, "editor")
    env = call(state, "unshare_file", file_id=file["id"], email=state.me)
    assert env["error"]["code"] == 403


def test_unshare_someone_without_access_is_404(state: FilesState) -> None:
    file = find(state, "Product catalogue 2026")
    env = call(state, "unshare_file", file_id=file["id"], email="nobody@example.com")
    assert env["error"]["code"] == 404


def test_restore_version_brings_back_old_content(state: FilesState) -> None:
    file = find(state, "Q1 plan")
    oldest = call(state, "list_versions", file_id=file["id"])["data"][-1]
    env = call(state, "restore_version", file_id=file["id"], version_id=oldest["id"])
    assert env["success"] and env["data"]["content"] == oldest["content"] and env["data"]["version"] == 3


def test_restore_version_of_another_file_is_400(state: FilesState) -> None:
    file, other = find(state, "Q1 plan"), find(state, "Product catalogue 2026")
    version = call(state, "list_versions", file_id=other["id"])["data"][0]
    env = call(state, "restore_version", file_id=file["id"], version_id=version["id"])
    assert env["error"]["code"] == 400 and "version_id" in env["error"]["message"]


def test_trash_restore_and_delete_a_file(state: FilesState) -> None:
    file = find(state, "FY2026 budget notes (old)")
    assert call(state, "trash_file", file_id=file["id"])["data"]["trashed"]
    assert not call(state, "restore_file", file_id=file["id"])["data"]["trashed"]
    call(state, "trash_file", file_id=file["id"])
    assert call(state, "delete_file_permanently", file_id=file["id"])["data"] == {"id": file["id"], "deleted": True}
    assert call(state, "get_file", file_id=file["id"])["error"]["code"] == 404
    assert call(state, "list_versions", file_id=file["id"])["error"]["code"] == 404


def test_deleting_a_live_file_is_409(state: FilesState) -> None:
    env = call(state, "delete_file_permanently", file_id=find(state, "Q1 plan")["id"])
    assert env["error"]["code"] == 409 and "trash" in env["error"]["message"]


def test_trashed_file_cannot_be_edited(state: FilesState) -> None:
    trashed = call(state, "list_files", trashed=True)["data"]["items"][0]
    env = call(state, "update_file_content", file_id=trashed["id"], content="x")
    assert env["error"]["code"] == 409


def test_restore_into_a_taken_name_is_409(state: FilesState) -> None:
    file = find(state, "FY2026 budget notes (old)")
    call(state, "trash_file", file_id=file["id"])
    call(state, "create_file", name=file["name"], content="new", folder_id=file["folder_id"])
    assert call(state, "restore_file", file_id=file["id"])["error"]["code"] == 409


def test_errors_leave_the_state_unchanged(state: FilesState) -> None:
    before = svc.state_hash(state)
    file = with_role(state, "viewer")
    call(state, "rename_file", file_id=file["id"], name="nope.docx")
    call(state, "share_file", file_id="file_9999", email="a@b.com")
    call(state, "create_file", name="x.txt", content="x", folder_id="fld_9999")
    assert svc.state_hash(state) == before


def test_seed_is_deterministic() -> None:
    assert svc.state_hash(svc.seed_state(7)) == svc.state_hash(svc.seed_state(7))
    assert svc.state_hash(svc.seed_state(7)) != svc.state_hash(svc.seed_state(8))


def test_people_are_the_population_employees(state: FilesState) -> None:
    world = Population.generate(7)
    employees = {p.email for p in world.employees}
    assert state.me == world.me.email
    for file in state.files.values():
        assert file.owner in employees and file.modified_by in employees
        assert {s.email for s in file.shared_with} <= employees


def test_invoices_name_population_companies(state: FilesState) -> None:
    companies = {c.name for c in Population.generate(7).companies}
    invoices = call(state, "list_files", name_query="INV-", limit=200)["data"]["items"]
    assert invoices and all(any(name in f["name"] for name in companies) for f in invoices)
