"""The one module that touches SkyPilot: every name gpuopt uses from the ``sky`` package.

Written against SkyPilot's public SDK as the pinned release (``SKYPILOT_PIN``) ships it:
``sky.client.sdk`` for everything the API server answers (those functions return a
request id; ``get`` waits for the request's result and re-raises its exception,
``stream_and_get`` prints its log), the task classes ``sky`` re-exports (``Task``,
``Resources``, ``Storage``), ``sky.exceptions`` for classifying failures, and
``sky.server.common`` for asking whether an API server answers *without* starting one.

Each SkyPilot name is reached as ``module.name`` with ``module`` one of the lazy modules
below (core/lazy_import.py), so ``tests/jobs/executors/test_sky_sdk_names.py`` can read
this file and check every name, and every call's arguments, against the installed
release: an upgrade that renames or reshapes one fails in CI, not at a user's first
launch. ``sky`` is imported
on first use (``gpuopt --help`` stays fast).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gpuopt.core.lazy_import import LazyModule

# The SkyPilot releases this adapter is written and tested against (pyproject.toml's
# ``skypilot`` extra says the same; a test checks both and the installed version).
SKYPILOT_PIN = ">=0.14,<0.15"

SKY = "sky"
SDK = "sky.client.sdk"
EXCEPTIONS = "sky.exceptions"
SERVER = "sky.server.common"
YAML = "sky.utils.yaml_utils"
DAG_UTILS = "sky.utils.dag_utils"
SERVER_CONSTANTS = "sky.server.constants"
REQUEST_NAMES = "sky.server.requests.request_names"
ANNOTATIONS = "sky.utils.annotations"
MODULES = (SKY, SDK, EXCEPTIONS, SERVER, YAML, DAG_UTILS, SERVER_CONSTANTS, REQUEST_NAMES,
           ANNOTATIONS)

# SkyPilot's modules (and requests, which SkyPilot's client raises from), imported on
# first use.
sky = LazyModule(SKY, extra="skypilot")
sdk = LazyModule(SDK, extra="skypilot")
sky_exceptions = LazyModule(EXCEPTIONS, extra="skypilot")
server_common = LazyModule(SERVER, extra="skypilot")
yaml_utils = LazyModule(YAML, extra="skypilot")
dag_utils = LazyModule(DAG_UTILS, extra="skypilot")
server_constants = LazyModule(SERVER_CONSTANTS, extra="skypilot")
request_names = LazyModule(REQUEST_NAMES, extra="skypilot")
sky_annotations = LazyModule(ANNOTATIONS, extra="skypilot")
requests = LazyModule("requests")

# Fields of SkyPilot's response records gpuopt reads (pydantic models; checked by the test).
RECORD_FIELDS: Mapping[tuple[str, str], tuple[str, ...]] = {
    ("sky.server.requests.payloads", "RequestPayload"):
        ("request_id", "name", "status", "created_at", "error", "cluster_name"),
    ("sky.schemas.api.responses", "StatusResponse"): ("name", "status", "launched_at"),
    ("sky.schemas.api.responses", "ClusterJobRecord"):
        ("job_id", "status", "start_at", "end_at"),
}


# Methods gpuopt calls on SkyPilot's objects (checked by the test too).
MEMBERS: Mapping[tuple[str, str], tuple[str, ...]] = {
    (SKY, "Task"): ("set_storage_mounts", "set_resources", "to_yaml_config"),
}


# -- the API server, without starting one ---------------------------------------------
@dataclass(frozen=True, slots=True)
class ServerState:
    url: str
    local: bool  # the default local server (SkyPilot starts it on a first SDK call)
    status: str  # healthy, unhealthy, version_mismatch, needs_auth
    version: str | None  # the server's SkyPilot version, when it answered

    @property
    def healthy(self) -> bool:
        return self.status == "healthy"


def version() -> str:
    return str(sky.__version__)


def server_state() -> ServerState:
    """Whether an API server answers at the configured endpoint (never starts one)."""
    url = str(server_common.get_server_url())
    info = server_common.get_api_server_status()
    return ServerState(url, bool(server_common.is_api_server_local()), str(info.status.value),
                       info.version)


def server_url() -> str:
    return str(server_common.get_server_url())


def api_stop() -> None:
    sdk.api_stop()


# -- requests to the API server (each returns a request id) ---------------------------
def launch(task: Any, cluster_name: str, *, idle_minutes_to_autostop: int | None,
           down: bool) -> str:
    return str(sdk.launch(task, cluster_name=cluster_name, retry_until_up=False,
                                idle_minutes_to_autostop=idle_minutes_to_autostop,
                                down=down))


def exec_(task: Any, cluster_name: str) -> str:
    """``sky exec``: run the task on the cluster as it is (no provisioning, no setup)."""
    return str(sdk.exec(task, cluster_name=cluster_name))


def requests_of(cluster_name: str) -> list[Any]:
    """The API server's requests about that cluster (``RequestPayload``), finished too."""
    return list(sdk.api_status(all_status=True, cluster_name=cluster_name))


