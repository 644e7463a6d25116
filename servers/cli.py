"""``compoworld services …``: list, show, check and serve the registered services."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from servers.framework import Service, Tool

# Kept light on purpose: ``compoworld --help`` imports this module, so the registry, the framework
# and the services themselves are imported inside the commands that need them.

app = typer.Typer(help="Inspect, check, build, verify and serve the tool services.", no_args_is_help=True)

#: Providers of rows for services served by other packages (the world model registers its own).
EXTRA_ROWS: list[Callable[[], list[dict[str, Any]]]] = []

#: Fillers of columns that other packages compute, each called once with every listed row (all
#: sources, before ``--source`` filters them) to set its own keys on them in place. ``servers`` may
#: not import the packages to its right, so they register here from a module the root command
#: imports with ``services`` (``training.cli.ALSO_IMPORT``): ``taskgen.listing`` fills ``patterns``,
#: the ids of the workflow patterns each service can join.
EXTRA_COLUMNS: list[Callable[[list[dict[str, Any]]], None]] = []


@functools.cache
def console(stderr: bool = False) -> Console:
    """The console the commands print to (rich is imported on first use: serving never prints with it)."""
    from rich.console import Console

    return Console(stderr=stderr)


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


def _lookup(name: str) -> Service[Any]:
    """The service ``name``, importing only its module when it has one of its own name."""
    from servers.registry import UnknownService, get_service, load_services

    found = load_services([name]).get(name)
    if found is not None:
        return found
    try:
        return get_service(name)
    except UnknownService as exc:
        console().print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None


def short_product(modelled_on: str, width: int = 30) -> str:
    """The product(s) a service is modelled on as a table cell: without the parenthesised API
    parts (``Gmail API (users.messages, labels)`` is ``Gmail API``), cut to ``width``."""
    text = " ".join(re.sub(r"\([^)]*\)", "", modelled_on).split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def signature(tool: Tool) -> str:
    """``name(arg: type, opt?: type = default)`` from the tool's input schema."""
    props: dict[str, Any] = tool.input_schema.get("properties", {})
    required = set(tool.input_schema.get("required", []))
    parts = []
    for name, prop in props.items():
        kind = prop.get("x-semantic-type") or next(
            (b.get("x-semantic-type") for b in prop.get("anyOf", []) if b.get("x-semantic-type")), None
        )
        if kind is None and isinstance(prop.get("items"), dict):
            kind = f"list[{prop['items'].get('x-semantic-type', 'object')}]"
        text = f"{name}: {kind or prop.get('type', 'any')}"
        if name not in required:
            text += f" = {json.dumps(prop.get('default'))}"
        parts.append(text)
    return f"{tool.name}({', '.join(parts)})"


@app.command("list")
def list_services(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    source: Annotated[
        str | None, typer.Option(help="Only services of this source: hand-written, spec, contrib, simulated, external.")
    ] = None,
) -> None:
    """List every service (hand-written, spec-run, contributed, simulated) with its category, source, the
    product it is modelled on, tool counts and the workflow patterns it can join."""
    from servers.registry import summaries

    rows = summaries()
    known = {r["name"] for r in rows}
    rows += sorted(
        (r for provider in EXTRA_ROWS for r in provider() if r["name"] not in known), key=lambda r: r["name"]
    )
    for fill in EXTRA_COLUMNS:
        fill(rows)
    if source:
        rows = [r for r in rows if r["source"] == source]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    from rich.table import Table  # a tenth of a second: only the table needs it

    counts = ("tools", "read", "write", "patterns")
    table = Table(title="CompoWorld services")
    for column in ("service", "category", "source", "modelled on", *counts):
        # the counts keep their width on a narrow terminal (rich shrinks the text columns instead)
        if column in counts:
            table.add_column(column, justify="right", no_wrap=True, min_width=len(column))
        else:
            table.add_column(column, overflow="ellipsis")
    for row in rows:
        patterns = row.get("patterns")  # absent when no package fills the column (servers used alone)
        table.add_row(
            row["name"],
            row["category"],
            row["source"],
            short_product(row["modelled_on"]),
            str(row["tools"]),
            str(row["read"]),
            str(row["write"]),
            "" if patterns is None else str(len(patterns)),
        )
    table.add_section()
    table.add_row(
        f"{len(rows)} services",
        "",
        "",
        "",
        str(sum(r["tools"] for r in rows)),
        str(sum(r["read"] for r in rows)),
        str(sum(r["write"] for r in rows)),
        "",
    )
    console().print(table)


