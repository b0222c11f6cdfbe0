"""`gpuopt submit` in remote mode: the job file validated here first (the same file:line
messages, exit 2, before anything is sent), its secrets' values read from this
environment, its ``workdir`` packed as a gzip tar; then one multipart POST. The server
checks everything again and stores the job as the user's."""

from __future__ import annotations

import os
import tarfile
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import typer

from gpuopt.core.errors import UserError

if TYPE_CHECKING:
    from gpuopt.orchestrator.cli.remote import Remote

TERMINAL = ("succeeded", "failed", "cancelled")


def pack_workdir(directory: Path, into: IO[bytes]) -> None:
    """``directory``'s files as a gzip tar (names relative to it; links not followed
    out of it: they are sent as what they point to only when inside)."""
    with tarfile.open(fileobj=into, mode="w:gz") as tar:
        for path in sorted(directory.rglob("*")):
            rel = path.relative_to(directory).as_posix()
            if path.is_symlink() or not (path.is_file() or path.is_dir()):
                continue  # the server unpacks files and directories only
            tar.add(path, arcname=rel, recursive=False)


def multipart(fields: Mapping[str, str], file_field: str | None, file: IO[bytes] | None,
              into: IO[bytes]) -> str:
    """Write a multipart/form-data body into ``into``; returns its Content-Type."""
    boundary = f"gpuopt-{uuid.uuid4().hex}"
    for name, value in fields.items():
        into.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n'
                   f"\r\n".encode())
        into.write(value.encode("utf-8") + b"\r\n")
    if file_field is not None and file is not None:
        into.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; '
                   f'filename="workdir.tar.gz"\r\nContent-Type: application/gzip\r\n\r\n'
                   .encode())
        file.seek(0)
        while chunk := file.read(1 << 20):
            into.write(chunk)
        into.write(b"\r\n")
    into.write(f"--{boundary}--\r\n".encode())
    return f"multipart/form-data; boundary={boundary}"


def submit(r: Remote, job_file: Path, dry_run: bool, wait: bool, executor: str | None,
           interval: float, preempt_after: str | None) -> None:
    import json
    from datetime import UTC, datetime

    from gpuopt.jobs.loader import read_job_file
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.remote_cmds import _width
    from gpuopt.orchestrator.submit.service import JobFile, read_job

    if preempt_after is not None:
        raise UserError("--preempt-after: a preemption drill runs on the machine that runs "
                        "the job, not through the server: unset GPUOPT_API_URL (and `gpuopt "
                        "logout`) to drill locally", exit_code=2)
    job = JobFile(job_file, read_job_file(job_file))
    sub = read_job(job, datetime.now(UTC), os.environ)
    if dry_run:
        doc = {"job_yaml": job.text, "filename": str(job_file), "top": 5}
        with r.post_json("/plan", doc) as res:
            found = json.loads(res.read().decode("utf-8"))
        with r.post_json("/plan", doc, params={"format": "text", "width": _width()}) as res:
            typer.echo(res.read().decode("utf-8"), nl=False)
        if not found["candidates"]:
            raise UserError(f"{job_file}: refused, it fits nowhere: "
                            f"{found.get('nearest_miss') or 'no offer matches'}", exit_code=3)
        out_console().print("dry run: nothing stored")
        return
    fields = {"job_yaml": job.text, "filename": str(job_file),
              "secrets": json.dumps(dict(sub.secrets)), "width": str(_width())}
    if executor is not None:
        fields["executor"] = executor
    workdir = sub.spec.workdir if sub.spec.workdir and "://" not in sub.spec.workdir else None
    with tempfile.TemporaryFile() as archive, tempfile.TemporaryFile() as body:
        if workdir is not None:
            pack_workdir(Path(workdir), archive)
        content_type = multipart(fields, "workdir" if workdir else None,
                                 archive if workdir else None, body)
        length = body.tell()
        body.seek(0)
        with r.request("POST", "/jobs", body=body, content_type=content_type,
                       length=length) as res:
            answer = json.loads(res.read().decode("utf-8"))
    typer.echo(answer.get("plan_text", ""), nl=False)
    job_id, kind = answer["id"], answer["executor"]
    out_console().print(f"submitted [bold]{job_id}[/] (queued, executor {kind})")
    if wait:
        raise typer.Exit(_wait(r, job_id, interval))
    out_console().print(f"the server's daemon runs it: follow it with `gpuopt status "
                        f"{job_id}`")


def _wait(r: Remote, job_id: str, interval: float) -> int:
    """Poll the job until it ends; print each change of status; 0 when it succeeded."""
    import time

    from gpuopt.orchestrator.cli.console import err_console, out_console

    last = None
    view: dict[str, Any] = {}
    try:
        while True:
            view = r.json("GET", f"/jobs/{job_id}")
            shown = f"{view['status']} (attempt {view['attempts']})" if view["attempts"] \
                else view["status"]
            if shown != last:
                out_console().print(shown, markup=False)
                last = shown
            if view["status"] in TERMINAL:
                break
            time.sleep(interval)
    except KeyboardInterrupt:
        err_console().print(f"stopped watching; {job_id} stays submitted (`gpuopt cancel "
                            f"{job_id}` stops it)")
        return 130
    label = "simulated cost" if view.get("cost_is_simulated") else "cost"
    out_console().print(f"[bold]{job_id}[/] {view['status']}: {view['attempts']} attempt(s), "
                        f"{view['preemptions']} preemption(s)")
    out_console().print(f"{label}: ${view['cost']} (on-demand equivalent "
                        f"${view['on_demand_cost']})", markup=False)
    return 0 if view["status"] == "succeeded" else 1
