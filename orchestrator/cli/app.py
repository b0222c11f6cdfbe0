"""Entry point: builds the typer app from the command modules and maps errors to exit codes.

Command modules import only typer/rich at module level; everything heavy (cloud SDKs,
SkyPilot, SQLAlchemy, matplotlib) is imported inside the command functions so that
`gpuopt --help` stays fast.
"""

from __future__ import annotations

import sys

import typer

from providers.errors import UserError


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="gpuopt",
        help="Place GPU jobs on the cheapest cloud GPU that fits, and keep them running.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode="rich",
    )
    # One line per command module; each module's register() adds its commands.
    from orchestrator.cli import estimate_cmd

    estimate_cmd.register(app)
    from orchestrator.cli import config_cmd, prices_cmd

    prices_cmd.register(app)
    config_cmd.register(app)
    from orchestrator.cli import report_cmd

    report_cmd.register(app)
    return app


def main(argv: list[str] | None = None) -> None:
    app = build_app()
    try:
        app(args=argv, standalone_mode=False)
    except UserError as err:
        from orchestrator.cli.console import err_console

        err_console().print(f"[bold red]error:[/] {err}", highlight=False, markup=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    except Exception as exc:  # click usage errors and friends
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        if isinstance(exc, click.exceptions.Abort):
            sys.exit(1)
        raise


if __name__ == "__main__":
    main()
