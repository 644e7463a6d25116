"""Start-up proportional to what is served: the modules a serving command and ``--help`` import.

Serving one service must not import the other services (nor build their tools), a hub of a few
services only those, and ``compoworld --help`` none of them. Timings are the benches' business
(they depend on the machine); these tests pin the cause, which modules a command imports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

# Runs ``compoworld <argv>`` like the entry point does and, when the process ends (or is told to
# by SIGTERM, which a stdio client sends to a server slow to exit), writes the names of every
# imported module to the file named by $COMPOWORLD_IMPORT_PROBE.
PROBE = """
import atexit, json, os, signal, sys

def _dump():
    with open(os.environ["COMPOWORLD_IMPORT_PROBE"] + ".part", "w") as out:
        json.dump(sorted(sys.modules), out)
    os.replace(os.environ["COMPOWORLD_IMPORT_PROBE"] + ".part", os.environ["COMPOWORLD_IMPORT_PROBE"])

def _terminated(*_):
    _dump()
    os._exit(0)

atexit.register(_dump)
signal.signal(signal.SIGTERM, _terminated)
sys.argv = ["compoworld", *sys.argv[1:]]
from training.cli import main

main()
"""

#: Never imported to serve a few services or to print help.
HEAVY = ("torch", "transformers", "trl", "ray", "networkx", "openai")


def service_modules(modules: list[str]) -> set[str]:
    """The service modules among ``modules`` (``servers.native.email``, ``servers.built.x``…)."""
    return {
        ".".join(m.split(".")[:3])
        for m in modules
        if m.startswith(("servers.native.", "servers.built.")) and m.count(".") >= 2
    }


def serve_and_probe(tmp_path: Path, *argv: str) -> tuple[set[str], list[str]]:
    """Start ``compoworld <argv>`` as a stdio MCP server, list its tools over a real client, stop it;
    the tool names and the modules the server process had imported."""
    probe = tmp_path / "modules.json"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", PROBE, *argv],
        env={**os.environ, "COMPOWORLD_IMPORT_PROBE": str(probe)},
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    names: set[str] = set()

    async def main() -> None:
        async with Client(params) as client:
            listing = await client.list_tools()
            names.update(t.name for t in listing.tools)
            cursor = listing.next_cursor
            while cursor:
                listing = await client.list_tools(cursor=cursor)
                names.update(t.name for t in listing.tools)
                cursor = listing.next_cursor

        # The server exits when its stdin closes; its exit hook then writes the probe file.
        with anyio.fail_after(10):
            while not probe.exists():
                await anyio.sleep(0.05)

    anyio.run(main)
    return names, json.loads(probe.read_text())


def run_probe(tmp_path: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    probe = tmp_path / "modules.json"
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COMPOWORLD_IMPORT_PROBE": str(probe)},
        stdin=subprocess.DEVNULL,
    )
    return result, json.loads(probe.read_text())


@pytest.mark.slow
def test_serving_one_service_imports_only_that_service(tmp_path: Path) -> None:
    names, modules = serve_and_probe(tmp_path, "services", "serve", "email")
    assert {"list_messages", "send_message", "get_message"} <= names
    assert all("__" not in n for n in names)  # the service's own tools, not a hub's
    assert service_modules(modules) == {"servers.native.email"}
    # Serving needs neither the hub, the world model, the task generator nor the harness (the
    # world model's and the task generator's light modules for ``services list`` are imported with
    # the services group).
    others = [m for m in modules if m.split(".")[0] in ("hub", "worldmodel", "taskgen", "harness")]
    assert set(others) <= {"worldmodel", "worldmodel.cli", "taskgen", "taskgen.listing"}, others
    # Nor rich: serving prints nothing with it.
    assert not [m for m in modules if m.split(".")[0] in ("rich", *HEAVY)]


@pytest.mark.slow
def test_hub_of_chosen_services_imports_only_those(tmp_path: Path) -> None:
    names, modules = serve_and_probe(tmp_path, "hub", "serve", "--services", "email,crm,calendar")
    assert {n.split("__")[0] for n in names} == {"email", "crm", "calendar"}
    assert service_modules(modules) == {"servers.native.email", "servers.native.crm", "servers.native.calendar"}
    # No simulated service is named, so the world model's engine is not loaded.
    assert "worldmodel.engine" not in modules
    assert not [m for m in modules if m.split(".")[0] in ("taskgen", "harness", "rich", *HEAVY)]


def test_help_imports_no_service_and_nothing_heavy(tmp_path: Path) -> None:
    result, modules = run_probe(tmp_path, "--help")
    assert result.returncode == 0, result.stderr
    for command in ("services", "hub", "worldmodel", "tasks", "run", "report", "demo", "export", "eval", "train"):
        assert command in result.stdout
    assert service_modules(modules) == set()
    assert "servers.built" not in modules and "servers.native" not in modules
    # Not the registry, the hub, the world model, MCP nor any training stack.
    for name in ("servers.registry", "servers.framework", "hub.core", "worldmodel.spec", "mcp", *HEAVY):
        assert name not in modules, name


@pytest.mark.slow
def test_a_warm_listing_builds_no_service(tmp_path: Path) -> None:
    # The first listing fills the listing cache; the next reads every row and pattern from it.
    first, _ = run_probe(tmp_path, "services", "list", "--json")
    assert first.returncode == 0, first.stderr
    result, modules = run_probe(tmp_path, "services", "list", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == json.loads(first.stdout)
    assert service_modules(modules) == set()
    # Neither a hub nor the table printer (--json).
    for name in ("hub.core", "rich.table"):
        assert name not in modules, name


def test_a_group_imports_only_its_package_cli(tmp_path: Path) -> None:
    result, modules = run_probe(tmp_path, "services", "--help")
    assert result.returncode == 0, result.stderr
    assert "serve" in result.stdout
    assert "servers.cli" in modules
    assert not {"hub.cli", "taskgen.cli", "harness.cli"} & set(modules)
    assert service_modules(modules) == set()


def test_lazy_root_behaves_like_the_eager_one() -> None:
    """The root's help and every sub-command's help are those of a root that mounts every group
    eagerly (what ``training.cli`` did before it became lazy)."""
    import importlib

    import typer

    from training import cli

    eager = typer.Typer(name="compoworld", help=cli.app.info.help, no_args_is_help=True, pretty_exceptions_enable=False)
    for name, target in cli.LAZY_COMMANDS.items():
        module, _, attribute = target.partition(":")
        obj = getattr(importlib.import_module(module), attribute)
        if isinstance(obj, typer.Typer):
            eager.add_typer(obj, name=name)
        else:
            eager.command(name)(obj)
    eager.add_typer(cli.train_app, name="train")
    eager.add_typer(cli.serve_app, name="serve")

    runner = CliRunner()
    for argv in ([], ["--help"], *([name, "--help"] for name in [*cli.LAZY_COMMANDS, "train", "serve"])):
        lazy_result = runner.invoke(cli.app, argv, prog_name="compoworld")
        eager_result = runner.invoke(eager, argv, prog_name="compoworld")
        assert lazy_result.output == eager_result.output, argv
        assert lazy_result.exit_code == eager_result.exit_code, argv
    typo = runner.invoke(cli.app, ["servics"], prog_name="compoworld")
    assert typo.exit_code == 2 and "services" in typo.output


def test_cli_spec_directory_is_the_world_models() -> None:
    from worldmodel import cli
    from worldmodel.catalog import SPECS_DIR

    assert cli.SPECS_DIR == SPECS_DIR
