"""The ``compoworld`` command: one root that mounts each package's command group.

It lives in ``training``, the right-most package of the dependency order
(servers ← worldmodel ← hub ← taskgen ← harness ← training), because only that package may import
every other one. Each package owns its own sub-commands (``servers.cli`` for ``services``, …);
this root only composes them and stays free of heavy imports so that ``compoworld --help`` is fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness import cli as harness_cli
from hub.cli import app as hub_app
from servers.cli import app as services_app
from taskgen.cli import app as tasks_app
from worldmodel.cli import app as worldmodel_app

app = typer.Typer(
    name="compoworld",
    help="CompoWorld: composable, verified worlds for tool-using agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(services_app, name="services")
app.add_typer(hub_app, name="hub")
app.add_typer(worldmodel_app, name="worldmodel")
app.add_typer(tasks_app, name="tasks")
app.command("run")(harness_cli.run_cmd)
app.command("report")(harness_cli.report_cmd)
app.command("demo")(harness_cli.demo)
app.add_typer(harness_cli.export_app, name="export")
app.add_typer(harness_cli.eval_app, name="eval")


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

    from training.sft import train_sft

    result = train_sft(
        model,
        list(data),
        output,
        max_steps,
        epochs,
        learning_rate,
        batch_size,
        lora=lora,
        env_tools=env_tools,
        turns=turns,
        assistant_only_loss=assistant_only_loss,
    )
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
    as_json: Annotated[bool, typer.Option("--json", help="Print the logged metrics as JSON.")] = False,
) -> None:
    """GRPO with tool calls into task worlds (TRL GRPOTrainer + environment_factory, CFRR reward)."""
    import json

    from training.grpo import train_grpo

    result = train_grpo(
        model,
        str(tasks),
        str(output),
        max_steps,
        num_generations,
        max_completion_length,
        learning_rate=learning_rate,
        reward=reward,
        max_tool_calling_iterations=max_tool_calling_iterations,
        lora=lora,
        temperature=temperature,
        max_tasks=max_tasks,
    )
    if as_json:
        print(json.dumps(result))
    else:
        typer.echo(f"trained {max_steps} GRPO steps on {result['tasks']} tasks; saved to {result['output_dir']}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
