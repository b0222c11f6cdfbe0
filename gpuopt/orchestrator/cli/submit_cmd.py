"""`gpuopt submit job.yaml [--dry-run] [--wait]`: validate, plan, store as queued; --wait
runs the reconcile loop in the foreground until the job ends (no daemon needed)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpuopt.jobs.states import TERMINAL_JOB_STATUSES, JobStatus

if TYPE_CHECKING:
    from datetime import datetime

    from gpuopt.jobs.spec import JobSpec
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.reconcile.placement_inputs import PlannedJob
    from gpuopt.orchestrator.store import Store
    from gpuopt.orchestrator.submit.service import JobFile

TERMINAL = TERMINAL_JOB_STATUSES


def register(app: typer.Typer) -> None:
    app.command("submit")(submit)


def submit(
    job_file: Annotated[Path, typer.Argument(help="The job.yaml to run.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate and plan; store nothing.")]
    = False,
    wait: Annotated[bool, typer.Option(
        "--wait", help="Run the job in the foreground until it ends (no daemon needed).")] = False,
    executor: Annotated[str | None, typer.Option(
        "--executor", help="local or skypilot (default: from config; local without a cloud).")]
    = None,
    interval: Annotated[float, typer.Option(
        "--interval", min=0.2, help="Seconds between reconcile steps with --wait.")] = 1.0,
    preempt_after: Annotated[str | None, typer.Option(
        "--preempt-after", metavar="DURATIONS",
        help="A preemption drill (local executor): preempt the n-th attempt this long after "
             "it starts, then resume from the checkpoint. "
             "Example: --preempt-after 20s,45s")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="Configuration file (TOML).")]
    = None,
) -> None:
    """Plan JOB_FILE on the prices of this moment and queue it.

    Example: gpuopt submit deploy/examples/quickstart.yaml --wait

    Example: gpuopt submit deploy/examples/quickstart.yaml --wait --preempt-after 4s
    """
    from gpuopt.orchestrator.cli.remote import remote_or_none

    if (remote := remote_or_none()) is not None:
        from gpuopt.orchestrator.cli import remote_submit

        remote_submit.submit(remote, job_file, dry_run, wait, executor, interval,
                             preempt_after)
        return
    import os
    from datetime import UTC, datetime

    from gpuopt.core.errors import UserError
    from gpuopt.jobs.loader import read_job_file
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.plan_cmd import print_plan
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.store import open_store, open_store_if_exists
    from gpuopt.orchestrator.submit.service import (
        JobFile,
        check_executor,
        plan_job,
        read_job,
        require_fit,
        store_job,
    )

    now = datetime.now(UTC)
    # The job file is read once: the text validated is the text stored (and checked).
    job = JobFile(job_file, read_job_file(job_file))
    sub = read_job(job, now, os.environ)  # every named secret is set (also for --dry-run)
    settings = load_config(config)
    kind = executor or settings.executor.resolved(settings.clouds).value
    if kind not in ("local", "skypilot"):
        raise UserError(f"--executor {kind!r}: use local or skypilot", exit_code=2)
    drill = _drill(preempt_after)
    launchable = check_executor(sub, kind, drill, dry_run=dry_run)
    sky_skipped: str | None = None
    if dry_run and kind == "skypilot":
        from gpuopt.orchestrator.submit.checks import sky_dry_run

        asked = sky_dry_run(sub.spec)
        launchable, sky_skipped = asked.clouds, asked.skipped
    store = (open_store_if_exists if dry_run else open_store)(settings.database.url)
    try:
        planned = plan_job(sub, settings, store, now, launchable, hint_nodes=True,
                           executor=kind)
        print_plan(spec_name(sub.spec, job_file), planned)
        from gpuopt.orchestrator.cli.console import err_console
        from gpuopt.orchestrator.cli.gpu_names import bare_gpu_notes

        for note in bare_gpu_notes(job.text):
            err_console().print(f"note: {note}", markup=False, highlight=False)
        require_fit(sub, planned)
        if dry_run or store is None:
            if kind == "skypilot":
                _print_sky_task(job, sub.spec, planned, now, sky_skipped)
            out_console().print("dry run: nothing stored")
            return
        job_id = store_job(store, sub, planned, kind, now, drill=drill, runs_here=wait)
        out_console().print(f"submitted [bold]{job_id}[/] (queued, executor {kind})")
        if drill:
            out_console().print("preemption drill: " + ", ".join(
                f"attempt {n} after {t:g} s" for n, t in enumerate(drill, 1)))
        if wait:
            raise typer.Exit(_wait(store, settings, job_id, interval))
        out_console().print(_who_runs_it(store, settings, job_id, datetime.now(UTC)))
    finally:
        if store is not None:
            store.close()


def spec_name(spec: JobSpec, job_file: Path) -> str:
    return spec.name or job_file.name


def _drill(preempt_after: str | None) -> tuple[float, ...]:
    """The preemption drill's times (--preempt-after), refused with exit 2 when unreadable."""
    from gpuopt.jobs.executors.fault_injection import parse_preempt_after
    from gpuopt.orchestrator.submit.checks import SubmitRefused

    if preempt_after is None:
        return ()
    try:
        return parse_preempt_after(preempt_after)
    except ValueError as err:
        raise SubmitRefused(f"--preempt-after {err}") from None


