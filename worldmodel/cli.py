"""``compoworld worldmodel …``: list, check and serve simulated services from their specs."""

from __future__ import annotations

import functools
import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from servers import cli as services_cli

if TYPE_CHECKING:
    from rich.console import Console

# Kept light on purpose: ``compoworld --help`` imports this module, so the world model itself is
# imported inside the commands. The spec directory is ``worldmodel.catalog.SPECS_DIR`` (a test checks
# they agree); it is spelled here so that option defaults need not import the spec module.
SPECS_DIR = Path(__file__).parent / "specs"

app = typer.Typer(help="Simulated tools: services that have a spec but no implementation.", no_args_is_help=True)


@functools.cache
def err() -> Console:
    """The console errors and notices go to (rich is imported on first use: serving never prints)."""
    from rich.console import Console

    return Console(stderr=True)


class BackendOpt(StrEnum):
    rules = "rules"
    llm = "llm"


class TransportOpt(StrEnum):
    stdio = "stdio"
    http = "http"


def _simulated_rows() -> list[dict[str, Any]]:
    """``compoworld services list`` rows for the world model's services (its specs and routed ones),
    each read from its file once per version of the file (``servers.registry.spec_summary``)."""
    from servers.registry import spec_summary
    from worldmodel.fromspec import routed_paths

    return [spec_summary(p, "simulated") for p in [*sorted(SPECS_DIR.glob("*.json")), *routed_paths()]]


services_cli.EXTRA_ROWS.append(_simulated_rows)

SpecsOpt = Annotated[Path, typer.Option("--specs", help="Directory of JSON specs (the catalog format).")]


@app.command("list")
def list_specs(
    specs: SpecsOpt = SPECS_DIR,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The simulated services of a spec directory with their tools."""
    from rich.console import Console
    from rich.table import Table

    from servers.construction.spec import load_catalog

    loaded = load_catalog(specs)
    rows: list[dict[str, str | int]] = [
        {
            "name": s.name,
            "category": s.category,
            "source": "simulated",
            "tools": len(s.tools),
            "read": sum(t.kind == "read" for t in s.tools),
            "write": sum(t.kind == "write" for t in s.tools),
        }
        for s in loaded
    ]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=f"Simulated services in {specs}")
    for column in ("service", "category", "tools", "read", "write"):
        table.add_column(column)
    for row in rows:
        table.add_row(*(str(row[k]) for k in ("name", "category", "tools", "read", "write")))
    Console().print(table)


@app.command("check")
def check(
    names: Annotated[list[str] | None, typer.Argument(help="Services to check (default: all of --specs).")] = None,
    specs: SpecsOpt = SPECS_DIR,
    examples: Annotated[int, typer.Option(help="Generated inputs per tool.")] = 12,
) -> None:
    """Check simulated services: spec lint, and conformance (plausibility included) with the rules backend.

    Adding a simulated service is one spec file in worldmodel/specs/ plus `compoworld worldmodel check NAME`.
    Exits 1 if any service has a problem.
    """
    from rich.console import Console

    from servers.conformance import check_service
    from servers.construction.lint import spec_lint
    from servers.construction.spec import load_catalog
    from worldmodel.engine import build_service
    from worldmodel.fromspec import simulated_spec
    from worldmodel.rules import RulesBackend

    try:
        loaded = {s.name: s for s in load_catalog(specs)}
    except ValueError as exc:
        err().print(f"[red]{exc}[/red]", highlight=False)
        raise typer.Exit(2) from None
    unknown = sorted(set(names or []) - set(loaded))
    if unknown:
        err().print(f"[red]no spec for {', '.join(unknown)} in {specs}[/red]")
        raise typer.Exit(2)
    failed = 0
    for name in names or sorted(loaded):
        lint = spec_lint(loaded[name])
        report = check_service(build_service(simulated_spec(loaded[name]), RulesBackend()), examples=examples)
        ok = report.ok and not lint
        head, *problems = str(report).splitlines()
        verdict = f"spec lint {'OK' if not lint else f'{len(lint)} problem(s)'}"
        text = "\n".join([f"{head} (conformance), {verdict}", *problems, *(f"  - lint: {p}" for p in lint)])
        Console(soft_wrap=True).print(text, style="green" if ok else "red", highlight=False)
        failed += not ok
    if failed:
        raise typer.Exit(1)


@app.command("serve")
def serve(
    specs: SpecsOpt = SPECS_DIR,
    backend: Annotated[BackendOpt, typer.Option(help="rules (offline, deterministic) or llm.")] = BackendOpt.rules,
    model: Annotated[str | None, typer.Option(help="Model name for --backend llm.")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL (default $OPENAI_BASE_URL).")] = None,
    cache: Annotated[Path | None, typer.Option(help="JSON file caching llm replies across runs.")] = None,
    seed: Annotated[int, typer.Option(help="World seed.")] = 0,
    transport: Annotated[TransportOpt, typer.Option(help="stdio or streamable HTTP.")] = TransportOpt.stdio,
    host: Annotated[str, typer.Option(help="HTTP bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8770,
) -> None:
    """Serve every simulated service of a spec directory as one MCP server (tools <service>__<tool>)."""
    from servers.serving import LIST_TTL_MS, build_server, mcp_tool, serve_http, serve_stdio
    from worldmodel.catalog import SimulatedWorld, make_backend, simulated_services

    try:
        chosen = make_backend(backend.value, model=model, base_url=base_url, cache_path=cache)
    except ValueError as exc:
        err().print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    services = simulated_services(specs, chosen)
    world = SimulatedWorld(services, seed)
    tools = [mcp_tool(t, f"{s.name}__{t.name}") for s in services for t in s.tools.values()]
    server = build_server("compoworld-worldmodel", "1", tools, world.call, list_ttl_ms=LIST_TTL_MS)
    if transport is TransportOpt.stdio:
        serve_stdio(server)
    else:
        err().print(f"serving {len(services)} simulated services on http://{host}:{port}/mcp")
        serve_http(server, host=host, port=port)