@app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="Service name, e.g. email.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the tools' full MCP schemas as JSON.")] = False,
) -> None:
    """Show one service's tools with their signatures."""
    from rich.table import Table

    service = _lookup(name)
    if as_json:
        tools = [
            {
                "name": t.name,
                "kind": t.kind,
                "description": t.description,
                **({"meta": t.meta.to_json()} if t.meta is not None else {}),
                "input_schema": t.input_schema,
                "output_schema": t.output_schema,
            }
            for t in service.tools.values()
        ]
        from servers.registry import summary

        print(json.dumps({**summary(service), "tool_list": tools}, indent=2))
        return
    console().print(f"[bold]{service.name}[/bold] v{service.version} ({service.category}, {service.source})")
    console().print(service.description)
    table = Table(show_lines=False)
    table.add_column("kind")
    table.add_column("signature")
    table.add_column("description")
    for tool in service.tools.values():
        table.add_row(tool.kind, signature(tool), tool.description.splitlines()[0])
    console().print(table)


@app.command("check")
def check(
    names: Annotated[list[str] | None, typer.Argument(help="Services to check (default: all).")] = None,
    examples: Annotated[int, typer.Option(help="Generated inputs per tool.")] = 12,
) -> None:
    """Check services: spec lint, conformance and, for spec-run services, the generated scenarios.

    Adding a catalog service is one spec file in servers/catalog/ plus `compoworld services check NAME`.
    Exits 1 if any service has a problem.
    """
    from servers.construction.verify import verify_one
    from servers.registry import all_services

    failed = 0
    for name in names or list(all_services()):
        _lookup(name)
        summary, ok = verify_one(name, examples=examples)
        console().print(summary, style="green" if ok else "red", highlight=False)
        failed += not ok
    if failed:
        raise typer.Exit(1)


class Backend(StrEnum):
    spec = "spec"
    llm = "llm"


