"""/api/v1: plan, estimate, prices (latest and history), report, and who am I. Each
answers the CLI's ``--json`` document; ``format=text`` (with ``width``) answers the
CLI's own text instead, rendered here, for the remote CLI."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, Field

from gpuopt.orchestrator.api.deps import Ctx, CurrentUser
from gpuopt.orchestrator.api.schemas import problems

router = APIRouter(tags=["info"])
Width = Annotated[int, Query(ge=40, le=400)]
Format = Annotated[Literal["json", "text"], Query()]


class JobText(BaseModel):
    job_yaml: str = Field(max_length=1_000_000, description="The job file's text.")
    filename: str = Field("job.yaml", min_length=1, max_length=1024,
                          description="The job file's path as typed (messages).")


class PlanRequest(JobText):
    top: int = Field(15, ge=1, le=200)
    minimize: Literal["cost", "time"] = "cost"


class EstimateRequest(JobText):
    gpu: str | None = Field(None, max_length=64, description="NAME[:COUNT]")


def _spec(ctx: Ctx, req: JobText, purpose: Literal["plan", "estimate"]) -> Any:
    """The job file validated here (file:line errors as 422); nothing of the
    submitter's disk is read: a workdir is taken as named."""
    from gpuopt.core.safe_text import control_problem
    from gpuopt.jobs.loader import parse_job_spec

    if control_problem(req.filename) is not None:
        raise HTTPException(422, "filename: printable characters only")
    base = ctx.upload_root / "plan"
    return parse_job_spec(req.job_yaml, req.filename, base_dir=base, purpose=purpose,
                          now=ctx.clock(), uploaded_workdir=base / "workdir")


@router.get("/me", responses=problems())
def me(user: CurrentUser) -> dict[str, Any]:
    """Who the token is."""
    return {"name": user.name, "team": user.team, "admin": user.is_admin}


@router.post("/plan", responses={200: {"content": {"text/plain": {}}}, **problems(422)})
def plan(ctx: Ctx, _user: CurrentUser, req: PlanRequest, format: Format = "json",
         width: Width = 80) -> Any:
    """Placements ranked by expected cost (`gpuopt plan --json`)."""
    from gpuopt.orchestrator.api.text import rendered
    from gpuopt.orchestrator.cli.plan_cmd import print_plan
    from gpuopt.orchestrator.reconcile.placement_inputs import plan_spec

    spec = _spec(ctx, req, "plan")
    now = ctx.clock()
    planned = plan_spec(spec, ctx.settings, ctx.store, now, top=req.top,
                        minimize=req.minimize)
    if format == "text":
        title = spec.name or Path(req.filename).name
        return PlainTextResponse(rendered(
            lambda c: print_plan(title, planned, now=now, console=c), width))
    p = planned.plan
    return {"minimize": req.minimize, "candidates": [c.to_json() for c in p.candidates],
            "frontier": [c.to_json() for c in p.frontier],
            "excluded": [{"gpu": e.gpu, "reason": e.reason} for e in p.excluded],
            "nearest_miss": p.nearest_miss}


@router.post("/estimate", responses={200: {"content": {"text/plain": {}}}, **problems(422)})
def estimate(ctx: Ctx, _user: CurrentUser, req: EstimateRequest, format: Format = "json",
             width: Width = 80) -> Any:
    """Peak memory and the smallest fit (`gpuopt estimate --json`)."""
    from gpuopt.orchestrator.api.text import rendered
    from gpuopt.orchestrator.cli.estimate_cmd import estimate_spec
    from gpuopt.orchestrator.reconcile.measurements import load_calibration

    spec = _spec(ctx, req, "estimate")
    result = estimate_spec(spec, req.gpu, load_calibration(ctx.store, spec))
    if format == "text":
        title = spec.name or Path(req.filename).name
        return PlainTextResponse(rendered(lambda c: result.print(title, c), width))
    return result.doc


def _filter(gpu: str | None, cloud: str | None, market: str | None, region: str | None,
            max_price: float | None = None) -> Any:
    from gpuopt.providers.offer_filter import OfferFilter

    return OfferFilter.build(gpu=gpu, cloud=cloud, market=market, region=region,
                             max_price_per_gpu_hour=max_price)


Str64 = Annotated[str | None, Query(max_length=64)]


@router.get("/prices", responses={200: {"content": {"text/plain": {}}}, **problems(422)})
def prices(ctx: Ctx, _user: CurrentUser, gpu: Str64 = None, cloud: Str64 = None,
           market: Str64 = None, region: Str64 = None,
           max_price: Annotated[float | None, Query(gt=0, le=1e6)] = None,
           limit: Annotated[int, Query(ge=0, le=100_000)] = 50,
           format: Format = "json", width: Width = 80) -> Any:
    """The latest offers, cheapest per GPU-hour first (`gpuopt prices --json`)."""
    from gpuopt.orchestrator.api.text import rendered
    from gpuopt.orchestrator.cli.prices_cmd import _offer_table
    from gpuopt.orchestrator.prices.current import current_offers_with_source

    current = current_offers_with_source(ctx.store, _filter(gpu, cloud, market, region,
                                                            max_price))
    if format == "text":
        now = ctx.clock()
        return PlainTextResponse(rendered(
            lambda c: _offer_table(current.offers[: limit or None], now, c, False), width))
    return [o.to_json() for o in current.offers[: limit or None]]


@router.get("/prices/history", responses=problems(422))
def price_history(ctx: Ctx, _user: CurrentUser, gpu: Str64 = None, cloud: Str64 = None,
                  market: Str64 = None, region: Str64 = None,
                  days: Annotated[int, Query(ge=1, le=3650)] = 30,
                  limit: Annotated[int, Query(ge=0, le=100_000)] = 500) -> Any:
    """Stored price changes since ``days`` ago (`gpuopt prices history --json`)."""
    from gpuopt.orchestrator.cli.prices_cmd import _point_json
    from gpuopt.orchestrator.store.price_history import price_history as query

    flt = _filter(gpu, cloud, market, region)
    with ctx.store.session() as session:
        points = query(session, flt, ctx.clock() - timedelta(days=days))
    shown = points[-limit:] if limit else points
    return [_point_json(p, False) for p in shown]


@router.get("/report", responses={200: {"content": {"text/plain": {}}},
                                  **problems(403, 422)})
def report(ctx: Ctx, user: CurrentUser,
           week: Annotated[str | None, Query(pattern=r"^\d{4}-W\d{2}$")] = None,
           team: Str64 = None, owner: Annotated[str | None, Query(max_length=128)] = None,
           format: Format = "json") -> Any:
    """The weekly report (`gpuopt report --format json|text`): a member reads its
    team's, an admin any."""
    from gpuopt.orchestrator.api.report_view import team_report

    if not user.is_admin:
        if user.team is None:
            raise HTTPException(403, f"{user.name} has no team: only an admin reads "
                                "reports of other teams")
        if team not in (None, user.team):
            raise HTTPException(403, f"team {team}'s report: {user.name} reads only its "
                                f"team's ({user.team})")
        team = user.team
    result = team_report(ctx.store, ctx.settings, week, team, owner, ctx.clock())
    if format == "text":
        from gpuopt.orchestrator.report.render_text import render_text

        return PlainTextResponse(render_text(result))
    from gpuopt.orchestrator.report.render_json import report_to_json

    return report_to_json(result)
