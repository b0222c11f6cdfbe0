"""The ASGI application: /api/v1/ (JSON; OpenAPI at /api/v1/openapi.json) and the
dashboard (/). Errors are JSON ``{"detail": ..., "exit_code": ...}``: a UserError (the
CLI's message, file:line field) is 422 with the CLI's exit code, except "no job" (404);
a validation error lists the fields without echoing what was sent (it may hold a
secret); an unknown route 404, a wrong method 405; a request body larger than the
upload limit 413 before it is read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response

from gpuopt.core.errors import UserError

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from gpuopt.orchestrator.api.context import ApiContext

API = "/api/v1"
FORM_OVERHEAD = 2 * 2**20  # the job file, the secrets and the multipart framing


class BodyLimit:
    """413 for a request whose body is larger than ``limit`` bytes: by its
    Content-Length at once, else counted as it arrives (the app sees an error then)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await _too_large(self.limit)(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise _TooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            await _too_large(self.limit)(scope, receive, send)


class _TooLarge(BaseException):  # not Exception: no handler in between may eat it
    pass


def _too_large(limit: int) -> JSONResponse:
    return JSONResponse({"detail": f"the request is larger than {limit // 2**20:,} MiB "
                         "([api] max_upload_mib on the server)"}, status_code=413)


def build_app(ctx: ApiContext) -> FastAPI:
    from gpuopt.orchestrator.api import routes_info, routes_jobs

    app = FastAPI(title="gpuopt", version="1", openapi_url=f"{API}/openapi.json",
                  docs_url=f"{API}/docs", redoc_url=None,
                  description="The gpuopt control node: submit and follow jobs, plans, "
                  "prices and the weekly report. Authorization: Bearer <token> (`gpuopt "
                  "users add`).")
    app.state.ctx = ctx
    app.include_router(routes_jobs.router, prefix=API)
    app.include_router(routes_info.router, prefix=API)
    try:
        from gpuopt.orchestrator.api import dashboard
    except ImportError:  # the dashboard's templates need jinja2 (the server extra)
        pass
    else:
        app.include_router(dashboard.router)

        @app.exception_handler(dashboard.SignInRequired)
        async def _sign_in(_request: Request, _err: Exception) -> Response:
            return RedirectResponse("/login", status_code=303)

    @app.exception_handler(UserError)
    async def _user_error(_request: Request, err: UserError) -> JSONResponse:
        text = str(err)
        status = 404 if text.startswith("no job ") else 422
        return JSONResponse({"detail": text, "exit_code": err.exit_code}, status_code=status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, err: RequestValidationError) -> JSONResponse:
        fields: list[dict[str, Any]] = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type")}
            for e in err.errors()]
        return JSONResponse({"detail": fields, "exit_code": 2}, status_code=422)

    app.add_middleware(BodyLimit, limit=ctx.max_upload_bytes + FORM_OVERHEAD)
    return app
