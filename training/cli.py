"""The ``compoworld`` command: one root that mounts each package's command group.

It lives in ``training``, the right-most package of the dependency order
(servers ← worldmodel ← hub ← taskgen ← harness ← training), because only that package may import
every other one. Each package owns its own sub-commands (``servers.cli`` for ``services``, …);
this root only composes them and stays free of heavy imports so that ``compoworld --help`` is fast.
"""

from __future__ import annotations

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


def main() -> None:
    app()


if __name__ == "__main__":
    main()
