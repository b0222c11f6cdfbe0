"""POST /api/v1/jobs: a remote submitter's job through the one submit path
(orchestrator/submit/service.py). Its files go in a fresh directory under the data
directory: the job file's text (``spec_path``: relative paths resolve there) and its
``workdir`` unpacked from the archive sent; nothing on this machine reads the
submitter's disk, so a ``workdir`` named but not sent is refused. The job belongs to
the user (``submitted_by``); its team is the user's (a member's job naming another
team is refused); its owner, if the file names none, is the user."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from fastapi import HTTPException

from gpuopt.core.errors import UserError

if TYPE_CHECKING:
    from fastapi import UploadFile

    from gpuopt.orchestrator.api.context import ApiContext
    from gpuopt.orchestrator.api.users import User


def submit_remote(ctx: ApiContext, user: User, text: str, shown: str, executor: str | None,
                  secrets: Mapping[str, str], workdir: UploadFile | None,
                  width: int = 80) -> dict[str, Any]:
    from gpuopt.orchestrator.api.routes_jobs import upload_dir
    from gpuopt.orchestrator.api.uploads import UploadRefused, unpack_workdir

    root = upload_dir(ctx.upload_root)
    root.mkdir(parents=True, mode=0o700)
    try:
        unpacked = root / "workdir"
        if workdir is not None:
            try:
                unpack_workdir(workdir.file, unpacked, ctx.max_upload_bytes)
            except UploadRefused as err:
                raise HTTPException(err.status, str(err)) from None
        return _submit(ctx, user, root, text, shown, executor, secrets,
                       unpacked if workdir is not None else None, width)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def _submit(ctx: ApiContext, user: User, root: Path, text: str, shown: str,
            executor: str | None, secrets: Mapping[str, str], unpacked: Path | None,
            width: int) -> dict[str, Any]:
    from dataclasses import replace

    from gpuopt.orchestrator.api.text import rendered
    from gpuopt.orchestrator.cli.plan_cmd import print_plan
    from gpuopt.orchestrator.submit.service import (
        JobFile,
        check_executor,
        plan_job,
        read_job,
        require_fit,
        store_job,
    )

    now = ctx.clock()
    job = JobFile(Path(shown), text)
    sub = read_job(job, now, secrets, base_dir=root,
                   uploaded_workdir=unpacked or root / "workdir")
    if sub.spec.workdir and "://" not in sub.spec.workdir and unpacked is None:
        raise UserError(f"{job.where('workdir')} workdir: the server does not read your "
                        "disk: send the directory as an archive (the remote `gpuopt "
                        "submit` does), or remove workdir", exit_code=2)
    spec = _owned(sub.spec, user, job)
    stored_file = root / (PurePath(shown).name or "job.yaml")
    stored_file.write_text(text, encoding="utf-8")
    sub = replace(sub, spec=spec, spec_path=stored_file, submitted_by=user.name)
    settings = ctx.settings
    default = settings.executor.resolved(settings.clouds).value
    kind = executor or default
    if kind != default and not user.is_admin:
        raise HTTPException(403, f"--executor {kind}: this server runs members' jobs on "
                            f"{default}; only an admin may choose another executor")
    launchable = check_executor(sub, kind)
    planned = plan_job(sub, settings, ctx.store, now, launchable, executor=kind)
    title = sub.spec.name or job.path.name
    plan_text = rendered(lambda c: print_plan(title, planned, now=now, console=c), width)
    require_fit(sub, planned)
    job_id = store_job(ctx.store, sub, planned, kind, now)
    return {"id": job_id, "status": "queued", "executor": kind, "plan_text": plan_text,
            "plan": {"offers_source": planned.offers_source,
                     "candidates": [c.to_json() for c in planned.plan.candidates]}}


def _owned(spec: Any, user: User, job: Any) -> Any:
    """The spec with the user's team (refused: a member naming another team) and, when
    the file names none, the user as owner."""
    team = spec.team
    if user.team is not None and team is not None and team != user.team and \
            not user.is_admin:
        raise UserError(f"{job.where('team')} team: {team!r} is not your team "
                        f"({user.team!r}): remove team, or ask an admin", exit_code=2)
    update = {"team": team or user.team, "owner": spec.owner or user.name}
    return spec.model_copy(update=update)
