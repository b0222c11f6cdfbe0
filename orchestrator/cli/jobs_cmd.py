"""`gpuopt jobs`, `gpuopt status ID`, `gpuopt logs ID`, `gpuopt cancel ID`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from gpuopt.orchestrator.store import Store
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobEventRow, JobRow

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="Configuration file (TOML).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def register(app: typer.Typer) -> None:
    app.command("jobs")(jobs)
    app.command("status")(status)
    app.command("logs")(logs)
    app.command("cancel")(cancel)


def _open(config: Path | None) -> Store | None:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.store import open_store_if_exists

    return open_store_if_exists(load_config(config).database.url)


def _no_job(job_id: str) -> Exception:
    from gpuopt.core.errors import UserError

    return UserError(f"no job {job_id!r}: see `gpuopt jobs` for the ids", exit_code=2)


def _load_job(
    job_id: str, config: Path | None, with_events: bool = False
) -> tuple[JobRow, list[AttemptRow], list[JobEventRow]]:
    """A job (by id or unique prefix), its attempts and, if asked, its events."""
    from gpuopt.orchestrator.store.jobs_repo import attempts_of, events_of, find_job

    store = _open(config)
    if store is None:
        raise _no_job(job_id)
    try:
        with store.session() as session:
            job = find_job(session, job_id)
            attempts = attempts_of(session, [job.id])[job.id]
            events = events_of(session, job.id) if with_events else []
    finally:
        store.close()
    return job, attempts, events


def jobs(as_json: JsonOpt = False, config: ConfigOpt = None) -> None:
    """List jobs: id, name, owner, status, placement, attempts, cost so far."""
    import json
    from datetime import UTC, datetime

    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.job_views import job_view
    from gpuopt.orchestrator.store.jobs_repo import attempts_of, list_jobs

    store = _open(config)
    views = []
    if store is not None:
        try:
            with store.session() as session:
                rows = list_jobs(session)
                attempts = attempts_of(session, [j.id for j in rows])
        finally:
            store.close()
        now = datetime.now(UTC)
        views = [job_view(j, attempts[j.id], now) for j in rows]
    if as_json:
        typer.echo(json.dumps(views, indent=2))
        return
    if not views:
        out_console().print("no jobs yet: `gpuopt submit job.yaml`")
        return
    from rich.table import Table

    table = Table(title_justify="left")
    for col in ("id", "name", "owner", "status", "placement", "attempts", "cost USD"):
        # the id is what `gpuopt status ID` takes: never truncated; the rest may wrap
        table.add_column(col, justify="right" if col in ("attempts", "cost USD") else "left",
                         no_wrap=col in ("id", "status"))
    for v in views:
        cost = v["cost"] + (" (simulated)" if v["cost_is_simulated"] else "")
        table.add_row(v["id"], v["name"], v["owner"] or "", v["status"], v["placement"] or "",
                      str(v["attempts"]), cost)
    out_console().print(table)


def status(
    job_id: Annotated[str, typer.Argument(help="Job id (or a unique prefix).")],
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Every attempt of a job: placement, price, duration, cost, end reason; progress."""
    import json
    from datetime import UTC, datetime

    from gpuopt.orchestrator.job_views import attempt_view, job_view

    job, attempts, events = _load_job(job_id, config, with_events=True)
    now = datetime.now(UTC)
    view = job_view(job, attempts, now)
    view["attempt_list"] = [attempt_view(a, now) for a in attempts]
    view["events"] = [{"at": e.at.isoformat(), "kind": e.kind, "message": e.message}
                      for e in events]
    if as_json:
        typer.echo(json.dumps(view, indent=2))
        return
    _print_status(view)


def _print_status(view: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.job_views import SIMULATED

    console = out_console()
    progress = view["progress"]
    shown = (f"{progress['step']}/{progress['total']}" if progress and progress["total"]
             else str(progress["step"]) if progress else "none reported")
    console.print(Text.assemble((view["id"], "bold"), f"  {view['name']}  ",
                                (view["status"], "bold"), f"  progress {shown}"))
    console.print(f"owner {view['owner'] or '-'}, team {view['team'] or '-'}, executor "
                  f"{view['executor']}, submitted {view['submitted_at']}"
                  + (f", deadline {view['deadline_at']}" if view["deadline_at"] else "")
                  + (f", budget ${view['budget']}" if view["budget"] else ""))
    table = Table(title_justify="left")
    for col in ("#", "placement", "USD/h", "duration s", "cost USD", "end", "wasted s"):
        table.add_column(col)
    for a in view["attempt_list"]:
        place = f"{a['gpu']} x{a['gpu_count']} {a['market']} {a['cloud']}/" \
                f"{a['zone'] or a['region']} {a['instance_type']}"
        end = a["end_reason"] or a["status"]
        if a["exit_code"] not in (None, 0):
            end += f" (exit {a['exit_code']})"
        table.add_row(str(a["attempt"]), place, a["price_per_hour"],
                      f"{a['duration_seconds']:.1f}", a["cost"], end,
                      "" if a["wasted_seconds"] is None else f"{a['wasted_seconds']:.1f}")
    console.print(table)
    label = SIMULATED if view["cost_is_simulated"] else "cost"
    console.print(f"{label}: ${view['cost']} (on-demand equivalent ${view['on_demand_cost']})")
    if view["last_error"]:
        console.print(Text(view["last_error"], style="red"))
    for e in view["events"][-8:]:
        console.print(Text(f"  {e['at']}  {e['kind']}: {e['message']}", style="dim"))


def logs(
    job_id: Annotated[str, typer.Argument(help="Job id (or a unique prefix).")],
    attempt: Annotated[int | None, typer.Option("--attempt", min=1,
                                                help="Attempt number (default: the last).")]
    = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new lines.")]
    = False,
    config: ConfigOpt = None,
) -> None:
    """Print an attempt's output."""
    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.attempts import ExecutorCache

    job, attempts, _ = _load_job(job_id, config)
    if not attempts:
        raise UserError(f"{job.id} has not been launched yet ({job.status})", exit_code=2)
    chosen = attempts[-1] if attempt is None else next(
        (a for a in attempts if a.number == attempt), None)
    if chosen is None:
        raise UserError(f"{job.id} has attempts 1..{len(attempts)}, not {attempt}", exit_code=2)
    executor = ExecutorCache()(job.executor)
    printed = False
    try:
        for line in executor.logs(chosen.cluster_name, follow=follow):
            typer.echo(line)
            printed = True
    except KeyboardInterrupt:
        return
    if not printed and chosen.last_log_lines:
        typer.echo(chosen.last_log_lines)


def cancel(
    job_id: Annotated[str, typer.Argument(help="Job id (or a unique prefix).")],
    config: ConfigOpt = None,
) -> None:
    """Stop a job: its cluster or processes go, its attempt is closed, its ledger stays."""
    from datetime import UTC, datetime

    from gpuopt.orchestrator.attempts import ExecutorCache
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.reconcile import cancel_job

    store = _open(config)
    if store is None:
        raise _no_job(job_id)
    try:
        job = cancel_job(store, ExecutorCache(), job_id, datetime.now(UTC))
    finally:
        store.close()
    out_console().print(f"{job.id}: {job.status}")
