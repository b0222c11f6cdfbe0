"""`gpuopt daemon [run]` and `gpuopt daemon status`."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from gpuopt.orchestrator.cli.config_cmd import ConfigOption

NOT_RUNNING_EXIT = 3  # like `systemctl status`: 3 = not running


class LogFormatOption(StrEnum):
    TEXT = "text"
    JSON = "json"


LogFormatArg = Annotated[
    LogFormatOption | None,
    typer.Option("--log-format", help="text or json (one JSON object per line); "
                 "default: [daemon] log_format.", show_default=False),
]


def _run(config: ConfigOption, log_format: LogFormatOption | None) -> None:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.daemon.runner import run_daemon

    settings = load_config(config)
    raise typer.Exit(run_daemon(settings, log_format=log_format.value if log_format else None))


def run(ctx: typer.Context, config: ConfigOption = None,
        log_format: LogFormatArg = None) -> None:
    """Run the daemon in the foreground until SIGTERM / SIGINT.

    Example: gpuopt daemon run --log-format json
    """
    from gpuopt.orchestrator.cli.group_options import from_group

    _run(from_group(ctx, "config", config), from_group(ctx, "log_format", log_format))


def status(
    ctx: typer.Context,
    config: ConfigOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Running or not, the leader, the last successful poll per cloud, the next report.
    Exit code 0 when a daemon runs, 3 when none does.

    Example: gpuopt daemon status --json
    """
    import json
    from datetime import UTC, datetime

    from gpuopt.orchestrator.cli.group_options import from_group
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.daemon.status import DaemonStatus, gather_status, render_text
    from gpuopt.orchestrator.store import open_store_if_exists
    from gpuopt.orchestrator.store.url import resolve_url, shown_url

    settings = load_config(from_group(ctx, "config", config))
    url = resolve_url(settings.database.url)
    store = open_store_if_exists(url)
    if store is None:
        result = DaemonStatus(running=False, database=shown_url(url), note="no database yet")
    else:
        try:
            result = gather_status(store, settings, url, datetime.now(UTC))
        finally:
            store.close()
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
    else:
        from gpuopt.core.safe_text import escape_text

        # node names, a cloud's error text: escaped for the terminal (core/safe_text.py)
        typer.echo(escape_text(render_text(result, settings.report.timezone), multiline=True),
                   nl=False)
    if not result.running:
        raise typer.Exit(NOT_RUNNING_EXIT)


def register(app: typer.Typer) -> None:
    daemon_app = typer.Typer(
        help="The long-running service: price polls, job reconcile, weekly report.\n\n"
        "Example: gpuopt daemon --log-format json",
        invoke_without_command=True,
    )

    @daemon_app.callback()
    def _default(
        ctx: typer.Context, config: ConfigOption = None, log_format: LogFormatArg = None
    ) -> None:
        """The long-running service (`gpuopt daemon` = `gpuopt daemon run`).

        Example: gpuopt daemon --log-format json
        """
        from gpuopt.orchestrator.cli.group_options import refuse_unhonoured

        if ctx.invoked_subcommand is None:
            _run(config, log_format)
        # --config is honoured by every subcommand, --log-format by `run` only
        refuse_unhonoured(ctx, {"config", "log_format"} if ctx.invoked_subcommand == "run"
                          else {"config"})

    daemon_app.command("run")(run)
    daemon_app.command("status")(status)
    app.add_typer(daemon_app, name="daemon")
