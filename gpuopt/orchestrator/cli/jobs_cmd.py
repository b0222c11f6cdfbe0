"""`gpuopt jobs`, `gpuopt status ID`, `gpuopt logs ID`, `gpuopt cancel ID`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuopt.orchestrator.cli.completion import complete_job_id

if TYPE_CHECKING:

    from rich.console import Console

    from gpuopt.orchestrator.store import Store
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobEventRow, JobRow

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="Configuration file (TOML).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
WideOpt = Annotated[bool, typer.Option("--wide", help="Every column, however wide the "
                                       "terminal.")]


def register(app: typer.Typer) -> None:
    app.command("jobs")(jobs)
    app.command("status")(status)
    app.command("logs")(logs)
    app.command("cancel")(cancel)


def _open(config: Path | None) -> Store | None:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.store import open_store_if_exists

    return open_store_if_exists(load_config(config).database.url)


def _no_job(job_id: str | None) -> Exception:
    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.views.job_status import NO_JOB_YET

    if job_id is None:
        return UserError(NO_JOB_YET, exit_code=2)
    return UserError(f"no job {job_id!r}: see `gpuopt jobs` for the ids", exit_code=2)


def _load_job(
    job_id: str | None, config: Path | None, with_events: bool = False
) -> tuple[JobRow, list[AttemptRow], list[JobEventRow]]:
    """A job (by id or unique prefix; None: the newest submitted), its attempts and, if
    asked, its events."""
    from gpuopt.orchestrator.views.job_status import load_job

    store = _open(config)
    if store is None:
        raise _no_job(job_id)
    try:
        return load_job(store, job_id, with_events)
    finally:
        store.close()


def jobs(
    status: Annotated[list[str] | None, typer.Option(
        "--status", help="Only jobs in this status (repeatable): queued, launching, running, "
        "preempted, succeeded, failed, cancelled; 'live' = the first four.")] = None,
    owner: Annotated[str | None, typer.Option("--owner", help="Only this owner's jobs.")]
    = None,
    team: Annotated[str | None, typer.Option("--team", help="Only this team's jobs.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=0,
                                       help="The newest N jobs (0 = all).")] = 0,
    wide: WideOpt = False,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """List jobs: id, name, owner, status, placement, attempts, cost so far.

    Example: gpuopt jobs --status live --team nlp --limit 20
    """
    from gpuopt.orchestrator.cli.remote import remote_or_none

    if (remote := remote_or_none()) is not None:
        from gpuopt.orchestrator.cli import remote_cmds

        remote_cmds.jobs(remote, status, owner, team, limit, wide, as_json)
        return
    from datetime import UTC, datetime

    from gpuopt.orchestrator.store.jobs_repo import attempts_of, list_jobs
    from gpuopt.orchestrator.views.jobs import job_view

    statuses = _statuses(status)
    store = _open(config)
    views = []
    if store is not None:
        try:
            with store.session() as session:
                rows = list_jobs(session, statuses, owner=owner, team=team, limit=limit)
                attempts = attempts_of(session, [j.id for j in rows])
        finally:
            store.close()
        now = datetime.now(UTC)
        views = [job_view(j, attempts[j.id], now) for j in rows]
    show_jobs(views, as_json, wide,
              filtered=bool(statuses) or owner is not None or team is not None)


def show_jobs(views: list[dict[str, Any]], as_json: bool, wide: bool, *,
              filtered: bool) -> None:
    """The job list as JSON or a table (local and remote alike); an empty one says why."""
    import json

    from gpuopt.orchestrator.cli.console import out_console

    if as_json:
        typer.echo(json.dumps(views, indent=2))
        return
    if not views:
        out_console().print("no jobs match these filters" if filtered
                            else "no jobs yet: `gpuopt submit job.yaml`")
        return
    print_jobs(out_console(), views, wide=wide)


def _statuses(given: list[str] | None) -> list[str] | None:
    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.store.jobs_tables import JOB_STATUSES, LIVE_JOB_STATUSES

    if not given:
        return None
    out: list[str] = []
    for value in (v.strip() for g in given for v in g.split(",")):
        if value == "live":
            out += LIVE_JOB_STATUSES
        elif value in JOB_STATUSES:
            out.append(value)
        else:
            raise UserError(f"--status {value!r}: choose from live, {', '.join(JOB_STATUSES)}",
                            exit_code=2)
    return out


def print_jobs(console: Console, views: list[dict[str, Any]], *, wide: bool = False) -> None:
    """The jobs table: id, status and numbers whole at any width; text columns wrap."""
    from gpuopt.orchestrator.cli.tables import ID, NUM, Col, money, print_table

    cols = [Col("id", ID), Col("name", optional=3), Col("owner", optional=2),
            Col("team", optional=4), Col("status", ID), Col("placement", min_width=10),
            Col("att.", NUM, optional=1), Col("cost $", NUM)]
    rows = [[v["id"], v["name"], v["owner"] or "-", v["team"] or "-", v["status"],
             v["placement"] or "-", str(v["attempts"]),
             money(v["cost"]) + ("*" if v["cost_is_simulated"] else "")]
            for v in views]
    print_table(console, cols, rows, wide=wide)
    if any(v["cost_is_simulated"] for v in views):
        console.print("* simulated: local executor runs, priced as if on the planned placement",
                      style="dim")


def status(
    job_id: Annotated[str | None, typer.Argument(
        help="Job id (or a unique prefix; default: the newest job).",
        autocompletion=complete_job_id, show_default=False)] = None,
    wide: WideOpt = False,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Every attempt of a job: placement, price, duration, cost, end reason; progress.

    Example: gpuopt status quickstart-train-6vw8zw
    """
    from gpuopt.orchestrator.cli.remote import remote_or_none

    if (remote := remote_or_none()) is not None:
        from gpuopt.orchestrator.cli import remote_cmds

        remote_cmds.status(remote, job_id, wide, as_json)
        return
    import json
    from datetime import UTC, datetime

    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.views.job_status import load_job, status_view

    settings = load_config(config)
    store = _open(config)
    if store is None:
        raise _no_job(job_id)
    try:  # one store for the job and its view
        job, attempts, events = load_job(store, job_id)
        view = status_view(store, settings, job, attempts, events, datetime.now(UTC))
    finally:
        store.close()
    if as_json:
        typer.echo(json.dumps(view, indent=2))
        return
    print_status(view, wide)


