"""``compoworld run | report | export | eval | demo``: run agents on tasks, score, store, report."""

from __future__ import annotations

import json
import os
import time
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from hub.cli import SurfaceOpt, TransportOpt  # one definition of these names for every command line

if TYPE_CHECKING:  # the CLI imports the project's modules when a command runs, to start fast
    from harness.export import RebuildTools
    from hub.core import Hub
    from taskgen.task import Task

console = Console()
err = Console(stderr=True)
StoreOpt = Annotated[Path, typer.Option("--store", help="SQLite run store.")]
DEFAULT_STORE = Path("runs/runs.db")

eval_app = typer.Typer(
    help="Evaluate an external MCP client (Claude Desktop, Claude Code, Inspector …).", no_args_is_help=True
)
export_app = typer.Typer(help="Export a run's trajectories.", no_args_is_help=True)


class PathOpt(StrEnum):
    inprocess = "inprocess"
    mcp = "mcp"


class BackendOpt(StrEnum):
    local = "local"
    ray = "ray"


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err
    )


def run_cmd(
    tasks: Annotated[Path, typer.Option("--tasks", help="Tasks JSONL (from `compoworld tasks generate`).")],
    agent: Annotated[
        list[str] | None, typer.Option("--agent", help="oracle, oracle-recovery, null, random or openai (repeatable).")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model for the openai agent.")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL ($OPENAI_BASE_URL).")] = None,
    surface: Annotated[
        SurfaceOpt, typer.Option(help="direct (all tools) or gateway (4 meta-tools).")
    ] = SurfaceOpt.direct,
    path: Annotated[PathOpt, typer.Option(help="inprocess (fast) or mcp (in-memory MCP client).")] = PathOpt.inprocess,
    rollouts: Annotated[int, typer.Option(help="Rollouts per task and agent.")] = 1,
    parallel: Annotated[int, typer.Option(help="Episodes at once (threads, or Ray actors).")] = 1,
    backend: Annotated[BackendOpt, typer.Option(help="local or ray.")] = BackendOpt.local,
    run_name: Annotated[str | None, typer.Option("--run", help="Run name; an existing run resumes.")] = None,
    store: StoreOpt = DEFAULT_STORE,
    limit: Annotated[int | None, typer.Option(help="Only the first N tasks.")] = None,
    max_turns: Annotated[int, typer.Option(help="Turn limit of the openai agent.")] = 30,
) -> None:
    """Run agents on tasks; every episode is scored and stored as it finishes (resumable)."""
    from harness.agent_spec import AgentSpec
    from harness.config import RunConfig
    from harness.runner import run
    from harness.store import RunStore
    from taskgen.generate import default_hub
    from taskgen.task import read_jsonl

    loaded = list(read_jsonl(tasks))[:limit]
    try:
        agents = [
            AgentSpec(name=a, model=model, base_url=base_url, max_turns=max_turns).build()
            if a == "openai"
            else AgentSpec(name=a).build()  # the endpoint options are the openai agent's only
            for a in agent or ["oracle"]
        ]
        config = RunConfig(
            surface=surface.value, path=path.value, rollouts=rollouts, parallel=parallel, backend=backend.value
        )
    except ValueError as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    name = run_name or f"run-{time.strftime('%Y%m%d-%H%M%S')}"
    hub = default_hub()
    runs = RunStore(store)
    total = len(loaded) * len(agents) * rollouts
    with _progress() as progress:
        bar = progress.add_task(f"run {name}", total=total, completed=len([e for e in runs.done(name)]))
        summary = run(hub, loaded, agents, runs, name, config, on_episode=lambda t: progress.advance(bar))
    err.print(
        f"run {name!r}: {summary.ran} episodes in {summary.seconds:.1f}s ({summary.skipped} already stored) → {store}"
    )
    from harness.report import print_report

    print_report(runs, name, console)


def report_cmd(
    run_name: Annotated[str, typer.Argument(help="Run name.")],
    store: StoreOpt = DEFAULT_STORE,
    html: Annotated[Path | None, typer.Option(help="HTML report path (default runs/<run>.html).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON.")] = False,
) -> None:
    """Print a run's metrics and write its self-contained HTML report."""
    from harness.metrics import summary
    from harness.report import print_report, write_html
    from harness.store import RunStore

    runs = RunStore(store)
    if not runs.episodes(run_name):
        err.print(f"[red]no episodes for run {run_name!r} in {store}[/red]")
        raise typer.Exit(2)
    if as_json:
        print(json.dumps(summary(runs, run_name), indent=2, sort_keys=True))
    else:
        print_report(runs, run_name, console)
    target = write_html(runs, run_name, html or store.parent / f"{run_name}.html")
    err.print(f"HTML report: {target}")


