"""``compoworld tasks …``: the dependency graph, task generation, statistics and inspection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

if TYPE_CHECKING:
    from taskgen.generate import Source

SOURCES = ("patterns", "walks")  # taskgen.generate.SOURCES, without importing the generator to print --help

app = typer.Typer(help="Generate and inspect verified cross-service tasks.", no_args_is_help=True)
console = Console()
err = Console(stderr=True)

ServicesOpt = Annotated[str | None, typer.Option("--services", help="Comma-separated services (default: all).")]
NoSimOpt = Annotated[bool, typer.Option("--no-worldmodel", help="Leave the simulated services out.")]


def _source(text: str) -> Source:
    if text not in SOURCES:
        raise typer.BadParameter(f"--source must be one of {', '.join(SOURCES)}, not {text!r}")
    return "patterns" if text == "patterns" else "walks"


def _services(text: str | None) -> list[str] | None:
    return [s.strip() for s in text.split(",") if s.strip()] if text else None


@app.command("graph")
def graph(
    services: ServicesOpt = None,
    no_worldmodel: NoSimOpt = False,
    graphml: Annotated[Path | None, typer.Option("--graphml", help="Write the graph as GraphML.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Size of the typed dependency graph and its most connected services."""
    import networkx as nx

    from taskgen.generate import default_hub
    from taskgen.graph import build_graph, summary

    hub = default_hub(_services(services), worldmodel=not no_worldmodel)
    built = build_graph(hub.registry)
    info = summary(built)
    if graphml is not None:
        nx.write_graphml(built, graphml)
        info["graphml"] = str(graphml)
    if as_json:
        print(json.dumps(info, indent=2))
        return
    console.print(
        f"{info['tools']} tools, {info['edges']} edges ({info['cross_service_edges']} across services, "
        f"{info['state_edges']} through state) over {info['services']} services"
    )
    table = Table(title="Most connected services (cross-service edges)")
    table.add_column("service")
    table.add_column("edges", justify="right")
    for name, count in info["most_connected"]:
        table.add_row(name, str(count))
    console.print(table)


