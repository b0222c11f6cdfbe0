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
    from gpuopt.orchestrator.placement_inputs import PlannedJob
    from gpuopt.orchestrator.store import Store
    from gpuopt.orchestrator.submit_checks import JobFile

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
    from datetime import UTC, datetime

    from gpuopt.core.errors import UserError
    from gpuopt.jobs.loader import parse_job_spec, read_job_file
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.plan_cmd import print_plan
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.placement_inputs import plan_spec
    from gpuopt.orchestrator.store import open_store, open_store_if_exists
    from gpuopt.orchestrator.submit_checks import JobFile

    now = datetime.now(UTC)
    # The job file is read once: the text validated is the text stored (and checked).
    job = JobFile(job_file, read_job_file(job_file))
    spec = parse_job_spec(job.text, str(job_file), base_dir=job_file.resolve().parent,
                          purpose="plan", now=now)
    if not spec.run:
        raise UserError(f"{job_file}: the job has no `run` command: nothing to execute",
                        exit_code=2)
    _secret_values(job_file, spec)  # every named secret is set (also for --dry-run)
    settings = load_config(config)
    kind = executor or settings.executor.resolved(settings.clouds).value
    if kind not in ("local", "skypilot"):
        raise UserError(f"--executor {kind!r}: use local or skypilot", exit_code=2)
    drill, launchable = _pre_store_checks(job, spec, kind, preempt_after)
    store = (open_store_if_exists if dry_run else open_store)(settings.database.url)
    try:
        clouds = None if launchable is None else _narrowed(settings, launchable)
        planned = (plan_spec(spec, settings, store, now, top=5) if clouds is None
                   else plan_spec(spec, settings, store, now, top=5, clouds=clouds))
        print_plan(spec.name or job_file.name, planned)
        from gpuopt.orchestrator.cli.console import err_console
        from gpuopt.orchestrator.cli.gpu_names import bare_gpu_notes

        for note in bare_gpu_notes(job.text):
            err_console().print(f"note: {note}", markup=False, highlight=False)
        if planned.plan.best is None:
            raise UserError(f"{job_file}: refused, it fits nowhere: {_why(planned)}",
                            exit_code=3)
        if dry_run or store is None:
            if kind == "skypilot":
                _print_sky_task(job, spec, planned, now)
            out_console().print("dry run: nothing stored")
            return
        job_id = _store_with_drill(store, job, spec, planned, kind, now, drill, wait)
        out_console().print(f"submitted [bold]{job_id}[/] (queued, executor {kind})")
        if drill:
            out_console().print("preemption drill: " + ", ".join(
                f"attempt {n} after {t:g} s" for n, t in enumerate(drill, 1)))
        if wait:
            raise typer.Exit(_wait(store, settings, job_id, interval))
        out_console().print(
            f"run `gpuopt daemon` to run it, or follow it with `gpuopt status {job_id}`")
    finally:
        if store is not None:
            store.close()


def _narrowed(settings: Settings, launchable: frozenset[str]) -> frozenset[str]:
    """The executor's clouds, within [clouds] enabled when that is set."""
    enabled = settings.clouds.enabled
    return launchable & frozenset(enabled) if enabled else launchable


def _pre_store_checks(job: JobFile, spec: JobSpec, kind: str, preempt_after: str | None
                      ) -> tuple[tuple[float, ...], frozenset[str] | None]:
    """Refuse (exit 2) what the executor cannot run; returns the drill's times and the
    clouds the executor can launch on (None: any)."""
    from gpuopt.jobs.executors.fault_injection import parse_preempt_after
    from gpuopt.orchestrator.submit_checks import SubmitRefused, check_runnable

    drill: tuple[float, ...] = ()
    if preempt_after is not None:
        try:
            drill = parse_preempt_after(preempt_after)
        except ValueError as err:
            raise SubmitRefused(f"--preempt-after {err}") from None
    launchable = check_runnable(job, spec, kind, preempt_after=drill)
    return drill, launchable


def _store_with_drill(store: Store, job: JobFile, spec: JobSpec, planned: PlannedJob,
                      kind: str, now: datetime, drill: tuple[float, ...],
                      runs_here: bool = False) -> str:
    """The drill file is written before the job row commits, so no launch can miss it."""
    from gpuopt.jobs.executors.fault_injection import PreemptionDrills
    from gpuopt.orchestrator.attempts import drills_dir
    from gpuopt.orchestrator.store.jobs_repo import new_job_id

    job_id = new_job_id(spec.name or job.path.stem)
    drills = PreemptionDrills(drills_dir())
    if drill:
        drills.save(job_id, drill)
    try:
        return _store_job(store, job, spec, planned, kind, now, job_id, runs_here=runs_here)
    except BaseException:
        drills.discard(job_id)
        raise


