"""Queries of API users and the audit trail (user_tables.py). Tokens are made and
hashed in orchestrator/api/users.py; nothing here sees a token, only its hash."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlmodel import Session, col, select

from gpuopt.orchestrator.store.user_tables import ApiUserRow, AuditRow


def find_user(session: Session, name: str) -> ApiUserRow | None:
    return session.get(ApiUserRow, name)


def user_by_token_hash(session: Session, digest: str) -> ApiUserRow | None:
    """The live (not revoked) user holding the token whose SHA-256 is ``digest``."""
    return session.exec(select(ApiUserRow).where(
        ApiUserRow.token_sha256 == digest, col(ApiUserRow.revoked_at).is_(None))).first()


def list_users(session: Session) -> list[ApiUserRow]:
    return list(session.exec(select(ApiUserRow).order_by(col(ApiUserRow.name))))


def insert_user(session: Session, row: ApiUserRow) -> None:
    session.add(row)
    session.flush()


def revoke_user(session: Session, name: str, now: datetime) -> bool:
    """Revoke ``name``'s token; False when there is no such live user."""
    row = session.get(ApiUserRow, name)
    if row is None or row.revoked_at is not None:
        return False
    row.revoked_at = now
    session.add(row)
    session.flush()
    return True


def record_audit(session: Session, at: datetime, actor: str, action: str, job_id: str,
                 detail: str | None = None) -> None:
    session.add(AuditRow(at=at, actor=actor[:80], action=action, job_id=job_id,
                         detail=detail))


def audit_of(session: Session, job_ids: Sequence[str] | None = None,
             newest: int = 1000) -> list[AuditRow]:
    """The newest ``newest`` records (of these jobs), oldest first."""
    query = select(AuditRow).order_by(col(AuditRow.id).desc())
    if job_ids is not None:
        query = query.where(col(AuditRow.job_id).in_(list(job_ids)))
    return list(reversed(session.exec(query.limit(newest)).all()))
