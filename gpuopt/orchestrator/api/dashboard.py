"""The dashboard: server-rendered pages (Jinja2) after signing in with a token at
/login. Jobs (filterable), a job (attempts, events, placement reasons, cost so far,
progress, log tail), prices (latest offers, history chart per GPU and market) and
spend (this week and the last eight, by team, cloud and GPU, savings against
on-demand, the weekly report's charts). Read-only except cancel; every form carries
a CSRF token (sessions.py). The figures are the API's views of the same store."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Form, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from gpuopt.core.errors import GpuoptError
from gpuopt.orchestrator.api.context import ApiContext
from gpuopt.orchestrator.api.sessions import COOKIE, LIFETIME_S, csrf_ok, csrf_token
from gpuopt.orchestrator.api.users import User

router = APIRouter(include_in_schema=False)
TEMPLATES = Path(__file__).with_name("templates")
HISTORY_DAYS = 30
WEEKS = 9  # this week and the last eight


def _templates(request: Request) -> Jinja2Templates:
    found = getattr(request.app.state, "templates", None)
    if found is None:
        from gpuopt.orchestrator.cli.tables import money

        found = request.app.state.templates = Jinja2Templates(directory=str(TEMPLATES))
        found.env.filters["money"] = money
    return found


def _ctx(request: Request) -> ApiContext:
    ctx: ApiContext = request.app.state.ctx
    return ctx


def _session_user(request: Request) -> User | None:
    """The signed-in user: a valid cookie of a live user still holding that token."""
    from gpuopt.orchestrator.api.sessions import read_session
    from gpuopt.orchestrator.store.users_repo import find_user

    ctx = _ctx(request)
    found = read_session(ctx.session_secret, request.cookies.get(COOKIE))
    if found is None:
        return None
    name, prefix = found
    with ctx.store.session() as session:
        row = find_user(session, name)
    if row is None or row.revoked_at is not None or not row.token_sha256.startswith(prefix):
        return None
    return User(row.name, row.team, row.is_admin)


class SignInRequired(GpuoptError):
    pass


def _page(request: Request, name: str, user: User | None, **values: Any) -> HTMLResponse:
    ctx = _ctx(request)
    cookie = request.cookies.get(COOKIE) or ""
    return _templates(request).TemplateResponse(request, name, {
        "user": user, "csrf": csrf_token(ctx.session_secret, cookie), **values},
        headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY",
                 "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                 "style-src 'unsafe-inline'; frame-ancestors 'none'"})


def _required(request: Request) -> User:
    user = _session_user(request)
    if user is None:
        raise SignInRequired
    return user


def _check_csrf(request: Request, given: str | None) -> None:
    if not csrf_ok(_ctx(request).session_secret, request.cookies.get(COOKIE), given):
        raise HTTPException(403, "the form's CSRF token is missing or stale: reload the page")


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request) -> Response:
    return _page(request, "login.html", None, title="Sign in", page="login")


@router.post("/login", response_class=HTMLResponse)
def login(request: Request, token: Annotated[str, Form(max_length=400)]) -> Response:
    from gpuopt.orchestrator.api.deps import authenticate_token, client_address
    from gpuopt.orchestrator.api.sessions import make_session
    from gpuopt.orchestrator.api.users import token_hash

    ctx = _ctx(request)
    try:
        user = authenticate_token(ctx, client_address(request), token.strip())
    except HTTPException as err:
        return _page(request, "login.html", None, title="Sign in", page="login",
                     error=str(err.detail))
    res = RedirectResponse("/", status_code=303)
    res.set_cookie(COOKIE, make_session(ctx.session_secret, user.name,
                                        token_hash(token.strip())),
                   max_age=LIFETIME_S, httponly=True, samesite="strict",
                   secure=ctx.session_secure, path="/")
    return res


@router.post("/logout")
def logout(request: Request, csrf: Annotated[str | None, Form()] = None) -> Response:
    _check_csrf(request, csrf)
    res = RedirectResponse("/login", status_code=303)
    res.delete_cookie(COOKIE, path="/")
    return res


Q = Annotated[str | None, Query(max_length=128)]


@router.get("/", response_class=HTMLResponse)
def jobs_page(request: Request, status: Q = None, team: Q = None, owner: Q = None
              ) -> Response:
    from gpuopt.orchestrator.store.jobs_repo import attempts_of, list_jobs
    from gpuopt.orchestrator.store.jobs_tables import JOB_STATUSES
    from gpuopt.orchestrator.views.jobs import job_view

    user = _required(request)
    ctx = _ctx(request)
    statuses = [status] if status in JOB_STATUSES else None
    with ctx.store.session() as session:
        rows = list_jobs(session, statuses, owner=owner or None, team=team or None,
                         limit=500, submitted_by=None if user.is_admin else user.name)
        attempts = attempts_of(session, [j.id for j in rows])
    now = ctx.clock()
    views = [job_view(j, attempts[j.id], now) for j in reversed(rows)]  # newest first
    return _page(request, "jobs.html", user, title="Jobs", page="jobs", views=views,
                 statuses=[str(s) for s in JOB_STATUSES], status=status, team=team,
                 owner=owner)


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(request: Request, job_id: str) -> Response:
    from gpuopt.core.errors import UserError
    from gpuopt.jobs.states import LIVE_JOB_STATUSES
    from gpuopt.orchestrator.api.deps import require_job_right
    from gpuopt.orchestrator.views.job_status import load_job, status_view
    from gpuopt.orchestrator.views.jobs import plan_line

    user = _required(request)
    ctx = _ctx(request)
    try:
        job, attempts, events = load_job(ctx.store, job_id)
    except UserError as err:
        raise HTTPException(404, str(err)) from None
    require_job_right(user, job.id, job.submitted_by, "see")
    view = status_view(ctx.store, ctx.settings, job, attempts, events, ctx.clock())
    plan = view.get("plan")
    tail = "\n".join(view["attempt_list"][-1]["last_log_lines"][-40:]) \
        if view["attempt_list"] else ""
    return _page(request, "job.html", user, title=job.id, page="jobs", v=view,
                 plan_line=plan_line(plan) if plan else None,
                 plan_candidates=(plan or {}).get("candidates", [])[:5], log_tail=tail,
                 live=job.status in LIVE_JOB_STATUSES and not job.cancel_requested)


@router.post("/jobs/{job_id}/cancel")
def cancel_from_page(request: Request, job_id: str,
                     csrf: Annotated[str | None, Form()] = None) -> Response:
    from gpuopt.orchestrator.api.deps import require_job_right
    from gpuopt.orchestrator.reconcile.step import request_cancel
    from gpuopt.orchestrator.views.job_status import load_job

    user = _required(request)
    _check_csrf(request, csrf)
    ctx = _ctx(request)
    job, _, _ = load_job(ctx.store, job_id)
    require_job_right(user, job.id, job.submitted_by, "cancel")
    request_cancel(ctx.store, job.id, ctx.clock(), user.name)
    return RedirectResponse(f"/jobs/{job.id}", status_code=303)


@router.get("/prices", response_class=HTMLResponse)
def prices_page(request: Request, gpu: Q = None, market: Q = None) -> Response:
    from gpuopt.orchestrator.api.charts_svg import step_chart
    from gpuopt.orchestrator.prices.current import current_offers_with_source
    from gpuopt.orchestrator.store.price_history import price_history
    from gpuopt.providers.offer_filter import OfferFilter

    user = _required(request)
    ctx = _ctx(request)
    every = current_offers_with_source(ctx.store, OfferFilter())
    gpus = sorted({o.gpu for o in every.offers})
    markets = sorted({o.market.value for o in every.offers})
    gpu = gpu if gpu in gpus else (gpus[0] if gpus else None)
    market = market if market in markets else ("spot" if "spot" in markets else
                                               (markets[0] if markets else None))
    flt = OfferFilter.build(gpu=gpu, market=market)
    offers = [o for o in every.offers if o.gpu == gpu and o.market.value == market][:50]
    chart = ""
    if every.source == "store" and gpu and market:
        with ctx.store.session() as session:
            points = price_history(session, flt, ctx.clock() - timedelta(days=HISTORY_DAYS))
        series: dict[str, list[Any]] = {}
        for p in points:
            o = p.offer
            series.setdefault(f"{o.cloud}/{o.zone or o.region} {o.instance_type}", []).append(
                (p.first_seen, o.price_per_gpu_hour))
        cheapest = sorted(series.items(), key=lambda kv: min(v for _, v in kv[1]))[:6]
        chart = step_chart(cheapest)
    source = "stored prices" if every.source == "store" else "the embedded snapshot"
    return _page(request, "prices.html", user, title="Prices", page="prices",
                 offers=offers, gpus=gpus, markets=markets, gpu=gpu, market=market,
                 chart=chart, source=source, days=HISTORY_DAYS)


@router.get("/spend", response_class=HTMLResponse)
def spend_page(request: Request,
               week: Annotated[str | None, Query(pattern=r"^\d{4}-W\d{2}$")] = None
               ) -> Response:
    from gpuopt.orchestrator.api.spend import spend_figures

    user = _required(request)
    ctx = _ctx(request)
    if not user.is_admin and user.team is None:
        raise HTTPException(403, f"{user.name} has no team: only an admin reads spend")
    team = None if user.is_admin else user.team
    figures = spend_figures(ctx.store, ctx.settings, team, week, ctx.clock(), WEEKS)
    return _page(request, "spend.html", user, title="Spend", page="spend",
                 scope_team=team, **figures)
