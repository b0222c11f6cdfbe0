"""The executor's view of SkyPilot: the :class:`SkyClient` protocol and its real
implementation over the SDK calls in ``sky_sdk`` (the one module that touches ``sky``).

SkyPilot >= 0.10 is client-server: ``launch``/``status``/... return a request id;
``get(request_id)`` waits for the result. Launch is submitted without waiting (the API
server keeps provisioning even if gpuopt's daemon restarts); the in-flight launch is
found again through the API server's requests for that cluster name. The executor
depends on the :class:`SkyClient` protocol only.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from gpuopt.jobs.executors.sky_request_log import MAX_LOG_LINES
from gpuopt.jobs.executors.sky_task import SkyTaskPlan, build_sky_task

_LIVE_REQUEST_STATES = frozenset({"PENDING", "WAITING", "RUNNING"})


@dataclass(frozen=True, slots=True)
class ClusterRecord:
    name: str
    status: str  # sky.ClusterStatus value: INIT, UP, STOPPED
    launched_at: float | None = None


@dataclass(frozen=True, slots=True)
class ClusterJob:
    job_id: int
    status: str  # sky.JobStatus value: INIT, PENDING, SETTING_UP, RUNNING, SUCCEEDED, ...
    start_at: float | None = None
    end_at: float | None = None


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    request_id: str
    status: str  # PENDING, WAITING, RUNNING, SUCCEEDED, FAILED, CANCELLED
    error: str = ""

    @property
    def live(self) -> bool:
        return self.status in _LIVE_REQUEST_STATES


class TailBuffer(io.TextIOBase):
    """A text stream that keeps only its last ``max_bytes`` (UTF-8): what SkyPilot's
    ``stream_and_get`` prints into it stays bounded whatever the log holds."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__()
        self.max_bytes = max_bytes
        self._data = bytearray()
        self.cut = False  # something before the kept tail was dropped

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self._data += s.encode("utf-8", errors="replace")
        if len(self._data) > self.max_bytes:
            del self._data[: len(self._data) - self.max_bytes]
            self.cut = True
        return len(s)

    def text(self) -> str:
        """What was kept; after a cut, from the first whole line on."""
        text = self._data.decode("utf-8", errors="ignore")
        return text.partition("\n")[2] if self.cut else text


class SkyClient(Protocol):
    def launch(self, plan: SkyTaskPlan, cluster_name: str) -> str:
        """Submit ``sky.launch``; returns the request id without waiting."""
        ...

    def launch_requests(self, cluster_name: str) -> list[LaunchRequest]:
        """Launch (and exec) requests for that cluster name known to the API server,
        newest last."""
        ...

    def exec(self, plan: SkyTaskPlan, cluster_name: str) -> str:
        """Submit ``sky.exec`` of the task's run on the cluster (a probe's, provisioned by
        a launch without run); returns the request id without waiting."""
        ...

    def request_error(self, request_id: str) -> BaseException | None:
        """The exception a finished request raised, as SkyPilot's own type; else None."""
        ...

    def request_log_tail(self, request_id: str, max_bytes: int) -> str:
        """The last ``max_bytes`` (UTF-8) of the request's log on the API server, where
        SkyPilot logs the clouds' per-zone provisioning errors."""
        ...

    def status(self, cluster_name: str) -> ClusterRecord | None:
        """The cluster's record (refreshed from the cloud for spot/autostop clusters)."""
        ...

    def list_clusters(self, prefix: str) -> list[ClusterRecord]: ...

    def queue(self, cluster_name: str) -> list[ClusterJob]: ...

    def down(self, cluster_name: str) -> None:
        """Tear the cluster down; a cluster that does not exist is not an error."""
        ...

    def cancel_request(self, request_id: str) -> None: ...

    def tail_logs(
        self, cluster_name: str, job_id: int | None, follow: bool, tail: int = 0
    ) -> Iterator[str]: ...

    def enabled_clouds(self) -> list[str]:
        """Lower-case names of the clouds SkyPilot has credentials for (``sky check``)."""
        ...


def default_client() -> SkyClient:
    """The client the CLI and the daemon use (tests substitute a fake here)."""
    return SdkSkyClient()


