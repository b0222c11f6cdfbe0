"""Entry point: builds the typer app from the command modules and maps errors to exit codes.

Command modules import only typer/rich at module level; everything heavy (cloud SDKs,
SkyPilot, SQLAlchemy, matplotlib) is imported inside the command functions so that
`gpuopt --help` stays fast.
"""

from __future__ import annotations

import sys

import typer

from gpuopt.core.errors import UserError


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="gpuopt",
        help="Place GPU jobs on the cheapest cloud GPU that fits, and keep them running.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # plain click help: --help answers in ~0.1 s, not ~0.3 s
    )

    @app.callback()
    def _root() -> None:
        """Place GPU jobs on the cheapest cloud GPU that fits, and keep them running."""

    # Each command module's register() adds its commands; this order is --help's order.
    from gpuopt.orchestrator.cli import (
        config_cmd,
        daemon_cmd,
        estimate_cmd,
        jobs_cmd,
        plan_cmd,
        prices_cmd,
        report_cmd,
        simulate_cmd,
        skypilot_cmd,
        submit_cmd,
    )

    for module in (estimate_cmd, plan_cmd, submit_cmd, jobs_cmd, prices_cmd, simulate_cmd,
                   report_cmd, daemon_cmd, config_cmd, skypilot_cmd):
        module.register(app)
    return app


def main(argv: list[str] | None = None) -> None:
    app = build_app()
    try:
        # Standalone mode: typer/click print usage errors themselves (exit 2); only our
        # own UserError needs mapping to its message and exit code, without a traceback.
        app(args=argv, prog_name="gpuopt")
    except UserError as err:
        from rich.text import Text

        from gpuopt.orchestrator.cli.console import err_console

        err_console().print(Text.assemble(("error: ", "bold red"), str(err)))
        sys.exit(err.exit_code)


if __name__ == "__main__":
    main()
