"""``compoworld services …``: list, show, check and serve the registered services."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from servers.framework import Service, Tool
from servers.registry import UnknownService, all_services, get_service

app = typer.Typer(help="Inspect, check and serve the tool services.", no_args_is_help=True)
console = Console()


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


def _lookup(name: str) -> Service[Any]:
    try:
        return get_service(name)
    except UnknownService as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None


def service_summary(service: Service[Any]) -> dict[str, Any]:
    """The row of one service in ``services list --json``."""
    return {
        "name": service.name,
        "category": service.category,
        "source": service.source,
        "version": service.version,
        "tools": len(service.tools),
        "read": len(service.read_tools),
        "write": len(service.write_tools),
        "description": service.description,
    }


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
) -> None:
    """List every registered service with its tool counts."""
    rows = [service_summary(s) for s in all_services().values()]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title="CompoWorld services")
    for column in ("service", "category", "source", "tools", "read", "write"):
        table.add_column(column, justify="right" if column in ("tools", "read", "write") else "left")
    for row in rows:
        table.add_row(
            row["name"],
            row["category"],
            row["source"],
            str(row["tools"]),
            str(row["read"]),
            str(row["write"]),
        )
    table.add_section()
    table.add_row(
        f"{len(rows)} services",
        "",
        "",
        str(sum(r["tools"] for r in rows)),
        str(sum(r["read"] for r in rows)),
        str(sum(r["write"] for r in rows)),
    )
    console.print(table)


@app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="Service name, e.g. email.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the tools' full MCP schemas as JSON.")] = False,
) -> None:
    """Show one service's tools with their signatures."""
    service = _lookup(name)
    if as_json:
        tools = [
            {
                "name": t.name,
                "kind": t.kind,
                "description": t.description,
                "input_schema": t.input_schema,
                "output_schema": t.output_schema,
            }
            for t in service.tools.values()
        ]
        print(json.dumps({**service_summary(service), "tool_list": tools}, indent=2))
        return
    console.print(f"[bold]{service.name}[/bold] v{service.version} ({service.category}, {service.source})")
    console.print(service.description)
    table = Table(show_lines=False)
    table.add_column("kind")
    table.add_column("signature")
    table.add_column("description")
    for tool in service.tools.values():
        table.add_row(tool.kind, signature(tool), tool.description.splitlines()[0])
    console.print(table)


@app.command("check")
def check(
    names: Annotated[list[str] | None, typer.Argument(help="Services to check (default: all).")] = None,
    examples: Annotated[int, typer.Option(help="Generated inputs per tool.")] = 12,
) -> None:
    """Run the conformance checker over services; exits 1 if any has a problem."""
    from servers.conformance import check_service

    failed = 0
    for name in names or list(all_services()):
        report = check_service(_lookup(name), examples=examples)
        console.print(str(report), style="green" if report.ok else "red", highlight=False)
        failed += not report.ok
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

    server = ServiceRuntime.seeded(_lookup(name), seed).server()
    if transport is Transport.stdio:
        serve_stdio(server)
    else:
        Console(stderr=True).print(f"serving {name!r} on http://{host}:{port}{path}")
        serve_http(server, host=host, port=port, path=path)