def _print_sky_task(job: JobFile, spec: JobSpec, planned: PlannedJob, now: datetime) -> None:
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.sky_preview import first_attempt_task_yaml
    from gpuopt.orchestrator.store.jobs_repo import new_job_id

    best = planned.plan.best
    assert best is not None
    text = first_attempt_task_yaml(new_job_id(spec.name or job.path.stem), job.path, job.text,
                                   spec, best.offer, now)
    out_console().out(text, end="", highlight=False)


def _why(planned: PlannedJob) -> str:
    plan = planned.plan
    if plan.nearest_miss:
        return plan.nearest_miss
    reasons = "; ".join(f"{e.gpu}: {e.reason}" for e in plan.excluded)
    return reasons or "no offer matches the job's resources"


def _secret_values(job_file: Path, spec: JobSpec) -> dict[str, str]:
    import os

    from gpuopt.orchestrator.job_secrets import values_from_environment

    return values_from_environment(spec.secrets, os.environ, str(job_file))


def _store_job(store: Store, job: JobFile, spec: JobSpec, planned: PlannedJob, kind: str,
               now: datetime, job_id: str | None = None, *, runs_here: bool = False) -> str:
    """Store the job (queued): the text read at submit and ``spec`` resolved (jobs.resolved,
    what the daemon reads); its secrets' values sealed for the nodes that may run it, in
    the same transaction (orchestrator/job_secrets.py). ``runs_here``: this process runs
    the job (--wait), so its own key is published first; so it is when no node has
    published one yet (the daemon, started later on this data directory, shares it)."""
    import json

    from gpuopt.core.money import to_micros
    from gpuopt.jobs.executors.crash_points import crash_point
    from gpuopt.jobs.resolved import resolved_json
    from gpuopt.orchestrator.job_secrets import publish_key, seal_for_job
    from gpuopt.orchestrator.store.jobs_repo import insert_job, new_job_id
    from gpuopt.orchestrator.store.jobs_tables import JobRow
    from gpuopt.orchestrator.store.secrets_repo import published_keys

    job_file = job.path
    secrets = _secret_values(job_file, spec)
    job_id = job_id or new_job_id(spec.name or job_file.stem)
    best = planned.plan.best
    assert best is not None
    row = JobRow(
        id=job_id, name=spec.name or job_file.stem, owner=spec.owner, team=spec.team,
        status=JobStatus.QUEUED, spec_yaml=job.text, spec_json=resolved_json(spec),
        spec_path=str(job_file.resolve()), submitted_at=now, deadline_at=spec.deadline_at(now),
        budget_micros=to_micros(spec.budget) if spec.budget is not None else None,
        plan_json=json.dumps({
            "offers_source": planned.offers_source,
            "snapshot_as_of": str(planned.snapshot_as_of) if planned.snapshot_as_of else None,
            "candidates": [c.to_json() for c in planned.plan.candidates],
        }),
        executor=kind, updated_at=now,
    )
    if secrets:
        with store.session() as session:
            keys = published_keys(session)
        if runs_here or not keys:
            publish_key(store, now)
    with store.transaction() as session:
        insert_job(session, row, f"queued; plan: {best.reason}")
        if secrets:
            seal_for_job(session, job_id, secrets)
            crash_point("sealing")
    return job_id


def _wait(store: Store, settings: Settings, job_id: str, interval: float) -> int:
    """Reconcile in the foreground until the job ends; returns the exit code."""
    import time
    from datetime import UTC, datetime

    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

    from gpuopt.orchestrator.attempts import ExecutorCache
    from gpuopt.orchestrator.cli.console import err_console, out_console
    from gpuopt.orchestrator.job_secrets import sweep
    from gpuopt.orchestrator.job_views import progress_of
    from gpuopt.orchestrator.reconcile import reconcile_once
    from gpuopt.orchestrator.store.jobs_repo import attempts_of, find_job

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
    from gpuopt.orchestrator.attempts import checkpoint_dir, load_stored_spec
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.job_views import SIMULATED, job_view, where
    from gpuopt.orchestrator.store.jobs_repo import attempts_of, find_job

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