@app.command("build")
def build(
    specs: Annotated[list[Path] | None, typer.Argument(help="Spec files (JSON, the catalog format).")] = None,
    backend: Annotated[
        Backend,
        typer.Option(help="spec (run by the engine; kept in servers/catalog) or llm (Python in servers/contrib)."),
    ] = Backend.spec,
    model: Annotated[str | None, typer.Option(help="Model name for the llm backend.")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint of the llm backend.")] = None,
    examples: Annotated[int, typer.Option(help="Generated inputs per tool in the conformance check.")] = 4,
    workers: Annotated[int, typer.Option(help="Processes verifying specs in parallel.")] = 1,
) -> None:
    """Turn tool specifications into verified services; a spec that fails verification is refused."""
    from servers.construction.pipeline import build_specs
    from servers.construction.spec import load_spec

    paths = list(specs or [])
    if not paths:
        console().print("[red]give spec files[/red]")
        raise typer.Exit(2)
    refused = 0
    if backend is Backend.spec:
        for result in build_specs(paths, examples=examples, workers=workers):
            refused += not result.ok
            where = f"\n  -> {result.where}" if result.ok else "\n  -> refused"
            style = "green" if result.ok else "red"
            console().print(result.verification.summary() + where, style=style, highlight=False)
        console().print(f"{len(paths) - refused} kept, {refused} refused")
        raise typer.Exit(1 if refused else 0)
    from servers.construction.llm import LLMWriter
    from servers.construction.pipeline import build as build_one

    if not model:
        console().print("[red]the llm backend needs --model[/red]")
        raise typer.Exit(2)
    writer = LLMWriter(model, base_url=base_url)
    for path in paths:
        try:
            spec = load_spec(path)
        except ValueError as exc:
            console().print(f"[red]{exc}[/red]")
            raise typer.Exit(2) from None
        result = build_one(spec, writer, backend="llm", examples=examples)
        refused += not result.ok
        where = result.where if result.ok else "not kept: the spec-run service stays"
        console().print(f"{result.verification.summary()}\n  -> {where}", style="green" if result.ok else "yellow",
                      highlight=False)  # fmt: skip
    console().print(f"{len(paths) - refused} kept, {refused} not kept")


@app.command("eject")
def eject(
    name: Annotated[str, typer.Argument(help="A catalog service, e.g. fleet.")],
    to: Annotated[Path, typer.Option("--to", help="Directory to write the package into (DIR/NAME/).")],
) -> None:
    """Write a catalog service as a hand-editable Python package, a starting point for behaviour the
    spec format cannot express (move it to servers/native/ and delete the spec to replace it)."""
    from servers.construction.spec import CATALOG_DIR, load_spec
    from servers.construction.template import compile_spec

    path = CATALOG_DIR / f"{name}.json"
    if not path.exists():
        console().print(f"[red]no catalog spec {name!r} (servers/catalog/{name}.json)[/red]")
        raise typer.Exit(2)
    target = to / name
    if target.exists():
        console().print(f"[red]{target} exists; choose another directory[/red]")
        raise typer.Exit(2)
    target.mkdir(parents=True)
    files = compile_spec(load_spec(path))
    for file_name, text in sorted(files.items()):
        (target / file_name).write_text(text)
    console().print(f"wrote {target} ({', '.join(sorted(files))})")


@app.command("verify")
def verify_services(
    names: Annotated[list[str] | None, typer.Argument(help="Services to verify.")] = None,
    all_services_: Annotated[bool, typer.Option("--all", help="Every mounted native service.")] = False,
    examples: Annotated[int, typer.Option(help="Generated inputs per tool in the conformance check.")] = 4,
    workers: Annotated[int, typer.Option(help="Processes to verify in parallel.")] = 1,
    source: Annotated[
        str | None, typer.Option(help="With --all, only services of this source: hand-written, spec or contrib.")
    ] = None,
) -> None:
    """Verify native services: conformance for all; for spec-run and contrib ones also spec conformance and
    scenarios."""
    from servers.construction.verify import verify_named
    from servers.registry import all_services

    chosen = list(all_services()) if all_services_ else list(names or [])
    if source is not None:
        chosen = [n for n in chosen if all_services()[n].source == source]
    if not chosen:
        console().print("[red]give service names or --all[/red]")
        raise typer.Exit(2)
    for name in chosen:
        _lookup(name)
    failed = 0
    for summary, ok in verify_named(chosen, examples=examples, workers=workers):
        console().print(summary, style="green" if ok else "red", highlight=False)
        failed += not ok
    console().print(f"{len(chosen) - failed} of {len(chosen)} verified")
    if failed:
        raise typer.Exit(1)


@app.command("serve")
def serve(
    name: Annotated[str, typer.Argument(help="Service name, e.g. email.")],
    transport: Annotated[
        Transport, typer.Option(help="stdio (for desktop clients) or streamable HTTP.")
    ] = Transport.stdio,
    seed: Annotated[int, typer.Option(help="World seed of the service's initial state.")] = 0,
    host: Annotated[str, typer.Option(help="HTTP bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8765,
    path: Annotated[str, typer.Option(help="HTTP path of the MCP endpoint.")] = "/mcp",
) -> None:
    """Run one service alone as an MCP server (stdio or streamable HTTP)."""
    from servers.serving import ServiceRuntime, serve_http, serve_stdio

    # Only this service's module is imported and only its tools are built.
    server = ServiceRuntime.seeded(_lookup(name), seed).server()
    if transport is Transport.stdio:
        serve_stdio(server)
    else:
        console(stderr=True).print(f"serving {name!r} on http://{host}:{port}{path}")
        serve_http(server, host=host, port=port, path=path)
