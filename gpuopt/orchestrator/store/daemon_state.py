"""Daemon bookkeeping in the store: node heartbeats / roles and the last poll per cloud.

Each writer is one short transaction; the readers return plain dataclasses for
``gpuopt daemon status`` and the metrics endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gpuopt.orchestrator.store.daemon_tables import DaemonNodeRow, PollStatusRow
from gpuopt.orchestrator.store.report_sends import dialect_insert

if TYPE_CHECKING:
    from gpuopt.orchestrator.store.engine import Store

MAX_ERROR_CHARS = 2000


@dataclass(frozen=True, slots=True)
class NodeInfo:
    node_id: str
    hostname: str
    pid: int
    started_at: datetime
    role: str
    leader_since: datetime | None
    heartbeat_at: datetime
    metrics_address: str | None


@dataclass(frozen=True, slots=True)
class PollInfo:
    cloud: str
    last_try_at: datetime
    last_status: str
    last_error: str | None
    last_ok_at: datetime | None


def _nodes() -> Any:
    return DaemonNodeRow.__table__  # type: ignore[attr-defined]


def _polls() -> Any:
    return PollStatusRow.__table__  # type: ignore[attr-defined]


def heartbeat(
    store: Store, node: NodeInfo, *, role: str, leader_since: datetime | None, at: datetime
) -> None:
    """Insert or refresh this node's row (its role, since when it leads, its heartbeat)."""
    t = _nodes()
    values = {
        "node_id": node.node_id, "hostname": node.hostname, "pid": node.pid,
        "started_at": node.started_at, "role": role, "leader_since": leader_since,
        "heartbeat_at": at, "metrics_address": node.metrics_address,
    }
    stmt = dialect_insert(store.dialect, t).values(**values)
    stmt = stmt.on_conflict_do_update(
        index_elements=["node_id"],
        set_={"role": role, "leader_since": leader_since, "heartbeat_at": at},
    )
    with store.engine.begin() as conn:
        conn.execute(stmt)


def prune_nodes(store: Store, older_than: datetime) -> int:
    """Forget nodes whose last heartbeat is older than ``older_than``."""
    t = _nodes()
    with store.engine.begin() as conn:
        return int(conn.execute(t.delete().where(t.c.heartbeat_at < older_than)).rowcount or 0)


def list_nodes(store: Store) -> list[NodeInfo]:
    from sqlalchemy import select

    t = _nodes()
    with store.engine.connect() as conn:
        rows = conn.execute(select(t).order_by(t.c.heartbeat_at.desc())).all()
    return [NodeInfo(**r._mapping) for r in rows]


def record_poll(
    store: Store, cloud: str, *, status: str, error: str | None, at: datetime
) -> None:
    """Record one poll of ``cloud``; ``last_ok_at`` only moves when ``status`` is ok."""
    with store.engine.begin() as conn:
        record_poll_on(conn, store.dialect, cloud, status=status, error=error, at=at)


def record_poll_on(conn: Any, dialect: str, cloud: str, *, status: str, error: str | None,
                   at: datetime) -> None:
    """:func:`record_poll` on ``conn``, in its transaction (the caller commits): a poll
    whose results are written in the same transaction commits with them, or not at all."""
    from sqlalchemy import case

    t = _polls()
    ok_at = at if status == "ok" else None
    error = error[:MAX_ERROR_CHARS] if error else None
    stmt = dialect_insert(dialect, t).values(
        cloud=cloud, last_try_at=at, last_status=status, last_error=error, last_ok_at=ok_at
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=["cloud"],
        set_={
            "last_try_at": at, "last_status": status, "last_error": error,
            "last_ok_at": case((stmt.excluded.last_status == "ok", stmt.excluded.last_ok_at),
                               else_=t.c.last_ok_at),
        },
    )
    conn.execute(stmt)


def list_polls(store: Store) -> list[PollInfo]:
    from sqlalchemy import select

    t = _polls()
    with store.engine.connect() as conn:
        rows = conn.execute(select(t).order_by(t.c.cloud)).all()
    return [PollInfo(**r._mapping) for r in rows]


def local_attempt_hosts(store: Store, alive_after: datetime) -> list[tuple[str, int, bool]]:
    """(host, unfinished local attempts recorded on it, a daemon there has a heartbeat at
    or after ``alive_after`` and is not stopped) for every host with such attempts, by
    host name."""
    from sqlalchemy import func, select
    from sqlmodel import col

    from gpuopt.jobs.states import AttemptPhase
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow

    with store.session() as session:
        counts = session.execute(
            select(col(AttemptRow.host), func.count())
            .where(col(AttemptRow.host).is_not(None),
                   col(AttemptRow.status) != AttemptPhase.ENDED)
            .group_by(col(AttemptRow.host))).all()
        alive = set(session.execute(
            select(col(DaemonNodeRow.hostname))
            .where(col(DaemonNodeRow.heartbeat_at) >= alive_after,
                   col(DaemonNodeRow.role) != "stopped")).scalars().all())
    return [(host, int(n), host in alive) for host, n in sorted(counts)]
