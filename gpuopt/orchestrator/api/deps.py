"""Request dependencies: the context, the authenticated user, and the rights checks
(the messages say who owns the job and who may act on it)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from gpuopt.orchestrator.api.context import ApiContext
from gpuopt.orchestrator.api.users import User

BEARER = HTTPBearer(auto_error=False, description="A token from `gpuopt users add`.")


def context(request: Request) -> ApiContext:
    ctx: ApiContext = request.app.state.ctx
    return ctx


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def authenticate_token(ctx: ApiContext, client: str, token: str | None) -> User:
    """The user of ``token``; 429 while ``client`` is rate-limited, 401 without a
    valid token (a wrong one counts as a failure)."""
    from gpuopt.orchestrator.api.users import authenticate

    wait = ctx.limiter.retry_after(client)
    if wait is not None:
        raise HTTPException(429, f"too many failed authentications from {client}: retry in "
                            f"{wait:.0f} s", headers={"Retry-After": str(int(wait) + 1)})
    if not token:
        raise HTTPException(401, "no token: send Authorization: Bearer <token> (a token "
                            "from `gpuopt users add`; `gpuopt login URL` stores it)",
                            headers={"WWW-Authenticate": "Bearer"})
    user = authenticate(ctx.store, token)
    if user is None:
        ctx.limiter.failed(client)
        raise HTTPException(401, "the token is not valid (unknown or revoked)",
                            headers={"WWW-Authenticate": "Bearer"})
    return user


def current_user(
    request: Request,
    ctx: Annotated[ApiContext, Depends(context)],
    creds: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)],
) -> User:
    token = creds.credentials if creds is not None else None
    return authenticate_token(ctx, client_address(request), token)


Ctx = Annotated[ApiContext, Depends(context)]
CurrentUser = Annotated[User, Depends(current_user)]


def owner_of(submitted_by: str | None) -> str:
    return submitted_by or "a local user of the control node"


def require_job_right(user: User, job_id: str, submitted_by: str | None, action: str) -> None:
    """403 unless ``user`` submitted the job or is an admin."""
    if user.is_admin or (submitted_by is not None and submitted_by == user.name):
        return
    raise HTTPException(403, f"job {job_id} belongs to {owner_of(submitted_by)}: only its "
                        f"owner or an admin may {action} it")