def _measured_lines(a: dict[str, Any]) -> list[str]:
    """'attempt 1 measured: ...' and the low-utilisation warning, for the text view."""
    t = a.get("telemetry")
    if not t:
        return []
    est = a.get("estimated") or {}
    peaks = " / ".join(f"{p:,}" for p in t["peak_memory_mib"])
    parts = [f"peak {peaks} MiB per GPU"
             + (f" (estimate {est['peak_memory_mib']:,})" if est.get("peak_memory_mib")
                else "")]
    tps, est_tps = t["tokens_per_second"], est.get("tokens_per_second")
    if tps is not None:
        parts.append(f"{tps:,.0f} tokens/s" + (
            f" (estimate {est_tps:,.0f}, {tps / est_tps:.2f}x)" if est_tps else ""))
    if t["mean_utilization_pct"] is not None:
        median = a.get("median_utilization_pct")
        parts.append(f"GPU busy {t['mean_utilization_pct']:.0f}%"
                     + (f" (median {median:.0f}%)" if median is not None else ""))
    if t["energy_wh"] is not None:
        parts.append(f"{t['energy_wh']:,.1f} Wh")
    parts.append(f"{t['samples']} samples")
    lines = [f"attempt {a['attempt']} measured: " + ", ".join(parts)]
    if a.get("utilization_warning"):
        lines.append(f"  warning: {a['utilization_warning']}")
    return lines


