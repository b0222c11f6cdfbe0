"""Job tables: ``jobs`` (one row per submitted job), ``attempts`` (one row per launch) and
``job_events`` (an append-only log of what the reconcile did, for ``gpuopt status``).

Every attempt row is inserted and committed *before* its launch under the deterministic
cluster name ``cluster_name_for(job_id, number)``; ``UNIQUE (job_id, number)`` is the last
guard that keeps two reconcile loops from launching the same attempt twice. Money is
integer micro-dollars (USD x 1e6); times are aware UTC.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column, ForeignKey, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from gpuopt.jobs.states import (
    LIVE_JOB_STATUSES,
    AttemptPhase,
    EndReason,
    FailureKind,
    JobStatus,
)
from gpuopt.orchestrator.store.types import StrEnumType, UTCDateTime

JOB_STATUSES = tuple(JobStatus)
ATTEMPT_STATUSES = tuple(AttemptPhase)
END_REASONS = tuple(EndReason)
__all__ = ["ATTEMPT_STATUSES", "END_REASONS", "JOB_STATUSES", "LIVE_JOB_STATUSES",
           "AttemptRow", "JobEventRow", "JobRow"]


class JobRow(SQLModel, table=True):
    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_status", "status"),
                      Index("ix_jobs_submitted_by", "submitted_by"))

    id: str = Field(primary_key=True, max_length=40)
    name: str = Field(max_length=128)
    owner: str | None = Field(default=None, max_length=128)
    team: str | None = Field(default=None, max_length=128)
    status: JobStatus = Field(default=JobStatus.QUEUED, sa_type=StrEnumType(JobStatus))
    spec_yaml: str = Field(sa_type=Text)  # the job file as read at submit (for people)
    spec_path: str | None = Field(default=None, max_length=1024)
    # The validated spec as the daemon reads it (jobs.resolved); None on rows stored
    # before revision 0009_resolved_spec, which are parsed from spec_yaml instead.
    spec_json: str | None = Field(default=None, sa_type=Text)
    submitted_at: datetime = Field(sa_type=UTCDateTime)
    deadline_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    budget_micros: int | None = Field(default=None, sa_type=BigInteger)
    plan_json: str = Field(sa_type=Text)
    executor: str = Field(max_length=16)
    restarts_used: int = 0  # retries after program failures (max_restarts_on_errors)
    cancel_requested: bool = False
    updated_at: datetime = Field(sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    exit_code: int | None = None
    last_error: str | None = Field(default=None, sa_type=Text)
    # Reconcile steps of this job that raised, in a row (reset by one that did not), and
    # the kind (exception type) of the last one: logged once per kind, failed after N.
    step_failures: int = 0
    step_error: str | None = Field(default=None, max_length=64)
    # Revision 0013_users: the API user who submitted it (None: the local CLI); only that
    # user and admins see and cancel it through the API.
    submitted_by: str | None = Field(default=None, max_length=64)


class AttemptRow(SQLModel, table=True):
    __tablename__ = "attempts"
    __table_args__ = (
        UniqueConstraint("job_id", "number", name="uq_attempts_job_number"),
        UniqueConstraint("cluster_name", name="uq_attempts_cluster_name"),
        Index("ix_attempts_status", "status"),
        Index("ix_attempts_started_at", "started_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    job_id: str = Field(
        sa_column=Column(ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False)
    )
    number: int
    cluster_name: str = Field(max_length=64)
    cloud: str = Field(max_length=16)
    region: str = Field(default="", max_length=64)
    zone: str | None = Field(default=None, max_length=64)
    instance_type: str = Field(default="", max_length=64)
    gpu: str = Field(default="", max_length=32)
    gpu_count: int = 0  # per node
    # nodes (instances of instance_type) held together; the prices are of all of them
    num_nodes: int = 1
    market: str = Field(max_length=16)
    price_per_hour_micros: int = Field(sa_type=BigInteger)
    on_demand_price_per_hour_micros: int | None = Field(default=None, sa_type=BigInteger)
    status: AttemptPhase = Field(default=AttemptPhase.LAUNCHING,
                                 sa_type=StrEnumType(AttemptPhase))
    created_at: datetime = Field(sa_type=UTCDateTime)
    started_at: datetime = Field(sa_type=UTCDateTime)  # held from here (launch request)
    ended_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    end_reason: EndReason | None = Field(default=None, sa_type=StrEnumType(EndReason))
    failure_kind: FailureKind | None = Field(default=None, sa_type=StrEnumType(FailureKind))
    exit_code: int | None = None
    cost_micros: int | None = Field(default=None, sa_type=BigInteger)
    wasted_seconds: float | None = None
    # BIGINT: a step may count tokens (beyond 2^31); the executors drop values beyond 2^63
    progress_step: int | None = Field(default=None, sa_type=BigInteger)
    progress_total: int | None = Field(default=None, sa_type=BigInteger)
    first_progress_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_progress_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_log_lines: str | None = Field(default=None, sa_type=Text)
    detail: str | None = Field(default=None, sa_type=Text)
    # local executor: the host (host id) and boot (/proc/sys/kernel/random/boot_id) that
    # run it -- only a loop there can see its processes; None on other executors
    host: str | None = Field(default=None, max_length=128)
    boot_id: str | None = Field(default=None, max_length=64)
    # phase stop_failed: stops that failed in a row, when the next is tried, the last
    # error's kind (exception type: logged once per kind) and message
    stop_failures: int = 0
    next_stop_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    stop_error_kind: str | None = Field(default=None, max_length=64)
    stop_error: str | None = Field(default=None, sa_type=Text)
    # Revision 0014_attempt_probes: a probe (make before break) is provisioned while the
    # job's attempt number ``probe_of`` still runs the program (phase provisioning); it
    # starts the job only once that attempt has stopped. None: not a probe.
    probe_of: int | None = None


class JobEventRow(SQLModel, table=True):
    __tablename__ = "job_events"
    __table_args__ = (Index("ix_job_events_job", "job_id", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    job_id: str = Field(
        sa_column=Column(ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False)
    )
    at: datetime = Field(sa_type=UTCDateTime)
    kind: str = Field(max_length=32)
    message: str = Field(sa_type=Text)
