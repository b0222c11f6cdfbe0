"""The commands in remote mode (cli/remote.py): the same output and exit codes as on a
local store, from the server's answers. Tables are drawn here from the JSON views
(jobs, status); plan, estimate, prices and report text is the CLI's own, rendered by
the server at this terminal's width."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from gpuopt.core.errors import UserError

if TYPE_CHECKING:
    from gpuopt.orchestrator.cli.remote import Remote

TERMINAL = ("succeeded", "failed", "cancelled")
CANCEL_WAIT_S = 60.0


def _width() -> int:
    from gpuopt.orchestrator.cli.console import out_console

    return max(40, min(400, out_console().width))


def jobs(r: Remote, status: list[str] | None, owner: str | None, team: str | None,
         limit: int, wide: bool, as_json: bool) -> None:
    from gpuopt.orchestrator.cli.jobs_cmd import _statuses, show_jobs

    statuses = _statuses(status)  # refused here as locally (exit 2)
    views = r.json("GET", "/jobs", params={"status": statuses, "owner": owner, "team": team,
                                           "limit": limit})
    show_jobs(views, as_json, wide,
              filtered=bool(statuses) or owner is not None or team is not None)


def newest_job_id(r: Remote, job_id: str | None) -> str:
    """``job_id``, or the newest job this user may see on the server (as locally)."""
    from gpuopt.core.errors import UserError

    if job_id is not None:
        return job_id
    views = r.json("GET", "/jobs", params={"limit": 1})
    if not views:
        raise UserError("no jobs yet: `gpuopt submit job.yaml`", exit_code=2)
    return str(views[0]["id"])


def status(r: Remote, job_id: str | None, wide: bool, as_json: bool) -> None:
    from urllib.parse import quote

    from gpuopt.orchestrator.cli.jobs_cmd import print_status

    job_id = newest_job_id(r, job_id)
    view = r.json("GET", f"/jobs/{quote(job_id, safe='')}")
    if as_json:
        typer.echo(json.dumps(view, indent=2))
        return
    print_status(view, wide)


def logs(r: Remote, job_id: str | None, attempt: int | None, follow: bool) -> None:
    from urllib.parse import quote

    job_id = newest_job_id(r, job_id)
    try:
        for line in r.lines(f"/jobs/{quote(job_id, safe='')}/logs",
                            {"attempt": attempt, "follow": str(follow).lower()}):
            typer.echo(line)
    except KeyboardInterrupt:
        return


def cancel(r: Remote, job_id: str) -> None:
    """Asked on the server (audited); the daemon stops it at its next step: wait for
    that (bounded), then say what the local command says."""
    import time
    from urllib.parse import quote

    from gpuopt.orchestrator.cli.console import out_console

    path = f"/jobs/{quote(job_id, safe='')}"
    view = r.json("POST", f"{path}/cancel")
    deadline = time.monotonic() + CANCEL_WAIT_S
    while view["status"] not in TERMINAL and time.monotonic() < deadline:
        time.sleep(1.0)
        view = r.json("GET", path)
    if view["status"] not in TERMINAL:
        out_console().print(f"{view['id']}: {view['status']} (cancellation requested; the "
                            "server's daemon stops it at its next step)", markup=False)
        return
    out_console().print(f"{view['id']}: {view['status']}")


def _job_doc(job_file: Path) -> dict[str, str]:
    from gpuopt.jobs.loader import read_job_file

    return {"job_yaml": read_job_file(job_file), "filename": str(job_file)}


def plan(r: Remote, job_file: Path, top: int, minimize: str, as_json: bool) -> None:
    if minimize not in ("cost", "time"):
        raise UserError(f"--minimize {minimize}: choose cost or time", exit_code=2)
    doc = {**_job_doc(job_file), "top": top, "minimize": minimize}
    with r.post_json("/plan", doc) as res:
        found = json.loads(res.read().decode("utf-8"))
    if as_json:
        typer.echo(json.dumps(found, indent=2))
    else:
        with r.post_json("/plan", doc, params={"format": "text", "width": _width()}) as res:
            typer.echo(res.read().decode("utf-8"), nl=False)
    if not found["candidates"]:
        raise typer.Exit(3)


def estimate(r: Remote, job_file: Path, gpu: str | None, as_json: bool) -> None:
    doc = {**_job_doc(job_file), "gpu": gpu}
    params = None if as_json else {"format": "text", "width": _width()}
    with r.post_json("/estimate", doc, params=params) as res:
        body = res.read().decode("utf-8")
    typer.echo(json.dumps(json.loads(body)) if as_json else body, nl=as_json)


def prices(r: Remote, gpu: str | None, cloud: str | None, market: str | None,
           region: str | None, max_price: float | None, limit: int, as_json: bool) -> None:
    from gpuopt.orchestrator.cli.console import err_console

    params: dict[str, Any] = {"gpu": gpu, "cloud": cloud, "market": market,
                              "region": region, "max_price": max_price, "limit": 0}
    offers = r.json("GET", "/prices", params=params)
    if as_json:
        typer.echo(json.dumps(offers, indent=1))
        return
    if not offers:
        err_console().print("no offers match these filters")
        return
    text = r.text("GET", "/prices", params={**params, "limit": limit, "format": "text",
                                            "width": _width()})
    typer.echo(text, nl=False)
    if limit and len(offers) > limit:
        err_console().print(f"{len(offers) - limit} more offers (use --limit 0 for all)")


def report(r: Remote, week: str | None, owner: str | None, team: str | None, fmt: str,
           out: Path | None, email: bool) -> None:
    if email:
        raise UserError("--email: the server's daemon e-mails the weekly report; run "
                        "`gpuopt report --email` on the control node", exit_code=2)
    if fmt == "html":
        raise UserError("--format html: not over the API yet; use text or json, or the "
                        "dashboard's spend page", exit_code=2)
    text = r.text("GET", "/report", params={"week": week, "owner": owner, "team": team,
                                            "format": fmt})
    if fmt == "json":
        text = json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {out}", err=True)
    else:
        typer.echo(text, nl=False)