@app.command("generate")
def generate_cmd(
    n: Annotated[int, typer.Option("-n", help="Number of verified tasks.")] = 100,
    seed: Annotated[int, typer.Option(help="Seed of the run (world seed and walks).")] = 0,
    services: ServicesOpt = None,
    min_services: Annotated[int, typer.Option(help="Minimum services a task must involve.")] = 2,
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write.")] = Path("tasks.jsonl"),
    no_worldmodel: NoSimOpt = False,
    workers: Annotated[int, typer.Option(help="Processes (1: in this process).")] = 1,
    source: Annotated[
        str, typer.Option(help="patterns: business workflow patterns; walks: random walks over the tool graph.")
    ] = "patterns",
    writer: Annotated[
        str | None,
        typer.Option(
            help="Rewrite each instruction with this model (any OpenAI-compatible endpoint, OPENAI_BASE_URL)."
        ),
    ] = None,
) -> None:
    """Generate verified tasks (same seed, same file) and write them as JSONL."""
    from taskgen.generate import GenerationConfig, generate_tasks, stats
    from taskgen.task import write_jsonl

    config = GenerationConfig(
        n=n,
        seed=seed,
        services=_services(services),
        worldmodel=not no_worldmodel,
        min_services=min_services,
        source=_source(source),
        workers=max(1, workers),  # 0 and 1 both meant "in this process"
    )
    with Progress(
        TextColumn("generating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err
    ) as progress:
        bar = progress.add_task("tasks", total=n)
        result = generate_tasks(config, on_progress=lambda done: progress.update(bar, completed=done))
    rewrites: dict[str, int] = {}
    if writer:
        from taskgen.rewrite import Rewriter

        rewriter = Rewriter(writer)
        for index, task in enumerate(result.tasks):
            result.tasks[index], outcome = rewriter.rewrite(task)  # unsafe rewrites keep the templated text
            rewrites[outcome] = rewrites.get(outcome, 0) + 1
    write_jsonl(result.tasks, out)
    summary = stats(result.tasks, dict(result.rejections))
    if writer:
        summary["rewrites"] = rewrites
    summary["attempts"] = result.attempts
    summary["config"] = config.model_dump(mode="json")  # what made the file: the same config makes it again
    out.with_suffix(".stats.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    err.print(
        f"wrote {len(result.tasks)} tasks to {out} ({result.attempts} walks, rejections: "
        f"{dict(result.rejections) or 'none'})"
    )


@app.command("patterns")
def patterns_cmd(
    attempts: Annotated[int, typer.Option("-n", help="Attempts per pattern.")] = 20,
    seed: Annotated[int, typer.Option(help="World seed.")] = 0,
    only: Annotated[str | None, typer.Option("--only", help="Comma-separated pattern ids.")] = None,
    show: Annotated[int, typer.Option("--show", help="Print this many generated instructions per pattern.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Check every workflow pattern: how often it becomes a verified task, why it fails, where it lands."""
    from taskgen.patterns_check import check_patterns

    wanted = _services(only)
    report = check_patterns(attempts, seed, wanted)
    if as_json:
        print(json.dumps(report, indent=2, sort_keys=True))
        return
    table = Table(title=f"patterns (seed {seed}, {attempts} attempts each)")
    for column in ("pattern", "kept", "services seen", "rejections", "dropped"):
        table.add_column(column)
    for row in report["patterns"]:
        table.add_row(row["id"], f"{row['kept']}/{row['attempts']}", ", ".join(row["services"]),
                      json.dumps(row["rejections"]), json.dumps(row["dropped"]))  # fmt: skip
    console.print(table)
    for row in report["patterns"]:
        for text in row["examples"][:show]:
            console.print(f"[bold]{row['id']}[/bold]: {text}\n")


@app.command("stats")
def stats_cmd(
    file: Annotated[Path, typer.Argument(help="A tasks JSONL file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Services per task, transfers, length, policy share and gate rejections of a task file."""
    from taskgen.generate import stats
    from taskgen.task import read_jsonl

    sidecar = file.with_suffix(".stats.json")
    rejections = json.loads(sidecar.read_text()).get("gate_rejections", {}) if sidecar.exists() else {}
    data = stats(list(read_jsonl(file)), rejections)
    if as_json:
        print(json.dumps(data, indent=2, sort_keys=True))
        return
    table = Table(title=str(file))
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key, value in data.items():
        table.add_row(key, json.dumps(value) if isinstance(value, dict) else str(value))
    console.print(table)


@app.command("show")
def show(
    task_id: Annotated[str, typer.Argument(help="Task id.")],
    file: Annotated[Path, typer.Option("--file", "-f", help="Tasks JSONL file.")] = Path("tasks.jsonl"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the task as JSON.")] = False,
) -> None:
    """One task: instruction, plan, rubric and expected report."""
    from taskgen.task import read_jsonl

    task = next((t for t in read_jsonl(file) if t.id == task_id), None)
    if task is None:
        err.print(f"[red]no task {task_id!r} in {file}[/red]")
        raise typer.Exit(2)
    if as_json:
        print(task.model_dump_json(indent=2))
        return
    console.print(
        f"[bold]{task.id}[/bold]  services: {', '.join(task.services)}  "
        f"distractors: {', '.join(task.distractor_services)}  seed {task.seed}"
    )
    console.print(task.instruction, highlight=False)
    plan = Table(title="oracle plan")
    plan.add_column("#")
    plan.add_column("tool")
    plan.add_column("arguments")
    for number, step in enumerate(task.plan, 1):
        plan.add_row(str(number), step.tool, json.dumps(step.arguments)[:160])
    console.print(plan)
    rubric = Table(title="rubric")
    rubric.add_column("id")
    rubric.add_column("kind")
    rubric.add_column("description")
    for criterion in task.rubric.criteria:
        rubric.add_row(criterion.id, ("neg " if criterion.negative else "") + criterion.kind, criterion.description)
    console.print(rubric)
    console.print(f"expected report: {json.dumps(task.expected_report)}")
