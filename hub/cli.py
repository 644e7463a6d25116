"""``compoworld hub …``: serve many services through one MCP endpoint, and describe the hub."""

from __future__ import annotations

import functools
import json
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from hub.core import Hub

# Kept light on purpose: ``compoworld --help`` imports this module, so the hub, the registry and
# the services are imported inside the commands, and only the services that are served.

app = typer.Typer(help="Serve the hub (one MCP endpoint over many services) and inspect it.", no_args_is_help=True)


@functools.cache
def err() -> Console:
    """The console errors and notices go to (rich is imported on first use: serving never prints)."""
    from rich.console import Console

    return Console(stderr=True)


class SurfaceOpt(StrEnum):
    direct = "direct"
    gateway = "gateway"


class TransportOpt(StrEnum):
    stdio = "stdio"
    http = "http"


ServicesOpt = Annotated[
    str | None, typer.Option("--services", help="Comma-separated services to mount (default: all native ones).")
]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="Hub config (TOML) with [[external]] servers.")]
WorldModelOpt = Annotated[
    bool, typer.Option("--worldmodel", help="Also mount the simulated services of the world model.")
]
SpecsOpt = Annotated[Path | None, typer.Option("--specs", help="Spec directory for --worldmodel (default: built in).")]


def build_hub(
    services: str | None, config: Path | None, worldmodel: bool = False, specs: Path | None = None
) -> tuple[Hub, list[str] | None]:
    """The hub for the CLI: native services (all, or the chosen ones), simulated ones, externals.

    With chosen services, only those are imported and built (their modules are looked up by
    name); every native service is imported only when all are mounted or a name is unknown.
    """
    from hub.core import Hub
    from hub.registry import ServiceEntry, native_entry
    from servers.registry import all_services, load_services

    chosen = [s.strip() for s in services.split(",") if s.strip()] if services else None
    extra: list[ServiceEntry] = []
    simulated: dict[str, object] = {}
    if config is not None:
        from hub.external import load_config
        from hub.fastmcp_mount import config_entry

        loaded = load_config(config)
        chosen = chosen or loaded["services"]
        extra = [config_entry(c) for c in loaded["external"]]
        simulated = loaded.get("worldmodel") or {}
    if worldmodel or simulated:
        from worldmodel.catalog import SPECS_DIR, make_backend, simulated_services

        backend = make_backend(
            str(simulated.get("backend", "rules")),  # type: ignore[arg-type]
            model=simulated.get("model"),  # type: ignore[arg-type]
            base_url=simulated.get("base_url"),  # type: ignore[arg-type]
            cache_path=simulated.get("cache"),  # type: ignore[arg-type]
        )
        directory = specs or simulated.get("specs") or SPECS_DIR
        extra += [native_entry(s) for s in simulated_services(directory, backend)]  # type: ignore[arg-type]
    external_names = {e.name for e in extra}  # externals and simulated services
    if chosen is None:
        natives = all_services()
    else:
        natives = load_services(n for n in chosen if n not in external_names)
        unknown = [n for n in chosen if n not in natives and n not in external_names]
        if unknown:
            known = [*all_services(), *external_names]
            err().print(f"[red]unknown service(s) {unknown}; known: {', '.join(known)}[/red]")
            raise typer.Exit(2)
    native = [natives[n] for n in chosen if n in natives] if chosen is not None else list(natives.values())
    mounted = [*(s.name for s in native), *(e.name for e in extra)] if chosen is not None else None
    if not extra:
        return Hub.native(native), mounted
    from hub.external import external_middleware  # retries an external server that failed at start

    return Hub.native(native, extra=extra, middleware=[external_middleware]), mounted


@app.command("serve")
def serve(
    services: ServicesOpt = None,
    all_: Annotated[bool, typer.Option("--all", help="Mount every service (the default).")] = False,
    surface: Annotated[
        SurfaceOpt, typer.Option(help="direct: every tool; gateway: four meta-tools.")
    ] = SurfaceOpt.direct,
    transport: Annotated[TransportOpt, typer.Option(help="stdio (one world) or streamable HTTP.")] = TransportOpt.stdio,
    seed: Annotated[int, typer.Option(help="World seed of the initial world.")] = 0,
    config: ConfigOpt = None,
    worldmodel: WorldModelOpt = False,
    specs: SpecsOpt = None,
    host: Annotated[str, typer.Option(help="HTTP bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8760,
    token: Annotated[
        str | None, typer.Option(help="Bearer token of the initial world (default: $COMPOWORLD_WORLD_TOKEN or random).")
    ] = None,
    admin_token: Annotated[
        str | None, typer.Option(help="Admin token (default: $COMPOWORLD_ADMIN_TOKEN or random).")
    ] = None,
) -> None:
    """Serve one world over stdio, or many worlds over HTTP (an initial one is opened)."""
    hub, mounted = build_hub(None if all_ else services, config, worldmodel, specs)
    world = hub.open_world(services=mounted, seed=seed, world_id="default")
    if transport is TransportOpt.stdio:
        from hub.surfaces import world_server
        from servers.serving import serve_stdio

        serve_stdio(world_server(world, surface.value))
        return
    import uvicorn

    from hub.http import HubHTTP

    front = HubHTTP(hub, admin_token or os.environ.get("COMPOWORLD_ADMIN_TOKEN"), host=host)
    access = front.add_world(world, surface.value, token or os.environ.get("COMPOWORLD_WORLD_TOKEN"))
    info = front.describe(access, f"http://{host}:{port}")
    err().print(f"world {world.id!r}: {info['url']}  (Authorization: Bearer {access.token})")
    err().print(f"admin API: http://{host}:{port}/admin/worlds  (Authorization: Bearer {front.admin_token})")
    uvicorn.run(front.app(), host=host, port=port, log_level="warning")


@app.command("info")
def info(
    services: ServicesOpt = None,
    config: ConfigOpt = None,
    worldmodel: WorldModelOpt = False,
    specs: SpecsOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Services, tool counts and sources of the hub."""
    from rich.console import Console
    from rich.table import Table

    hub, _ = build_hub(services, config, worldmodel, specs)
    data: dict[str, Any] = hub.info()
    if as_json:
        json.dump(data, sys.stdout, indent=2)
        print()
        return
    table = Table(title=f"CompoWorld hub: {data['total_services']} services, {data['total_tools']} tools")
    for column in ("service", "source", "category", "tools", "read", "write"):
        table.add_column(column)
    for row in data["services"]:
        table.add_row(
            row["name"], row["source"], row["category"], str(row["tools"]), str(row["read"]), str(row["write"])
        )
    Console().print(table)