def launch_request_name() -> str:
    """The name the API server files a launch request under ('sky.launch' in 0.14)."""
    return str(server_constants.REQUEST_NAME_PREFIX
               + request_names.RequestName.CLUSTER_LAUNCH.value)


def exec_request_name() -> str:
    """The name the API server files an exec request under ('sky.exec' in 0.14)."""
    return str(server_constants.REQUEST_NAME_PREFIX
               + request_names.RequestName.CLUSTER_EXEC.value)


def request_error_text(error: str | None) -> str:
    """A ``RequestPayload.error`` (JSON: null, or SkyPilot's type/message record)."""
    try:
        record = json.loads(error) if error else None
    except ValueError:
        return error or ""
    if isinstance(record, dict):
        return f"{record.get('type', 'Error')}: {record.get('message', '')}"
    return "" if record is None else str(record)


def get(request_id: str) -> Any:
    """Waits for the request; its result, or its own exception re-raised."""
    return sdk.get(request_id)


def request_log(request_id: str, tail: int, out: Any) -> None:
    """Prints the last ``tail`` lines of the request's log to ``out`` (no waiting)."""
    sdk.stream_and_get(request_id, tail=tail, follow=False, output_stream=out)


def cluster_records(cluster_names: list[str] | None) -> list[Any]:
    """``StatusResponse`` records (refreshed from the cloud where SkyPilot would)."""
    refresh = sky.StatusRefreshMode.AUTO
    return list(get(sdk.status(cluster_names=cluster_names, refresh=refresh)))


def job_records(cluster_name: str) -> list[Any]:
    return list(get(sdk.queue(cluster_name, skip_finished=False)))


def down(cluster_name: str) -> None:
    """Tears the cluster down; one that does not exist is not an error."""
    try:
        get(sdk.down(cluster_name))
    except sky_exceptions.ClusterDoesNotExist:
        return


def cancel(request_ids: list[str]) -> None:
    get(sdk.api_cancel(request_ids, silent=True))


def tail_logs(cluster_name: str, job_id: int | None, follow: bool, tail: int) -> Iterator[str]:
    for chunk in sdk.tail_logs(cluster_name, job_id, follow=follow, tail=tail,
                                     preload_content=False):
        if chunk is None:
            return
        yield from chunk.splitlines()


def enabled_clouds() -> list[str]:
    """SkyPilot's names of the clouds it has enabled for compute (its ``sky check``
    cache on the API server)."""
    return [str(c) for c in get(sdk.enabled_clouds())]


def optimize(task: Any) -> str:
    """Has the API server's optimizer place ``task``; returns the request id (its log holds
    SkyPilot's table of what it considered and chose). Raises SkyPilot's own exception
    (ResourcesUnavailableError, NoCloudAccessError, ...) when it finds no placement. The
    server keeps no result (``ignore_return_value``): a task whose every field is pinned
    leaves the optimizer that one placement or none."""
    dag = dag_utils.convert_entrypoint_to_dag(task)
    request_id = str(sdk.optimize(dag))
    get(request_id)
    return request_id


# -- building a task (client side, against the local catalog) -------------------------
def _client_side() -> None:
    """Marks this process as SkyPilot's client, as every SDK call does on entry
    (``annotations.client_api``): until then SkyPilot's catalog code acts as if it ran on
    the API server and prints its spinners as encoded ``<sky-payload>`` lines."""
    sky_annotations.client_api(version)()


