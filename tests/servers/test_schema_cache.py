"""The disk cache of generated schemas: same schemas warm as cold, keyed by the code, never for outside code."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

from servers import schema_cache
from tests.servers.broken_service import service as broken_service

DUMP = """
import json
from servers import schema_cache
from servers.registry import load_services
out = {}
for service in load_services(["email", "crm", "audit"]).values():
    out[service.name] = {t.name: [t.input_schema, t.output_schema] for t in service.tools.values()}
    out[service.name + ":state"] = service.state_type.model_json_schema()
cache = schema_cache.shared()
print(json.dumps({"schemas": out, "added": 0 if cache is None else len(cache._added)}))
"""


def _dump(cache_dir: Path, *, enabled: bool = True) -> dict[str, object]:
    env = {**os.environ, "COMPOWORLD_CACHE_DIR": str(cache_dir)}
    env.pop("COMPOWORLD_NO_SCHEMA_CACHE", None)
    if not enabled:
        env["COMPOWORLD_NO_SCHEMA_CACHE"] = "1"
    done = subprocess.run([sys.executable, "-c", DUMP], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_a_warm_process_reads_the_schemas_a_cold_one_generated(tmp_path: Path) -> None:
    cold = _dump(tmp_path)
    assert cold["added"] and len(list(tmp_path.glob("schemas-*.marshal"))) == 1
    warm = _dump(tmp_path)
    assert warm["added"] == 0  # every schema came from the file
    assert warm["schemas"] == cold["schemas"] == _dump(tmp_path / "off", enabled=False)["schemas"]
    assert not (tmp_path / "off").exists()


def test_the_key_changes_with_any_source_file(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    before = schema_cache.code_key(tmp_path)
    assert schema_cache.code_key(tmp_path) == before
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    assert schema_cache.code_key(tmp_path) != before
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "c.py").write_text("")
    assert schema_cache.code_key(tmp_path) != before


def test_code_outside_the_package_is_never_cached() -> None:
    tool = next(iter(broken_service.tools.values()))
    assert not schema_cache.covered(tool.func.__code__.co_filename)
    assert not schema_cache.covered("<string>") and not schema_cache.covered(None)
    assert schema_cache.covered(schema_cache.__file__)


def test_an_unreadable_file_is_ignored_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "schemas-x.marshal"
    path.write_bytes(b"not marshal data")
    cache = schema_cache.SchemaCache(path)
    assert cache.get("tool:a") is None
    cache.put("tool:a", ({"type": "object"}, {"type": "object"}))
    cache.save()
    assert schema_cache.SchemaCache(path).get("tool:a") == ({"type": "object"}, {"type": "object"})


def test_a_save_keeps_what_another_process_saved_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "schemas-x.marshal"
    first, second = schema_cache.SchemaCache(path), schema_cache.SchemaCache(path)
    first.put("tool:a", ({"a": 1},))
    first.save()
    second.put("tool:b", ({"b": 2},))
    second.save()
    merged = schema_cache.SchemaCache(path)
    assert merged.get("tool:a") == ({"a": 1},) and merged.get("tool:b") == ({"b": 2},)


def test_long_lived_pauses_the_collector_and_freezes_what_was_built() -> None:
    frozen = gc.get_freeze_count()
    with schema_cache.long_lived():
        with schema_cache.long_lived():
            assert not gc.isenabled()
        assert not gc.isenabled()  # an inner use leaves the collector to the outer one
        kept = [[n] for n in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(kept)