@export_app.command("jsonl")
def export_jsonl(
    run_name: Annotated[str, typer.Argument(help="Run name.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL file.")],
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Every trajectory of a run, one JSON object per line."""
    from harness.store import RunStore

    err.print(f"wrote {RunStore(store).export_jsonl(run_name, out)} trajectories to {out}")


@export_app.command("sft")
def export_sft_cmd(
    run_name: Annotated[str, typer.Argument(help="Run name.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL file.")],
    store: StoreOpt = DEFAULT_STORE,
    min_score: Annotated[float, typer.Option(help="Keep trajectories with at least this net score.")] = 1.0,
    surface: Annotated[SurfaceOpt | None, typer.Option(help="Only trajectories on this surface.")] = None,
    agent: Annotated[list[str] | None, typer.Option(help="Only these agents (repeatable).")] = None,
    held_out: Annotated[float, typer.Option(help="Fraction of tasks written to <out>.test.jsonl instead.")] = 0.0,
) -> None:
    """Verified trajectories in the SFT layout of the published CompoWorld data (tools read from the run store)."""
    from harness.export import export_sft
    from harness.store import RunStore

    count = export_sft(
        RunStore(store),
        run_name,
        out,
        min_score,
        agent,
        surface.value if surface else None,
        held_out,
        rebuild_tools=_rebuilt_tools(),
    )
    err.print(f"wrote {count} SFT records to {out}" + (f" and {out.stem}.test.jsonl" if held_out else ""))


def _rebuilt_tools() -> RebuildTools:
    """The tools of episodes stored without them (stores from before runs kept their specs, external
    clients' sessions), rebuilt from today's services; nothing of the hub is imported or built unless
    such an episode comes."""
    hubs: list[Hub] = []

    def rebuild(task: Task, surface: str) -> list[dict[str, Any]]:
        from harness.env import function_spec
        from hub.surfaces import GATEWAY_TOOLS

        if surface == "gateway":
            return [function_spec(t) for t in GATEWAY_TOOLS]
        if not hubs:
            from taskgen.generate import default_hub

            hubs.append(default_hub())
        return [function_spec(t) for t in hubs[0].registry.listing(task.mounted)]

    return rebuild


@eval_app.command("serve")
def eval_serve(
    task_id: Annotated[str, typer.Option("--task", help="Task id.")],
    tasks: Annotated[
        Path | None,
        typer.Option(help="Tasks JSONL (default: the task the session records, else ./tasks.jsonl)."),
    ] = None,
    surface: Annotated[SurfaceOpt, typer.Option(help="direct or gateway.")] = SurfaceOpt.gateway,
    transport: Annotated[TransportOpt, typer.Option(help="stdio or http.")] = TransportOpt.stdio,
    session: Annotated[
        Path | None, typer.Option(help="Session folder, where the agent works (default runs/sessions/<task>).")
    ] = None,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Start the session over; its recording moves to the store's archive.")
    ] = False,
    print_config: Annotated[
        bool, typer.Option("--print-config", help="Record the task, print the client configs and exit.")
    ] = False,
    host: Annotated[str, typer.Option(help="HTTP host to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8780,
    token: Annotated[
        str | None, typer.Option(help="Bearer token for HTTP (default: the session's, else random).")
    ] = None,
    no_worldmodel: Annotated[
        bool, typer.Option("--no-worldmodel", help="Do not mount the simulated services.")
    ] = False,
    resume: Annotated[bool, typer.Option("--resume", hidden=True)] = False,  # the default; older configs pass it
) -> None:
    """Serve a task's world to an external MCP client, recording every call it makes. A restarted
    server continues the session; the task's rubric, plan and expected report stay in the session
    store ($COMPOWORLD_SESSION_STORE, else ~/.cache/compoworld/sessions), out of the agent's folder."""
    from harness.external import client_config, prepare_session, serve
    from harness.session_store import SessionError, find_task

    if fresh and resume:
        raise _fail("--fresh and --resume exclude each other")
    folder = session or Path("runs/sessions") / task_id
    try:
        task = find_task(task_id, folder, tasks)
        worldmodel = not no_worldmodel
        if print_config:
            meta = prepare_session(task, folder, surface.value, transport.value, worldmodel, fresh, token)
            typer.echo(
                client_config(task, folder, surface.value, transport.value, host, port, meta["token"], worldmodel)
            )
            return
        serve(task, folder, surface.value, transport.value, host, port, token, worldmodel, fresh)
    except SessionError as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def _fail(message: str) -> typer.Exit:
    """One line on stderr and the exit (status 2) to raise: no traceback for a mistake a person can fix."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


@eval_app.command("score")
def eval_score(
    session: Annotated[Path, typer.Option("--session", help="Session folder written by `eval serve`.")],
    store: StoreOpt = DEFAULT_STORE,
    run_name: Annotated[str, typer.Option("--run", help="Run to store the episode in.")] = "external",
    agent: Annotated[str, typer.Option(help="Name for the client, e.g. claude-code.")] = "external",
    report: Annotated[str | None, typer.Option(help="The client's final report as JSON.")] = None,
    rollout: Annotated[int, typer.Option(help="Rollout number (several sessions of one task).")] = 0,
) -> None:
    """Score a recorded client session (found in the session store) into the run store."""
    from harness.external import score
    from harness.session_store import SessionError
    from harness.store import RunStore

    try:
        answer = json.loads(report) if report else None
    except ValueError as exc:
        raise _fail(f"--report is not JSON: {exc}") from None
    if answer is not None and not isinstance(answer, dict):
        raise _fail("--report must be a JSON object")
    try:
        trajectory = score(session, RunStore(store), run_name, agent, answer, rollout)
    except SessionError as exc:
        raise _fail(str(exc)) from None
    console.print(
        f"score {trajectory.score:.3f}  net {trajectory.net_score:.3f}  "
        f"{len(trajectory.tool_calls)} calls  stored in run {run_name!r}"
    )


def demo(
    out: Annotated[Path, typer.Option("--out", help="Folder for everything the demo writes.")] = Path("runs/demo"),
    n: Annotated[int, typer.Option("-n", help="Tasks to generate.")] = 12,
    seed: Annotated[int, typer.Option(help="Seed.")] = 0,
    surface: Annotated[SurfaceOpt, typer.Option(help="Surface the agents use.")] = SurfaceOpt.gateway,
) -> None:
    """The whole pipeline offline: hub → tasks → oracle, null and random agents (and the openai agent
    when $OPENAI_BASE_URL and $COMPOWORLD_MODEL are set) → scores → SFT JSONL → HTML report."""
    from harness.agent_spec import make_agent
    from harness.config import RunConfig
    from harness.export import export_sft
    from harness.report import print_report, write_html
    from harness.runner import run
    from harness.store import RunStore
    from taskgen.generate import default_hub, generate, stats
    from taskgen.task import write_jsonl

    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    hub = default_hub()
    err.print(f"hub: {len(hub.registry.services)} services, {len(hub.registry.tools)} tools")
    with _progress() as progress:
        bar = progress.add_task("generating tasks", total=n)
        generation = generate(n, seed, hub, on_task=lambda t: progress.advance(bar), source="patterns")
    tasks_file = out / "tasks.jsonl"
    write_jsonl(generation.tasks, tasks_file)
    agents = [make_agent(a) for a in ("oracle", "null", "random")]
    model = os.environ.get("COMPOWORLD_MODEL")
    if model and os.environ.get("OPENAI_BASE_URL"):
        agents.append(make_agent("openai", model))
    store = RunStore(out / "runs.db")
    name = f"demo-{seed}"
    with _progress() as progress:
        bar = progress.add_task("running agents", total=len(generation.tasks) * len(agents))
        config = RunConfig(surface=surface.value)
        run(hub, generation.tasks, agents, store, name, config, on_episode=lambda t: progress.advance(bar))
    sft = out / "sft.jsonl"
    count = export_sft(store, name, sft)
    html = write_html(store, name, out / "report.html")
    print_report(store, name, console)
    info = stats(generation.tasks, dict(generation.rejections))
    console.print(
        f"\n{len(generation.tasks)} verified tasks ({info['median_services']:.0f} services and "
        f"{info['median_transfers']:.0f} transfers per task, median) in {time.perf_counter() - started:.1f}s"
    )
    for label, where in (
        ("tasks", tasks_file),
        ("run store", store.path),
        ("SFT data", f"{sft} ({count} records)"),
        ("HTML report", html),
    ):
        console.print(f"  {label:12} {where}", soft_wrap=True)  # a path wrapped mid-name can't be pasted