def new_task(*, name: str, setup: str | None, run: str | None, envs: dict[str, str],
             secrets: dict[str, str] | None, workdir: str | None,
             file_mounts: dict[str, str] | None, storage_mounts: dict[str, Any],
             resources: Any, num_nodes: int = 1) -> Any:
    _client_side()
    task = sky.Task(name=name, setup=setup, run=run, envs=envs, secrets=secrets,
                          workdir=workdir, file_mounts=file_mounts, num_nodes=num_nodes)
    if storage_mounts:
        task.set_storage_mounts(storage_mounts)
    task.set_resources(resources)
    return task


def new_resources(*, infra: str, instance_type: str | None,
                  accelerators: dict[str, int] | None, use_spot: bool) -> Any:
    _client_side()
    return sky.Resources(infra=infra, instance_type=instance_type,
                               accelerators=accelerators, use_spot=use_spot)


def any_resources() -> Any:
    return sky.Resources()


def new_storage(*, source: str, mode: str, persistent: bool) -> Any:
    return sky.Storage(source=source, mode=sky.StorageMode[mode],
                             persistent=persistent)


def storage_from_yaml(config: dict[str, Any]) -> Any:
    return sky.Storage.from_yaml_config(config)


def task_yaml(task: Any, resources: dict[str, Any] | None = None) -> str:
    """The task as SkyPilot's own YAML (what ``sky launch`` reads); ``resources``, when
    given, is written as the task's resources section instead of SkyPilot's own."""
    _client_side()
    config = task.to_yaml_config()
    if resources is not None:
        config["resources"] = resources
    return str(yaml_utils.dump_yaml_str(config))


def is_network_error(exc: BaseException) -> bool:
    """SkyPilot (or the SDK it used) could not reach the network: a connection or timeout
    error of ``requests``, or a cloud SDK's, wrapped in SkyPilot's CloudError."""
    if isinstance(exc, requests.ConnectionError | requests.Timeout):
        return True
    return isinstance(exc, sky_exceptions.CloudError) and getattr(
        exc, "error_type", "") in ("ConnectionError", "EndpointConnectionError",
                                   "ConnectTimeoutError", "NameResolutionError")


# -- SkyPilot's exceptions --------------------------------------------------------------
def exception_types(names: tuple[str, ...]) -> tuple[type[BaseException], ...]:
    """Those of SkyPilot's exception classes this release has (by name)."""
    module = sky_exceptions.load()
    return tuple(getattr(module, n) for n in names if hasattr(module, n))


def resources_unavailable() -> type[BaseException]:
    return sky_exceptions.ResourcesUnavailableError


def cloud_error() -> type[BaseException]:
    """SkyPilot's wrapper of a cloud SDK's exception (its class name in ``error_type``)."""
    return sky_exceptions.CloudError



# -- why SkyPilot cannot be used ---------------------------------------------------------
def why_unusable(exc: BaseException) -> str:
    """The cause of a failed call to SkyPilot and its fix, by SkyPilot's exception type
    (no API server, a version mismatch, a login needed); anything else as it was said."""
    url = server_url()
    if isinstance(exc, sky_exceptions.ApiServerConnectionError | requests.ConnectionError):
        return (f"no SkyPilot API server answers at {url}: start one with "
                "`sky api start`, or point SkyPilot at yours with `sky api login -e URL`")
    if isinstance(exc, sky_exceptions.APIVersionMismatchError):
        return (f"SkyPilot {version()} here and the API server at {url} are versions "
                f"that do not work together ({_first_line(exc)}): install the server's "
                "skypilot release here, or restart a local server with `sky api stop` "
                "and `sky api start`")
    if isinstance(exc, sky_exceptions.ApiServerAuthenticationError):
        return f"the SkyPilot API server at {url} needs a login: `sky api login -e {url}`"
    return f"SkyPilot failed ({type(exc).__name__}: {_first_line(exc)})"


def _first_line(exc: BaseException) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()  # SkyPilot's colours
    return text.splitlines()[0] if text else type(exc).__name__
