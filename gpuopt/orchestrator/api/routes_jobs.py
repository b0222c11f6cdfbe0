"""/api/v1/jobs: submit (multipart: the job file's text, its workdir as an archive),
list, status, logs (a stream with ``follow``), cancel. A member sees and cancels the
jobs it submitted; an admin every job."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, HTTPException, Query, UploadFile
from fastapi.responses import StreamingResponse

from gpuopt.orchestrator.api.deps import Ctx, CurrentUser, require_job_right
from gpuopt.orchestrator.api.schemas import JobView, SubmitAnswer, problems

router = APIRouter(prefix="/jobs", tags=["jobs"])
SAFE_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
STATUSES = ("queued", "launching", "running", "preempted", "succeeded", "failed",
            "cancelled", "live")


def _shown_name(filename: str) -> str:
    """The job file's name as the submitter typed it (for messages only, never opened):
    one line of printable text."""
    from gpuopt.core.safe_text import control_problem

    if not filename or len(filename) > 1024 or control_problem(filename) is not None:
        raise HTTPException(422, "filename: 1-1024 printable characters (the job file's "
                            "path as typed, shown in messages)")
    return filename


@router.post("", status_code=201, response_model=SubmitAnswer,
             responses=problems(403, 413, 422))
def submit(
    ctx: Ctx, user: CurrentUser,
    job_yaml: Annotated[str, Form(description="The job file's text.")],
    filename: Annotated[str, Form(description="The job file's path as typed (messages).")]
    = "job.yaml",
    executor: Annotated[str | None, Form(description="local or skypilot (default: the "
                                         "server's configuration).")] = None,
    secrets: Annotated[str, Form(description="JSON object: the values of the secrets "
                                 "the job names, from the submitter's environment.")] = "{}",
    workdir: Annotated[UploadFile | None, File(description="The job's workdir as a tar "
                                               "archive (gzip or not).")] = None,
    width: Annotated[int, Form(ge=40, le=400, description="The plan_text's width.")] = 80,
) -> dict[str, Any]:
    """Validate, plan and queue a job (as `gpuopt submit` does)."""
    from gpuopt.orchestrator.api.submit_remote import submit_remote

    shown = _shown_name(filename)
    try:
        values = json.loads(secrets)
    except ValueError:
        raise HTTPException(422, "secrets: a JSON object of NAME: value") from None
    if not isinstance(values, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in values.items()):
        raise HTTPException(422, "secrets: a JSON object of NAME: value (strings)")
    return submit_remote(ctx, user, job_yaml, shown, executor, values, workdir, width)


@router.get("", response_model=list[JobView], responses=problems(422))
def list_jobs(
    ctx: Ctx, user: CurrentUser,
    status: Annotated[list[str] | None, Query(
        description="Only these statuses (repeatable); live = the four live ones.")] = None,
    owner: Annotated[str | None, Query(max_length=128)] = None,
    team: Annotated[str | None, Query(max_length=128)] = None,
    limit: Annotated[int, Query(ge=0, le=10_000, description="The newest N (0 = all).")] = 0,
) -> list[dict[str, Any]]:
    """Jobs, oldest first: a member's own, an admin's all (as `gpuopt jobs --json`)."""
    from gpuopt.orchestrator.cli.jobs_cmd import _statuses
    from gpuopt.orchestrator.store.jobs_repo import attempts_of
    from gpuopt.orchestrator.store.jobs_repo import list_jobs as query
    from gpuopt.orchestrator.views.jobs import job_view

    statuses = _statuses(status)
    with ctx.store.session() as session:
        rows = query(session, statuses, owner=owner, team=team, limit=limit,
                     submitted_by=None if user.is_admin else user.name)
        attempts = attempts_of(session, [j.id for j in rows])
    now = ctx.clock()
    return [job_view(j, attempts[j.id], now) for j in rows]


def _job_for(ctx: Ctx, user: CurrentUser, job_id: str, action: str) -> Any:
    from gpuopt.orchestrator.views.job_status import load_job

    job, attempts, events = load_job(ctx.store, job_id)  # UserError (no such job): 404
    require_job_right(user, job.id, job.submitted_by, action)
    return job, attempts, events


@router.get("/{job_id}", response_model=JobView, responses=problems(403, 404))
def job_status(ctx: Ctx, user: CurrentUser, job_id: str) -> dict[str, Any]:
    """One job: attempts, events, plan, cost so far, progress (`gpuopt status --json`)."""
    from gpuopt.orchestrator.views.job_status import status_view

    job, attempts, events = _job_for(ctx, user, job_id, "see")
    return status_view(ctx.store, ctx.settings, job, attempts, events, ctx.clock())


@router.get("/{job_id}/logs", response_class=StreamingResponse,
            responses={200: {"content": {"text/plain": {}}}, **problems(403, 404, 422)})
def job_logs(
    ctx: Ctx, user: CurrentUser, job_id: str,
    attempt: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
    follow: bool = False,
) -> StreamingResponse:
    """An attempt's output (the last by default); ``follow`` streams it until it ends."""
    from gpuopt.orchestrator.views.job_logs import choose_attempt, log_lines

    job, attempts, _ = _job_for(ctx, user, job_id, "read the logs of")
    chosen = choose_attempt(job, attempts, attempt)
    lines = log_lines(ctx.store, job, chosen, follow)
    first = next(lines, None)  # errors (secrets not openable here) before the 200

    def body() -> Any:
        if first is not None:
            yield first + "\n"
            for line in lines:
                yield line + "\n"

    return StreamingResponse(body(), media_type="text/plain; charset=utf-8")


@router.post("/{job_id}/cancel", response_model=JobView, responses=problems(403, 404))
def cancel(ctx: Ctx, user: CurrentUser, job_id: str) -> dict[str, Any]:
    """Request cancellation (audited); the daemon's next reconcile step stops the attempt
    and ends the job."""
    from gpuopt.orchestrator.reconcile.step import request_cancel
    from gpuopt.orchestrator.views.job_status import load_job, status_view

    job, _, _ = _job_for(ctx, user, job_id, "cancel")
    request_cancel(ctx.store, job.id, ctx.clock(), user.name)
    job, attempts, events = load_job(ctx.store, job.id)
    return status_view(ctx.store, ctx.settings, job, attempts, events, ctx.clock())


def upload_dir(root: Path) -> Path:
    import secrets

    return root / secrets.token_hex(12)
