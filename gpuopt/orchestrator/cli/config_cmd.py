"""`gpuopt config show` and `gpuopt config init`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        envvar="GPUOPT_CONFIG",
        help="Configuration file (default: config.toml in the user's config directory).",
        show_default=False,
    ),
]


def show(config: ConfigOption = None) -> None:
    """Print the effective configuration (file + GPUOPT_* overrides), secrets masked.

    Example: GPUOPT_DATABASE_URL=postgresql://gpuopt@db/gpuopt gpuopt config show
    """
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.config import load_config_with_sources
    from gpuopt.orchestrator.config.render import to_toml

    settings, file, exists, env_names = load_config_with_sources(config)
    header = [f"# file: {file}" + ("" if exists else " (missing: defaults)")]
    if env_names:
        header.append("# environment overrides: " + ", ".join(env_names))
    # TOML, never wrapped: a long path in the header comment must stay one comment line.
    out_console().print("\n".join(header) + "\n\n" + to_toml(settings), markup=False, end="",
                        soft_wrap=True)


def init(
    config: ConfigOption = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented starter configuration file.

    Example: gpuopt config init --config ./gpuopt.toml
    """
    import os

    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.cli.console import err_console
    from gpuopt.orchestrator.config.render import starter_text
    from gpuopt.orchestrator.paths import default_config_file, ensure_private_dir

    file = config.expanduser() if config is not None else default_config_file()
    if file.exists() and not force:
        raise UserError(
            f"{file} already exists; edit it, or pass --force to overwrite it", exit_code=2
        )
    ensure_private_dir(file.parent)
    fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(starter_text())
    err_console().print(f"wrote {file}; check it with `gpuopt config show`")


def register(app: typer.Typer) -> None:
    config_app = typer.Typer(help="Show or create the configuration file.\n\n"
                             "Example: gpuopt config init && gpuopt config show",
                             no_args_is_help=True)
    config_app.command("show")(show)
    config_app.command("init")(init)
    app.add_typer(config_app, name="config")
