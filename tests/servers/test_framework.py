"""The service framework: envelopes, argument validation, snapshots, hashes and diffs."""

from __future__ import annotations

import json

from servers.framework import parse_docstring
from servers.native.email import service as email
from servers.state import diff, stable_hash


def test_same_seed_gives_same_hash_and_other_seed_differs() -> None:
    assert email.state_hash(email.seed_state(3)) == email.state_hash(email.seed_state(3))
    assert email.state_hash(email.seed_state(3)) != email.state_hash(email.seed_state(4))


def test_hash_ignores_key_order() -> None:
    assert stable_hash({"a": 1, "b": [1, 2]}) == stable_hash({"b": [1, 2], "a": 1})


def test_snapshot_restore_round_trips_through_json() -> None:
    state = email.seed_state(1)
    email.call(state, "send_message", {"to": ["a@b.co"], "subject": "s", "body": "b"})
    restored = email.restore(json.loads(json.dumps(email.snapshot(state))))
    assert email.state_hash(restored) == email.state_hash(state)


def test_diff_lists_path_level_changes() -> None:
    before = email.seed_state(1)
    after = email.restore(email.snapshot(before))
    message_id = next(iter(after.messages))
    email.call(after, "add_label", {"message_id": message_id, "label": "urgent"})
    changes = email.diff(before, after)
    assert [c.path for c in changes] == [f"/messages/{message_id}/labels"]
    assert changes[0].op == "change" and "urgent" in changes[0].after


def test_diff_reports_added_and_removed_keys() -> None:
    changes = diff({"a": 1, "b": {"x/y": 2}}, {"b": {}, "c": 3})
    assert [(c.op, c.path) for c in changes] == [("remove", "/a"), ("remove", "/b/x~1y"), ("add", "/c")]


def test_unknown_tool_is_a_404_envelope() -> None:
    envelope = email.call(email.seed_state(0), "launch_rocket", {})
    assert envelope["success"] is False
    assert envelope["error"]["code"] == 404
    assert "'launch_rocket'" in envelope["error"]["message"]


def test_unknown_argument_is_named_in_a_400() -> None:
    envelope = email.call(email.seed_state(0), "list_messages", {"colour": "red"})
    assert envelope["error"] == {
        "code": 400,
        "message": "invalid arguments for 'list_messages': unknown argument 'colour'",
    }


def test_missing_argument_is_named_in_a_400() -> None:
    envelope = email.call(email.seed_state(0), "get_message", {})
    assert envelope["error"]["code"] == 400
    assert "missing required argument 'message_id'" in envelope["error"]["message"]


def test_non_object_arguments_are_a_400() -> None:
    envelope = email.call(email.seed_state(0), "list_messages", ["x"])
    assert envelope["error"]["code"] == 400


def test_error_leaves_state_unchanged() -> None:
    state = email.seed_state(0)
    before = email.state_hash(state)
    envelope = email.call(state, "delete_message", {"message_id": next(iter(state.messages))})
    assert envelope["error"]["code"] == 409
    assert email.state_hash(state) == before


def test_tool_schemas_carry_semantic_types_and_descriptions() -> None:
    schema = email.tools["send_message"].input_schema
    assert schema["properties"]["to"]["items"]["x-semantic-type"] == "email_address"
    assert schema["properties"]["subject"]["description"] == "Subject line."
    assert schema["additionalProperties"] is False
    assert email.tools["send_message"].kind == "write"
    assert email.tools["get_message"].kind == "read"


def test_docstring_parser_reads_google_style_args() -> None:
    description, params = parse_docstring(
        """Do a thing.

        More detail.

        Args:
            first: The first
                argument, wrapped.
            second (int): The second.

        Returns:
            Something.
        """
    )
    assert description == "Do a thing.\n\nMore detail."
    assert params == {"first": "The first argument, wrapped.", "second": "The second."}
