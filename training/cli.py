"""The ``compoworld`` command: one root that mounts each package's command group.

It lives in ``training``, the right-most package of the dependency order
(servers ← worldmodel ← hub ← taskgen ← harness ← training), because only that package may import
every other one. Each package owns its own sub-commands (``servers.cli`` for ``services``, …);
this root only composes them, and lazily: a sub-command's module is imported (and turned into a
click command) the first time that sub-command is used, so ``compoworld services serve email``
imports neither the hub, the task generator nor the harness, and ``compoworld --help`` stays fast.
The package CLI modules themselves import their heavy dependencies inside their commands.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:  # the settings models are imported when a command runs, so that --help stays fast
    from pydantic import BaseModel

Settings = TypeVar("Settings", bound="BaseModel")

#: The sub-commands other packages own, as ``name: "module:attribute"`` (a ``typer.Typer`` group
#: or a command function), in the order ``compoworld --help`` lists them (commands, then groups).
LAZY_COMMANDS: dict[str, str] = {
    "run": "harness.cli:run_cmd",
    "report": "harness.cli:report_cmd",
    "demo": "harness.cli:demo",
    "services": "servers.cli:app",
    "hub": "hub.cli:app",
    "worldmodel": "worldmodel.cli:app",
    "tasks": "taskgen.cli:app",
    "export": "harness.cli:export_app",
    "eval": "harness.cli:eval_app",
}

#: Modules a sub-command needs imported for their side effects: ``worldmodel.cli`` adds the
#: simulated services' rows to ``services list`` and ``taskgen.listing`` its ``patterns`` column
#: (``servers`` may import neither ``worldmodel`` nor ``taskgen``).
ALSO_IMPORT: dict[str, tuple[str, ...]] = {"services": ("worldmodel.cli", "taskgen.listing")}

_SETTINGS: dict[str, Any] = {"pretty_exceptions_enable": False}


class _Pending(TyperCommand):
    """The place of a sub-command whose module is not imported yet."""

    def __init__(self, name: str, target: str) -> None:
        super().__init__(name)
        self.key = name
        self.target = target

    def load(self) -> Any:
        """The real click command, built as ``app.add_typer``/``app.command`` would have built it."""
        module, _, attribute = self.target.partition(":")
        obj = getattr(importlib.import_module(module), attribute)
        for extra in ALSO_IMPORT.get(self.key, ()):
            importlib.import_module(extra)
        holder = typer.Typer(**_SETTINGS)
        if isinstance(obj, typer.Typer):
            holder.add_typer(obj, name=self.key)
        else:
            holder.command(self.key)(obj)
        return typer.main.get_group(holder).commands[self.key]


class LazyGroup(TyperGroup):
    """The root group: :data:`LAZY_COMMANDS` are listed at once but imported on first use."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        eager = dict(self.commands)
        self.commands = {**{n: _Pending(n, t) for n, t in LAZY_COMMANDS.items() if n not in eager}, **eager}

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if isinstance(command, _Pending):
            command = self.commands[cmd_name] = command.load()
        return command


app = typer.Typer(
    name="compoworld",
    help="CompoWorld: composable, verified worlds for tool-using agents.",
    no_args_is_help=True,
    cls=LazyGroup,
    **_SETTINGS,
)


train_app = typer.Typer(help="Train on CompoWorld data with TRL (needs the train extra).", no_args_is_help=True)
app.add_typer(train_app, name="train")


