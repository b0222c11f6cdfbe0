"""The API's documented shapes: errors, and the job views (open objects: the same keys
as `gpuopt jobs --json` / `status --json`, listed in the CLI's docs)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Problem(BaseModel):
    """Every error: a message saying what to fix; ``exit_code``: the CLI's for it."""

    detail: str | list[Any]
    exit_code: int | None = None


class JobView(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    name: str
    status: str


class SubmitAnswer(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    status: str
    executor: str
    plan: dict[str, Any]


_WHY = {400: "Bad request", 401: "No valid token", 403: "Not this user's",
        404: "No such job or route", 413: "Upload too large",
        422: "Input refused (file:line field: what to fix)", 429: "Rate-limited"}


def problems(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The error statuses a route documents (401 and 429: every authenticated route)."""
    return {c: {"model": Problem, "description": _WHY[c]} for c in sorted({*codes, 401, 429})}
