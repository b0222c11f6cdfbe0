"""The queries of job secrets at rest (secret_tables.py); the sealing and opening, and
this node's key, are orchestrator/submit/job_secrets.py's."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import delete
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from gpuopt.jobs.states import LIVE_JOB_STATUSES
from gpuopt.orchestrator.store.jobs_tables import JobRow
from gpuopt.orchestrator.store.secret_tables import JobSecretRow, SecretKeyRow

if TYPE_CHECKING:
    from gpuopt.orchestrator.store.engine import Store


@dataclass(frozen=True, slots=True)
class PublishedKey:
    key_id: str
    public_key: str  # base64
    host: str
    published_at: datetime


@dataclass(frozen=True, slots=True)
class SealedBox:
    job_id: str
    key_id: str
    sealed: str  # base64


def publish(store: Store, key: PublishedKey) -> None:
    """Record a node's public key unless it is there already."""
    with store.transaction() as session:
        if session.get(SecretKeyRow, key.key_id) is None:
            session.add(SecretKeyRow(key_id=key.key_id, public_key=key.public_key,
                                     host=key.host, published_at=key.published_at))


def published_keys(session: Session) -> list[PublishedKey]:
    """Every published key, oldest first."""
    rows = session.exec(select(SecretKeyRow).order_by(col(SecretKeyRow.published_at))).all()
    return [PublishedKey(r.key_id, r.public_key, r.host, r.published_at) for r in rows]


def add_sealed(session: Session, boxes: Iterable[SealedBox]) -> None:
    """In the caller's transaction (the job's insert)."""
    for box in boxes:
        session.add(JobSecretRow(job_id=box.job_id, key_id=box.key_id, sealed=box.sealed))


def sealed_for(store: Store, job_id: str) -> tuple[list[SealedBox], dict[str, str]]:
    """The job's sealed boxes, and the host of every published key (by key id)."""
    with store.session() as session:
        rows = session.exec(select(JobSecretRow).where(col(JobSecretRow.job_id) == job_id)).all()
        hosts = {k.key_id: k.host for k in published_keys(session)}
    return [SealedBox(r.job_id, r.key_id, r.sealed) for r in rows], hosts


def has_sealed(session: Session, job_id: str) -> bool:
    return session.exec(select(JobSecretRow.key_id).where(
        col(JobSecretRow.job_id) == job_id)).first() is not None


def forget_in(session: Session, job_id: str) -> None:
    """Delete the job's sealed secrets in the caller's transaction (the one ending it)."""
    session.execute(delete(JobSecretRow).where(col(JobSecretRow.job_id) == job_id))


def sweep_sealed(store: Store) -> tuple[int, set[str]]:
    """Delete the sealed secrets of every job that is not live; returns how many rows went
    and the ids of the live jobs."""
    live_ids = sa_select(col(JobRow.id)).where(col(JobRow.status).in_(LIVE_JOB_STATUSES))
    with store.transaction() as session:
        result = session.execute(delete(JobSecretRow).where(
            col(JobSecretRow.job_id).not_in(live_ids)))
        removed = int(getattr(result, "rowcount", 0) or 0)
        live = set(session.execute(live_ids).scalars().all())
    return removed, live