@train_app.command("sft")
def train_sft_cmd(
    model: Annotated[str, typer.Option(help="Model path or hub id; 'tiny' builds a local CPU smoke model.")],
    data: Annotated[list[Path], typer.Option(help="SFT JSONL file(s) (repeatable).")],
    output: Annotated[Path, typer.Option(help="Where to save the model.")] = Path("runs/sft-model"),
    max_steps: Annotated[int, typer.Option(help="Stop after this many steps (-1: full epochs).")] = -1,
    epochs: Annotated[float, typer.Option(help="Epochs.")] = 1.0,
    learning_rate: Annotated[float, typer.Option(help="Learning rate.")] = 2e-5,
    batch_size: Annotated[int, typer.Option(help="Per-device batch size.")] = 2,
    lora: Annotated[bool, typer.Option("--lora", help="Train LoRA adapters (peft) instead of all weights.")] = False,
    env_tools: Annotated[
        bool,
        typer.Option("--env-tools", help="Render gateway rows with the tool schemas GRPO's environment shows."),
    ] = False,
    turns: Annotated[
        int | None, typer.Option(help="Keep each conversation up to its N-th assistant turn (a warm-up).")
    ] = None,
    assistant_only_loss: Annotated[
        bool, typer.Option("--assistant-only-loss", help="Train on the assistant's tokens only.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Supervised fine-tuning on verified trajectories (TRL SFTTrainer)."""
    import json

    from training.config import SFTTraining

    config = _settings(
        SFTTraining,
        model=model,
        data=list(data),
        output=output,
        max_steps=max_steps,
        epochs=epochs,
        learning_rate=learning_rate,
        batch_size=batch_size,
        lora=lora,
        turns=turns,
        assistant_only_loss=assistant_only_loss,
    )
    from training.sft import train_sft  # after the flags are checked: it imports the training stack

    tools = None
    if env_tools:
        from training.grpo import env_tool_schemas

        tools = env_tool_schemas()
    result = train_sft(config, tools)
    if as_json:
        print(json.dumps(result))
    else:
        typer.echo(
            f"trained on {result['examples']} examples; loss {result['losses'][0]:.3f} → "
            f"{result['losses'][-1]:.3f}; saved to {result['output_dir']}"
        )


@train_app.command("grpo")
def train_grpo_cmd(
    model: Annotated[str, typer.Option(help="Model path or hub id; 'tiny' builds a local CPU smoke model.")],
    tasks: Annotated[Path, typer.Option(help="Tasks JSONL (the prompts and rubrics).")],
    output: Annotated[Path, typer.Option(help="Where to save the model.")] = Path("runs/grpo-model"),
    max_steps: Annotated[int, typer.Option(help="Optimizer steps.")] = 10,
    num_generations: Annotated[int, typer.Option(help="Rollouts per task (the CFRR group).")] = 4,
    max_completion_length: Annotated[int, typer.Option(help="Tokens per completion.")] = 512,
    reward: Annotated[str, typer.Option(help="cfrr, rubric or success.")] = "cfrr",
    learning_rate: Annotated[float, typer.Option(help="Learning rate.")] = 1e-6,
    temperature: Annotated[float, typer.Option(help="Sampling temperature of the rollouts.")] = 1.0,
    max_tool_calling_iterations: Annotated[int, typer.Option(help="Tool-calling turns per rollout.")] = 12,
    max_tasks: Annotated[int | None, typer.Option(help="Use the first N tasks of the file only.")] = None,
    lora: Annotated[bool, typer.Option("--lora", help="Train LoRA adapters (peft).")] = False,
    store: Annotated[
        Path, typer.Option("--store", help="SQLite run store that records every rollout (as `compoworld run`).")
    ] = Path("runs/runs.db"),
    run_name: Annotated[
        str | None, typer.Option("--run", help="Run name of the recorded rollouts (default: the output's name).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the logged metrics as JSON.")] = False,
) -> None:
    """GRPO with tool calls into task worlds (TRL GRPOTrainer + environment_factory, CFRR reward).

    Every rollout is recorded into the run store as a trajectory: `compoworld report <run>` and
    `compoworld export sft <run>` read it like any other run."""
    import json

    from training.config import GRPOTraining

    config = _settings(
        GRPOTraining,
        model=model,
        tasks=tasks,
        output=output,
        max_steps=max_steps,
        num_generations=num_generations,
        max_completion_length=max_completion_length,
        reward=reward,
        learning_rate=learning_rate,
        temperature=temperature,
        max_tool_calling_iterations=max_tool_calling_iterations,
        max_tasks=max_tasks,
        lora=lora,
        store=store,
        run=run_name,
    )
    from training.grpo import train_grpo  # after the flags are checked: it imports the training stack

    result = train_grpo(config)
    if as_json:
        print(json.dumps(result))
    else:
        typer.echo(
            f"trained {max_steps} GRPO steps on {result['tasks']} tasks; saved to {result['output_dir']}; "
            f"rollouts in run {result['run']!r} of {result['store']}"
        )


def _settings(settings: type[Settings], **flags: Any) -> Settings:
    """The settings the flags describe; a value they cannot hold is a usage error (exit 2), not a traceback."""
    from pydantic import ValidationError

    try:
        return settings(**flags)
    except ValidationError as exc:
        problems = "; ".join(f"--{'-'.join(map(str, e['loc'])).replace('_', '-')}: {e['msg']}" for e in exc.errors())
        typer.echo(f"error: {problems}", err=True)
        raise typer.Exit(2) from None


serve_app = typer.Typer(help="Serve CompoWorld to other frameworks' clients.", no_args_is_help=True)
app.add_typer(serve_app, name="serve")


@serve_app.command("openenv")
def serve_openenv_cmd(
    tasks: Annotated[Path, typer.Option(help="Tasks JSONL: reset opens one of these tasks' worlds.")],
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    store: Annotated[Path, typer.Option(help="SQLite run store that records every episode.")] = Path("runs/runs.db"),
    run_name: Annotated[str, typer.Option("--run", help="Run name of the recorded episodes.")] = "openenv",
    model: Annotated[str, typer.Option(help="Policy name; episodes are recorded as agent openenv:<model>.")] = "policy",
    max_steps: Annotated[int, typer.Option(help="Tool calls per episode; the last one ends it.")] = 100,
    max_sessions: Annotated[int, typer.Option(help="Concurrent sessions (OpenEnv's max_concurrent_envs).")] = 256,
) -> None:
    """An OpenEnv server (needs the openenv extra): reset opens a task's world, step calls a gateway tool or
    submit_report, and the rubric's reward comes with the step that ends the episode."""
    import uvicorn

    from training.openenv_server import create_app, load_episodes

    episodes = load_episodes(tasks, store, run_name, model, max_steps)
    typer.echo(f"OpenEnv server on http://{host}:{port} ({len(episodes.tasks)} tasks; episodes go to {store})")
    uvicorn.run(create_app(episodes, max_sessions), host=host, port=port, log_level="warning")


@serve_app.command("verifiers")
def serve_verifiers_cmd(
    tasks: Annotated[Path, typer.Option(help="Tasks JSONL: each rollout opens one of these tasks' worlds.")],
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8790,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    store: Annotated[Path, typer.Option(help="SQLite run store that records every rollout.")] = Path("runs/runs.db"),
    run_name: Annotated[str, typer.Option("--run", help="Run name of the recorded rollouts.")] = "verifiers",
    token: Annotated[str | None, typer.Option(help="Admin token (default: random, printed).")] = None,
    worldmodel: Annotated[bool, typer.Option(help="Mount the simulated services.")] = True,
) -> None:
    """The rollout server a verifiers environment (integrations/verifiers, in its own venv) drives: a world per
    rollout, recorded and scored as the harness does, group CFRR."""
    from training.verifiers_server import serve

    serve(tasks, store, run_name, host, port, token, worldmodel)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
