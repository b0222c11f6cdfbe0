"""Local attempts and the hosts that run them, as the daemon's leadership sees them.

A local attempt's processes are visible only from its host (jobs/executors/host.py), so
the daemon that leads must be the one on the host of the live local attempts: a daemon
on another host would see "no such attempt", take it for lost and start the job again
beside it (issue 26.4). The rule, for every daemon before it takes the leadership and
at every heartbeat while it leads:

- another host has live local attempts and a live daemon (a heartbeat within the alive
  window of ``gpuopt daemon status``), and this host has none: refuse to lead (stand
  by, or step down), so that host's daemon leads and watches them;
- that host has no live daemon: lead, but never watch, stop or replace its attempts
  (reconcile leaves them alone) -- a lease that ran out says nothing about processes,
  which go on running without their daemon -- until a daemon runs there again (it
  then leads, or, after a reboot, finds them gone); ``gpuopt daemon status`` names
  them;
- both hosts have live local attempts: the leader keeps leading and the other host's
  attempts wait, named by ``gpuopt daemon status`` (run local jobs from one host).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuopt.orchestrator.store.engine import Store


@dataclass(frozen=True, slots=True)
class LocalHost:
    host: str
    attempts: int  # unfinished local attempts recorded on it
    daemon_alive: bool  # a daemon there has a fresh heartbeat


def local_hosts(store: Store, alive_after: datetime) -> list[LocalHost]:
    """Every host with unfinished local attempts, and whether a daemon there is alive."""
    from gpuopt.orchestrator.store.daemon_state import local_attempt_hosts

    return [LocalHost(host, n, alive) for host, n, alive in
            local_attempt_hosts(store, alive_after)]


def lead_refusal(hosts: list[LocalHost], me: str) -> str | None:
    """Why the daemon on host ``me`` must not lead now (None: it may)."""
    if any(h.host == me and h.attempts for h in hosts):
        return None
    busy = [h for h in hosts if h.host != me and h.attempts and h.daemon_alive]
    if not busy:
        return None
    names = ", ".join(f"{h.host} ({h.attempts} local attempt(s))" for h in busy)
    return (f"live local attempts run on {names}, whose daemon is alive: it leads, since "
            "only it can see their processes")


def unwatched(hosts: list[LocalHost], leader: str | None) -> list[LocalHost]:
    """The hosts whose local attempts nobody watches: not the leader's host."""
    return [h for h in hosts if h.attempts and h.host != leader]
