"""Users of the HTTP API and the audit trail (revision 0013_users).

- ``api_users``: one row per user: name, team, admin or member, and the SHA-256 of its
  token (never the token: it is printed once by ``gpuopt users add`` and kept by its
  holder). A revoked user keeps its row (``revoked_at`` set) so the audit trail still
  names it; its token stops working with the transaction that revokes it.
- ``audit_log``: who did what to which job, when: every submit and cancel, from the CLI
  (``local:<os user>``) or the API (the user's name).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Text
from sqlmodel import Field, SQLModel

from gpuopt.orchestrator.store.types import UTCDateTime


class ApiUserRow(SQLModel, table=True):
    __tablename__ = "api_users"

    name: str = Field(primary_key=True, max_length=64)
    team: str | None = Field(default=None, max_length=128)
    is_admin: bool = False
    token_sha256: str = Field(max_length=64, unique=True)  # hex digest of the token
    created_at: datetime = Field(sa_type=UTCDateTime)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class AuditRow(SQLModel, table=True):
    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_log_job", "job_id"),)

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(sa_type=UTCDateTime)
    actor: str = Field(max_length=80)
    action: str = Field(max_length=16)  # submit, cancel
    job_id: str = Field(max_length=40)
    detail: str | None = Field(default=None, sa_type=Text)