def print_status(view: dict[str, Any], wide: bool = False) -> None:
    from rich.text import Text

    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.tables import ID, NUM, Col, money, print_table, short_market
    from gpuopt.orchestrator.views.jobs import SIMULATED, plan_line

    console = out_console()
    progress = view["progress"]
    shown = (f"{progress['step']}/{progress['total']}" if progress and progress["total"]
             else str(progress["step"]) if progress else "none reported")
    console.print(Text.assemble((view["id"], "bold"), f"  {view['name']}  ",
                                (view["status"], "bold"), f"  progress {shown}"))
    console.print(Text(f"owner {view['owner'] or '-'}, team {view['team'] or '-'}, executor "
                       f"{view['executor']}, submitted {when(view['submitted_at'])}"
                       + (f", deadline {when(view['deadline_at'])}" if view["deadline_at"]
                          else "")
                       + (f", budget ${view['budget']}" if view["budget"] else "")))
    if view.get("plan"):
        console.print(Text(plan_line(view["plan"])))
    if view.get("spot_policy"):
        shown = view["spot_policy"]
        console.print(Text(f"spot policy: {shown['sentence']}"))
        if shown["last_decision"]:
            console.print(Text(f"  last decision: {shown['last_decision']}", style="dim"))
    cols = [Col("#", NUM), Col("placement", min_width=14), Col("instance", ID, optional=2),
            Col("$/h", NUM), Col("held s", NUM), Col("cost $", NUM), Col("end", min_width=9),
            Col("wasted s", NUM, optional=1)]
    rows = []
    for a in view["attempt_list"]:
        nodes = f"{a['num_nodes']}x" if a.get("num_nodes", 1) > 1 else ""
        place = (f"{nodes}{a['gpu_count']}x{a['gpu']} {short_market(a['market'])} "
                 f"{a['cloud']}/{a['zone'] or a['region']}")
        end = str(a["end_reason"] or a["status"])
        if a["status"] == "stop_failed":
            end = "stop_failed"
        elif a["exit_code"] not in (None, 0):
            end += f" (exit {a['exit_code']})"
        elif a["failure_kind"] not in (None, "program"):
            end += f" ({str(a['failure_kind']).replace('_', ' ')})"
        rows.append([str(a["attempt"]), place, a["instance_type"], a["price_per_hour"],
                     f"{a['duration_seconds']:,.1f}", money(a["cost"]), end,
                     "-" if a["wasted_seconds"] is None else f"{a['wasted_seconds']:,.1f}"])
    if rows:
        print_table(console, cols, rows, wide=wide)
    for a in view["attempt_list"]:
        for i, line in enumerate(_measured_lines(a)):
            console.print(Text(line, style="yellow" if i else ""))
        if a["status"] == "stop_failed":
            console.print(Text(
                f"attempt {a['attempt']} ended {a['end_reason']}, but stopping it failed "
                f"{a['stop_failures']} time(s) ({a['stop_error']}); retried with back-off, "
                f"next at {when(a['next_stop_at'])}; its cost stopped at its end; nothing "
                "new starts for the job until it is stopped", style="red"))
    label = SIMULATED if view["cost_is_simulated"] else "cost"
    console.print(Text(f"{label}: ${view['cost']} (on-demand equivalent "
                       f"${view['on_demand_cost']})"))
    if view["last_error"]:
        console.print(Text(view["last_error"], style="red"))
    for e in view["events"][-8:]:
        console.print(Text(f"  {when(e['at'])}  {e['kind']}: {e['message']}", style="dim"))


def when(iso: str) -> str:
    """'2026-12-01T08:41:46.686132+00:00' -> '2026-12-01 08:41:46 UTC' (no microseconds)."""
    from datetime import UTC, datetime

    return f"{datetime.fromisoformat(iso).astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def logs(
    job_id: Annotated[str | None, typer.Argument(
        help="Job id (or a unique prefix; default: the newest job).",
        autocompletion=complete_job_id, show_default=False)] = None,
    attempt: Annotated[int | None, typer.Option("--attempt", min=1,
                                                help="Attempt number (default: the last).")]
    = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new lines.")]
    = False,
    config: ConfigOpt = None,
) -> None:
    """Print an attempt's output.

    Example: gpuopt logs quickstart-train-6vw8zw --attempt 1 --follow
    """
    from gpuopt.orchestrator.cli.remote import remote_or_none

    if (remote := remote_or_none()) is not None:
        from gpuopt.orchestrator.cli import remote_cmds

        remote_cmds.logs(remote, job_id, attempt, follow)
        return
    from gpuopt.orchestrator.views.job_logs import choose_attempt, log_lines

    job, attempts, _ = _load_job(job_id, config)
    chosen = choose_attempt(job, attempts, attempt)
    store = _open(config)
    try:
        for line in log_lines(store, job, chosen, follow):
            typer.echo(line)
    except KeyboardInterrupt:
        return
    finally:
        if store is not None:
            store.close()


def cancel(
    job_id: Annotated[str, typer.Argument(help="Job id (or a unique prefix).",
                                          autocompletion=complete_job_id)],
    config: ConfigOpt = None,
) -> None:
    """Stop a job: its cluster or processes go, its attempt is closed, its ledger stays.

    Example: gpuopt cancel quickstart-train-6vw8zw
    """
    from gpuopt.orchestrator.cli.remote import remote_or_none

    if (remote := remote_or_none()) is not None:
        from gpuopt.orchestrator.cli import remote_cmds

        remote_cmds.cancel(remote, job_id)
        return
    from datetime import UTC, datetime

    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.reconcile.attempts import ExecutorCache
    from gpuopt.orchestrator.reconcile.step import cancel_job

    store = _open(config)
    if store is None:
        raise _no_job(job_id)
    try:
        job = cancel_job(store, ExecutorCache(), job_id, datetime.now(UTC))
    finally:
        store.close()
    out_console().print(f"{job.id}: {job.status}")
