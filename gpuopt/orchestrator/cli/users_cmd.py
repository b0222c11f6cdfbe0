"""`gpuopt users add NAME [--team T] [--admin] [--json]`, `users list`, `users revoke NAME`:
the API's users, managed on the control node (the store the daemon serves)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="Configuration file (TOML).")]


def add(
    name: Annotated[str, typer.Argument(help="The user's name (letters, digits, . _ @ -).")],
    team: Annotated[str | None, typer.Option("--team", help="The user's team: its jobs "
                                             "are that team's; it reads that team's report.")]
    = None,
    admin: Annotated[bool, typer.Option("--admin", help="Sees and cancels every job.")]
    = False,
    as_json: Annotated[bool, typer.Option("--json", help='Print {"name": ..., "token": ...}.')]
    = False,
    config: ConfigOpt = None,
) -> None:
    """Create a user and print its API token, once (only its hash is stored).

    Example: gpuopt users add alice --team nlp
    """
    import json
    from datetime import UTC, datetime

    from gpuopt.orchestrator.api.users import add_user
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.store import open_store

    store = open_store(load_config(config).database.url)
    try:
        token = add_user(store, name, team, admin, datetime.now(UTC))
    finally:
        store.close()
    if as_json:
        typer.echo(json.dumps({"name": name, "token": token}))
        return
    out = out_console()
    role = "admin" if admin else "member" + (f" of team {team}" if team else "")
    out.print(f"user {name} added ({role}); its token, shown only now:", markup=False)
    typer.echo(token)
    out.print("on the user's machine: gpuopt login https://<this host>:<port> (paste it)",
              markup=False)


def list_(config: ConfigOpt = None) -> None:
    """List users: name, team, role, created, revoked.

    Example: gpuopt users list
    """
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.tables import ID, Col, print_table
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.store import open_store_if_exists
    from gpuopt.orchestrator.store.users_repo import list_users

    store = open_store_if_exists(load_config(config).database.url)
    rows = []
    if store is not None:
        try:
            with store.session() as session:
                rows = list_users(session)
        finally:
            store.close()
    if not rows:
        out_console().print("no users yet: `gpuopt users add NAME`")
        return
    cols = [Col("name", ID), Col("team", optional=1), Col("role", ID),
            Col("created", ID), Col("revoked", ID, optional=2)]
    print_table(out_console(), cols, [
        [r.name, r.team or "-", "admin" if r.is_admin else "member",
         f"{r.created_at:%Y-%m-%d %H:%M}",
         f"{r.revoked_at:%Y-%m-%d %H:%M}" if r.revoked_at else "-"] for r in rows])


def revoke(
    name: Annotated[str, typer.Argument(help="The user whose token stops working now.")],
    config: ConfigOpt = None,
) -> None:
    """Revoke a user's token: its next request is refused (401).

    Example: gpuopt users revoke alice
    """
    from datetime import UTC, datetime

    from gpuopt.orchestrator.api.users import revoke as revoke_user
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.store import open_store

    store = open_store(load_config(config).database.url)
    try:
        revoke_user(store, name, datetime.now(UTC))
    finally:
        store.close()
    out_console().print(f"user {name}: token revoked", markup=False)


def audit(
    job: Annotated[str | None, typer.Option("--job", help="Only this job's records.")]
    = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="The newest N records.")]
    = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    config: ConfigOpt = None,
) -> None:
    """The audit trail: every submit and cancel, who (API user or local:<os user>), when.

    Example: gpuopt users audit --job quickstart-train-6vw8zw
    """
    import json

    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.tables import ID, Col, print_table
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.store import open_store_if_exists
    from gpuopt.orchestrator.store.users_repo import audit_of

    store = open_store_if_exists(load_config(config).database.url)
    rows = []
    if store is not None:
        try:
            with store.session() as session:
                rows = audit_of(session, [job] if job else None, newest=limit)
        finally:
            store.close()
    if as_json:
        typer.echo(json.dumps([{"at": r.at.isoformat(), "actor": r.actor,
                                "action": r.action, "job": r.job_id, "detail": r.detail}
                               for r in rows], indent=2))
        return
    if not rows:
        out_console().print("no audit records")
        return
    print_table(out_console(), [Col("at (UTC)", ID), Col("who", ID), Col("what", ID),
                                Col("job", ID), Col("detail", optional=1)],
                [[f"{r.at:%Y-%m-%d %H:%M:%S}", r.actor, r.action, r.job_id, r.detail or ""]
                 for r in rows])


def register(app: typer.Typer) -> None:
    users_app = typer.Typer(help="Users of the HTTP API (on the control node).\n\n"
                            "Example: gpuopt users add alice --team nlp",
                            no_args_is_help=True)
    users_app.command("add")(add)
    users_app.command("list")(list_)
    users_app.command("revoke")(revoke)
    users_app.command("audit")(audit)
    app.add_typer(users_app, name="users")
