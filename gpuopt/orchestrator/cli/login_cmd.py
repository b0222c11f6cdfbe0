"""`gpuopt login URL` and `gpuopt logout`: the remote CLI's server and token, kept in the
user's config directory (login.json, mode 0600)."""

from __future__ import annotations

from typing import Annotated

import typer


def login(
    url: Annotated[str, typer.Argument(help="The team server, e.g. https://gpuopt.corp:8470")],
    token_stdin: Annotated[bool, typer.Option(
        "--token-stdin", help="Read the token from standard input (scripts).")] = False,
) -> None:
    """Talk to a team server from here on: submit, jobs, status, logs, cancel, plan,
    estimate, prices and report use it instead of a local store.

    Example: gpuopt login https://gpuopt.example.com:8470
    """
    import sys

    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.remote import Remote, _checked_url, save_login

    if token_stdin:
        token = sys.stdin.readline().strip()
    else:
        import getpass

        token = getpass.getpass("token (from `gpuopt users add`, not echoed): ").strip()
    if not token:
        raise UserError("no token given", exit_code=2)
    me = Remote(_checked_url(url), token).json("GET", "/me")  # refused: not saved
    file = save_login(url, token)
    role = "admin" if me["admin"] else "member" + (f" of team {me['team']}" if me["team"]
                                                  else "")
    out_console().print(f"logged in to {_checked_url(url)} as {me['name']} ({role}); "
                        f"saved in {file} (mode 0600)", markup=False)


def logout() -> None:
    """Forget the saved server and token: commands use the local store again.

    Example: gpuopt logout
    """
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.remote import login_file

    file = login_file()
    existed = file.exists()
    file.unlink(missing_ok=True)
    out_console().print(f"removed {file}" if existed else "not logged in", markup=False)


def register(app: typer.Typer) -> None:
    app.command("login")(login)
    app.command("logout")(logout)
