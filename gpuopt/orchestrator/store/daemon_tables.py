"""The daemon's own tables: weekly report sends, daemon nodes (leader + heartbeats), and the
last price poll per cloud.

- ``report_sends``: one row per (ISO week, scope) once a send was tried; ``sent_at`` set
  = that report went out (never again), else ``failures`` / ``last_error`` / ``next_try_at``
  hold the retry state. ``UNIQUE (week, scope)`` makes "sent" atomic across daemons.
- ``daemon_nodes``: one row per daemon process (``node_id`` = host:pid:start), its role
  (``leader`` / ``standby`` / ``stopped``), ``leader_since`` and ``heartbeat_at``.
- ``poll_status``: per cloud, the last poll tried and the last one that succeeded.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from gpuopt.orchestrator.store.types import UTCDateTime


class ReportSendRow(SQLModel, table=True):
    __tablename__ = "report_sends"
    __table_args__ = (UniqueConstraint("week", "scope", name="uq_report_sends_week_scope"),)

    id: int | None = Field(default=None, primary_key=True)
    week: str = Field(max_length=10)  # "2026-W48"
    scope: str = Field(max_length=160)  # "everyone" | "team:<name>"
    sent_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    failures: int = 0
    last_failure_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_error: str | None = Field(default=None, sa_type=Text)
    next_try_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class DaemonNodeRow(SQLModel, table=True):
    __tablename__ = "daemon_nodes"

    node_id: str = Field(primary_key=True, max_length=200)
    hostname: str = Field(max_length=128)
    pid: int
    started_at: datetime = Field(sa_type=UTCDateTime)
    role: str = Field(max_length=16)  # leader | standby | stopped
    leader_since: datetime | None = Field(default=None, sa_type=UTCDateTime)
    heartbeat_at: datetime = Field(sa_type=UTCDateTime)
    metrics_address: str | None = Field(default=None, max_length=128)


class PollStatusRow(SQLModel, table=True):
    __tablename__ = "poll_status"

    cloud: str = Field(primary_key=True, max_length=16)
    last_try_at: datetime = Field(sa_type=UTCDateTime)
    last_status: str = Field(max_length=16)  # ok | skipped | error
    last_error: str | None = Field(default=None, sa_type=Text)
    last_ok_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