class SdkSkyClient:
    """The real boundary, through SkyPilot's Python SDK (every call in ``sky_sdk``)."""

    def __init__(self, autostop_minutes: int | None = 30) -> None:
        # Safety net when nobody tears the cluster down (daemon gone): SkyPilot downs it
        # after this many idle minutes (``down=True`` + ``idle_minutes_to_autostop``).
        self.autostop_minutes = autostop_minutes
        # SkyPilot starts a local API server on the first call when none is configured
        # and none runs; gpuopt notes whether it found one, and ``close`` stops one it
        # caused to start (None: not checked yet).
        self._started_local_server: bool | None = None

    def _sdk(self) -> Any:
        from gpuopt.jobs.executors import sky_sdk

        if self._started_local_server is None:
            state = sky_sdk.server_state()
            self._started_local_server = state.local and not state.healthy
        return sky_sdk

    def close(self, stop: bool) -> str | None:
        """If this client's calls started a local SkyPilot API server: stop it (``stop``;
        in-flight launches die with it) or say it runs on. None when it started none."""
        if not self._started_local_server:
            return None
        from gpuopt.jobs.executors import sky_sdk

        if not stop:
            return (f"the local SkyPilot API server gpuopt's calls started runs on at "
                    f"{sky_sdk.server_url()} (it carries in-flight launches); "
                    "`sky api stop` stops it")
        sky_sdk.api_stop()
        self._started_local_server = False
        return "stopped the local SkyPilot API server gpuopt's calls had started"

    def launch(self, plan: SkyTaskPlan, cluster_name: str) -> str:
        sdk = self._sdk()
        return str(sdk.launch(build_sky_task(plan), cluster_name,
                              idle_minutes_to_autostop=self.autostop_minutes,
                              down=self.autostop_minutes is not None))

    def exec(self, plan: SkyTaskPlan, cluster_name: str) -> str:
        return str(self._sdk().exec_(build_sky_task(plan), cluster_name))

    def launch_requests(self, cluster_name: str) -> list[LaunchRequest]:
        sdk = self._sdk()
        # an exec (a probe's start) counts too: live, the job is on its way
        names = {sdk.launch_request_name(), sdk.exec_request_name()}
        found = [p for p in sdk.requests_of(cluster_name)
                 if p.name in names and p.cluster_name == cluster_name]
        found.sort(key=lambda p: p.created_at)
        return [LaunchRequest(p.request_id, p.status, sdk.request_error_text(p.error))
                for p in found]

    def request_error(self, request_id: str) -> BaseException | None:
        sdk = self._sdk()
        try:
            sdk.get(request_id)  # re-raises the request's own exception, unpickled
        except Exception as exc:
            return exc
        return None

    def request_log_tail(self, request_id: str, max_bytes: int) -> str:
        out = TailBuffer(max_bytes)
        # follow=False: prints the log's last lines to ``out`` and returns (no result)
        self._sdk().request_log(request_id, MAX_LOG_LINES, out)
        return out.text()

    def status(self, cluster_name: str) -> ClusterRecord | None:
        for rec in self._sdk().cluster_records([cluster_name]):
            if rec.name == cluster_name:
                return ClusterRecord(rec.name, rec.status.value, float(rec.launched_at))
        return None

    def list_clusters(self, prefix: str) -> list[ClusterRecord]:
        return [
            ClusterRecord(r.name, r.status.value, float(r.launched_at))
            for r in self._sdk().cluster_records(None)
            if r.name.startswith(prefix)
        ]

    def queue(self, cluster_name: str) -> list[ClusterJob]:
        jobs = self._sdk().job_records(cluster_name)
        return sorted(
            (ClusterJob(j.job_id, j.status.value, j.start_at, j.end_at) for j in jobs),
            key=lambda j: j.job_id,
        )

    def down(self, cluster_name: str) -> None:
        self._sdk().down(cluster_name)

    def cancel_request(self, request_id: str) -> None:
        self._sdk().cancel([request_id])

    def tail_logs(
        self, cluster_name: str, job_id: int | None, follow: bool, tail: int = 0
    ) -> Iterator[str]:
        yield from self._sdk().tail_logs(cluster_name, job_id, follow, tail)

    def enabled_clouds(self) -> list[str]:
        return sorted({c.lower() for c in self._sdk().enabled_clouds()})