def _print_sky_task(job: JobFile, spec: JobSpec, planned: PlannedJob, now: datetime,
                    sky_skipped: str | None) -> None:
    """The task; then SkyPilot's optimizer's pick for it, or in one line why SkyPilot
    could not be asked."""
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.store.jobs_repo import new_job_id
    from gpuopt.orchestrator.submit.sky_preview import first_attempt_task, optimizer_check

    best = planned.plan.best
    assert best is not None
    preview = first_attempt_task(new_job_id(spec.name or job.path.stem), job.path, job.text,
                                 spec, best.offer, now, nodes=best.nodes)
    console = out_console()
    console.out(preview.text, end="", highlight=False)
    skipped = preview.skipped or sky_skipped  # the catalog first: nothing checks without it
    line = (f"SkyPilot's own check skipped: {skipped}" if skipped is not None
            else optimizer_check(preview))
    console.out(line, highlight=False)


def _who_runs_it(store: Store, settings: Settings, job_id: str, now: datetime) -> str:
    """Whether a daemon leads for this store (the leadership table) and will run the job."""
    from gpuopt.orchestrator.daemon.status import leading_daemon
    from gpuopt.orchestrator.store.url import resolve_url

    leader = leading_daemon(store, settings, resolve_url(settings.database.url), now)
    if leader is None:
        return (f"no daemon runs for this store: start one (`gpuopt daemon`) to run it, "
                f"then follow it with `gpuopt status {job_id}`")
    return (f"the daemon on {leader.hostname} (pid {leader.pid}) leads for this store and "
            f"will start it: follow it with `gpuopt status {job_id}`")


def _wait(store: Store, settings: Settings, job_id: str, interval: float) -> int:
    """Reconcile in the foreground until the job ends; returns the exit code."""
    import time
    from datetime import UTC, datetime

    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

    from gpuopt.orchestrator.cli.console import err_console, out_console
    from gpuopt.orchestrator.reconcile.attempts import ExecutorCache
    from gpuopt.orchestrator.reconcile.step import reconcile_once
    from gpuopt.orchestrator.store.jobs_repo import attempts_of, find_job
    from gpuopt.orchestrator.submit.job_secrets import sweep
    from gpuopt.orchestrator.views.jobs import progress_of

    sweep(store)  # at every start of a loop: no ended job's secret stays behind
    executors = ExecutorCache(telemetry_interval=settings.telemetry.interval_seconds)
    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn())
    job_over = False
    try:
        with Progress(*columns, console=out_console()) as bar:
            task = bar.add_task("queued", total=None)
            while True:
                report = reconcile_once(store, executors, settings, datetime.now(UTC))
                for jid, message in report.errors:
                    if jid == job_id:
                        err_console().print(f"reconcile: {message}")
                with store.session() as session:
                    job = find_job(session, job_id)
                    attempts = attempts_of(session, [job_id])[job_id]
                progress = progress_of(attempts)
                label = f"{job.status} (attempt {len(attempts)})" if attempts else job.status
                if progress is not None:
                    bar.update(task, completed=progress[0], total=progress[1],
                               description=label)
                else:
                    bar.update(task, description=label)
                if job.status in TERMINAL:
                    job_over = True
                    break
                time.sleep(interval)
    except KeyboardInterrupt:
        err_console().print(
            f"stopped watching; {job_id} stays submitted (`gpuopt cancel {job_id}` stops it)")
        return 130
    finally:
        # The job is over unless watching was interrupted: then launches may be in flight.
        for said in executors.close(stop=job_over):
            err_console().print(said)
    _summary(store, job_id)
    return 0 if job.status == JobStatus.SUCCEEDED else 1


def _summary(store: Store, job_id: str) -> None:
    from datetime import UTC, datetime

    from gpuopt.core.money import from_micros
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.reconcile.attempts import checkpoint_dir, load_stored_spec
    from gpuopt.orchestrator.store.jobs_repo import attempts_of, find_job
    from gpuopt.orchestrator.views.jobs import SIMULATED, job_view, where

    with store.session() as session:
        job = find_job(session, job_id)
        attempts = attempts_of(session, [job_id])[job_id]
    view = job_view(job, attempts, datetime.now(UTC))
    console = out_console()
    held = sum(((a.ended_at or a.started_at) - a.started_at).total_seconds() for a in attempts)
    console.print(f"[bold]{job.id}[/] {job.status}: {len(attempts)} attempt(s), "
                  f"{view['preemptions']} preemption(s), {held:.1f} s held")
    for a in attempts:
        console.print(f"  attempt {a.number}: {where(a)} at "
                      f"${from_micros(a.price_per_hour_micros)}/h, {a.end_reason or a.status}")
    label = SIMULATED if job.executor == "local" else "cost"
    console.print(f"{label}: ${view['cost']} (on-demand equivalent ${view['on_demand_cost']})")
    if job.status != JobStatus.SUCCEEDED and job.last_error:
        from rich.text import Text

        console.print(Text(job.last_error, style="red"))
    if job.executor == "local":
        console.print(f"checkpoint directory: {checkpoint_dir(job, load_stored_spec(job))}")
