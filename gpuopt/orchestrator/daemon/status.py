"""What ``gpuopt daemon status`` shows: running or not, the leader, stand-bys, the last
successful price poll per cloud and the next weekly report (or a pending retry)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.store.daemon_state import NodeInfo, PollInfo
    from gpuopt.orchestrator.store.engine import Store

# A node whose heartbeat is older than lease_ttl x this is not counted as alive.
ALIVE_FACTOR = 2


@dataclass
class DaemonStatus:
    running: bool
    database: str
    leader: dict[str, Any] | None = None
    standbys: list[dict[str, Any]] = field(default_factory=list)
    polls: list[dict[str, Any]] = field(default_factory=list)
    next_report_at: datetime | None = None
    report_retries: list[dict[str, Any]] = field(default_factory=list)
    note: str | None = None
    local_hosts: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        def conv(v: Any) -> Any:
            if isinstance(v, datetime):
                return v.isoformat()
            if isinstance(v, dict):
                return {k: conv(x) for k, x in v.items()}
            if isinstance(v, list):
                return [conv(x) for x in v]
            return v

        return {k: conv(v) for k, v in asdict(self).items()}


def _node(n: NodeInfo) -> dict[str, Any]:
    return {"node": n.node_id, "hostname": n.hostname, "pid": n.pid, "since": n.leader_since,
            "started_at": n.started_at, "heartbeat_at": n.heartbeat_at,
            "metrics_address": n.metrics_address}


def _poll(p: PollInfo) -> dict[str, Any]:
    return {"cloud": p.cloud, "last_ok_at": p.last_ok_at, "last_try_at": p.last_try_at,
            "last_status": p.last_status, "last_error": p.last_error}


def alive_after(settings: Settings, now: datetime) -> datetime:
    """A daemon whose heartbeat is older than this is not counted as alive."""
    return now - settings.daemon.lease_ttl * ALIVE_FACTOR - timedelta(seconds=5)


def leading_daemon(store: Store, settings: Settings, url: str,
                   now: datetime) -> NodeInfo | None:
    """The daemon leading for this store, from the leadership table (a leader whose
    heartbeat is fresh; on SQLite, only while the database file's lock is held), or None."""
    from gpuopt.orchestrator.daemon.leadership import sqlite_daemon_running
    from gpuopt.orchestrator.store.daemon_state import list_nodes
    from gpuopt.orchestrator.store.url import sqlite_file

    since = alive_after(settings, now)
    leaders = [n for n in list_nodes(store) if n.role == "leader" and n.heartbeat_at >= since]
    if not leaders:
        return None
    file = sqlite_file(url)
    if file is not None and sqlite_daemon_running(file) is None:
        return None  # a stale row: nobody holds the file
    return max(leaders, key=lambda n: n.heartbeat_at)


def gather_status(store: Store, settings: Settings, url: str, now: datetime) -> DaemonStatus:
    from gpuopt.orchestrator.daemon.leadership import sqlite_daemon_running
    from gpuopt.orchestrator.report.from_config import schedule
    from gpuopt.orchestrator.store.daemon_state import list_nodes, list_polls
    from gpuopt.orchestrator.store.report_sends import pending_retries
    from gpuopt.orchestrator.store.url import sqlite_file

    since = alive_after(settings, now)
    nodes = [n for n in list_nodes(store) if n.role != "stopped" and n.heartbeat_at >= since]
    status = DaemonStatus(running=bool(nodes), database=store.url)
    file = sqlite_file(url)
    if file is not None:
        holder = sqlite_daemon_running(file)
        status.running = holder is not None
        if holder is None:
            nodes = []
        elif not any(n.role == "leader" for n in nodes):
            status.note = f"the daemon lock is held ({holder}) but it has not reported yet"
    leaders = [n for n in nodes if n.role == "leader"]
    status.leader = _node(leaders[0]) if leaders else None
    status.standbys = [_node(n) for n in nodes if n.role != "leader"]
    status.polls = [_poll(p) for p in list_polls(store)]
    sched = schedule(settings)
    status.next_report_at = sched.due_at(sched.latest_due(now).next())
    status.report_retries = [{"week": w, "scope": s, "next_try_at": at}
                             for w, s, at in pending_retries(store)]
    _local_attempts(status, store, since)
    return status


def _local_attempts(status: DaemonStatus, store: Store, since: datetime) -> None:
    """Where the live local attempts run, and whether the leader can watch them."""
    from gpuopt.orchestrator.daemon.local_hosts import lead_refusal, local_hosts, unwatched

    hosts = local_hosts(store, since)
    leader = status.leader["hostname"] if status.leader else None
    status.local_hosts = [{"host": h.host, "attempts": h.attempts,
                           "daemon_alive": h.daemon_alive,
                           "watched": h.host == leader} for h in hosts]
    for h in unwatched(hosts, leader):
        why = ("no daemon runs there" if not h.daemon_alive
               else f"the leader is on {leader}" if leader else "no daemon leads")
        status.notes.append(
            f"{h.attempts} local attempt(s) on host {h.host} are not watched: {why}; "
            f"only a daemon on {h.host} can see their processes, so none is taken for "
            f"lost; start or keep `gpuopt daemon` on {h.host}")
    for sb in status.standbys:
        refused = lead_refusal(hosts, sb["hostname"])
        if refused is not None:
            status.notes.append(f"stand-by on {sb['hostname']} does not lead: {refused}")


def render_text(status: DaemonStatus, tz_name: str) -> str:
    from zoneinfo import ZoneInfo

    tz = ZoneInfo(tz_name)

    def t(v: datetime | None) -> str:
        return v.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S %Z") if v else "never"

    lines = [f"daemon:   {'running' if status.running else 'not running'}",
             f"database: {status.database}"]
    if status.leader:
        ld = status.leader
        lines.append(f"leader:   {ld['hostname']} pid {ld['pid']} since {t(ld['since'])} "
                     f"(heartbeat {t(ld['heartbeat_at'])})")
    for sb in status.standbys:
        lines.append(f"stand-by: {sb['hostname']} pid {sb['pid']} "
                     f"(heartbeat {t(sb['heartbeat_at'])})")
    if status.note:
        lines.append(f"note:     {status.note}")
    for h in status.local_hosts:
        lines.append(f"local attempts: {h['attempts']} on {h['host']} ("
                     + ("watched by the leader" if h["watched"] else "not watched") + ")")
    for note in status.notes:
        lines.append(f"note:     {note}")
    lines.append("price polls:")
    if not status.polls:
        lines.append("  (none yet)")
    for p in status.polls:
        extra = f" - last try {p['last_status']}: {p['last_error']}" if p["last_status"] != "ok" \
            else ""
        lines.append(f"  {p['cloud']:<6} last success {t(p['last_ok_at'])}{extra}")
    lines.append(f"next report: {t(status.next_report_at)}")
    for r in status.report_retries:
        lines.append(f"  retry {r['week']} {r['scope']} at {t(r['next_try_at'])}")
    return "\n".join(lines) + "\n"
