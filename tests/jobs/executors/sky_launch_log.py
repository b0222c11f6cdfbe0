"""A failed launch as SkyPilot 0.14 reports it to the client, for the tests.

- The exception: ``ResourcesUnavailableError`` with the messages SkyPilot's failover
  writes (format strings copied from sky/backends/cloud_vm_ray_backend.py:
  ``_insufficient_resources_msg``, ``_RESOURCES_UNAVAILABLE_LOG``,
  ``_format_provision_failure_blocks``), its ``failover_history`` holding one such error
  per place tried, sent through the API server's own serialisation
  (``serialize_exception`` + pickle, then ``deserialize_exception``, as
  ``Request.set_error`` / ``get_error`` do).
- The request's log: lines formatted by SkyPilot's own log formatters (sky_logging),
  from the clouds' real exception types (botocore ``ClientError``, azure-core
  ``HttpResponseError`` from an ARM error body) and SkyPilot's own message functions
  where they exist (GCP ``_format_and_log_message_from_errors``).
"""

from __future__ import annotations

import json
import logging
import textwrap
from dataclasses import dataclass

RESOURCES = "{AWS(g5.xlarge[Spot], {'A10G': 1})}"  # str() of the requested Resources set
SIMPLE = "[spot](gpus=A10G:1, g5.xlarge, ...)"  # resources_utils.format_resource(simple)
_CREATED = 1_780_315_200.0  # the records' time (only the prefix shows it)


@dataclass(frozen=True)
class Tried:
    cloud: str  # str(sky.clouds.AWS()) etc.: "AWS", "GCP", "Azure"
    region: str
    zone: str | None


def _record(level: int, filename: str, lineno: int, message: str, dim: bool) -> str:
    from sky import sky_logging

    rec = logging.LogRecord("sky.provision", level, f"/sky/{filename}", lineno, message,
                            None, None)
    rec.created, rec.msecs, rec.process = _CREATED, 0.0, 4242
    return (sky_logging.DIM_FORMATTER if dim else sky_logging.FORMATTER).format(rec)


def launching(t: Tried) -> str:
    """``_retry_zones``: the line before each try."""
    import colorama
    from sky.utils import ux_utils

    zone_str = f" ({t.zone})" if t.zone else ""
    msg = ux_utils.starting_message(
        f"Launching on {t.cloud} {t.region}{colorama.Style.RESET_ALL}{zone_str}.")
    return _record(logging.INFO, "cloud_vm_ray_backend.py", 1305, msg, dim=False)


def aws_failed(code: str, message: str) -> str:
    """sky/provision/aws/instance.py ``_create_instances``: a botocore ClientError from
    the fail-fast EC2 client (max_attempts 0)."""
    from botocore.exceptions import ClientError

    exc = ClientError({"Error": {"Code": code, "Message": message},
                       "ResponseMetadata": {"MaxAttemptsReached": True, "RetryAttempts": 0}},
                      "RunInstances")
    return _record(logging.WARNING, "instance.py", 415,
                   f"create_instances: Attempt failed with {exc}", dim=True)


def gcp_failed(code: str, message: str, zone: str) -> str:
    """sky/provision/gcp/instance_utils.py: an operation's errors, as SkyPilot logs them."""
    from sky.provision.gcp import instance_utils

    logging.getLogger("sky.provision.gcp.instance_utils").disabled = True
    try:
        msg = instance_utils._format_and_log_message_from_errors(
            [{"code": code, "domain": "global", "message": message}], None, zone)
    finally:
        logging.getLogger("sky.provision.gcp.instance_utils").disabled = False
    return _record(logging.WARNING, "instance_utils.py", 155, msg, dim=True)


class _ArmResponse:
    """What azure-core reads of an HTTP response to build HttpResponseError."""

    def __init__(self, status: int, reason: str, body: dict[str, object]) -> None:
        self.status_code, self.reason, self._body = status, reason, json.dumps(body)
        self.headers: dict[str, str] = {}

    def text(self, encoding: str | None = None) -> str:
        return self._body


def azure_failed(code: str, message: str, status: int = 409) -> str:
    """sky/provision/azure/instance.py ``run_instances``: an ARM error (``{"error":
    {"code", "message"}}``) as azure-core raises it and SkyPilot logs it."""
    from azure.core.exceptions import HttpResponseError
    from sky.utils import common_utils

    exc = HttpResponseError(response=_ArmResponse(  # type: ignore[arg-type]
        status, "Conflict", {"error": {"code": code, "message": message}}))
    err = common_utils.format_exception(exc, use_bracket=True).replace("\n", " ")
    return _record(logging.ERROR, "instance.py", 531, f"Failed to create instances: {err}",
                   dim=True)


def _exhausted_message(t: Tried) -> str:
    where = f"in {t.zone} " if t.zone else f"in all zones in {t.region} "
    return f"Failed to acquire resources {where}for {RESOURCES}. "


def exhausted(t: Tried) -> str:
    """``provision_with_retries``: the place's ResourcesUnavailableError, logged."""
    from sky import exceptions
    from sky.utils import common_utils

    e = exceptions.ResourcesUnavailableError(_exhausted_message(t))
    return _record(logging.WARNING, "cloud_vm_ray_backend.py", 1936,
                   common_utils.format_exception(e), dim=False)


def client_error(tried: list[Tried]) -> BaseException:
    """The exception ``sky.get(request_id)`` re-raises on the client after the failover
    gave up on every place tried."""
    from sky import exceptions
    from sky.backends import cloud_vm_ray_backend as backend
    from sky.server.requests.serializers import decoders, encoders

    history: list[Exception] = [exceptions.ResourcesUnavailableError(_exhausted_message(t))
                                for t in tried]
    lines = [f"Provision failures (tried {len(tried)} infra):\n"]
    for t, e in zip(tried, history, strict=True):
        lines += [f"\u2717 {t.cloud} ({t.zone or t.region}) \u2014 {SIMPLE}",
                  textwrap.indent(str(e), "  "), ""]
    blocks = "\n".join(lines).rstrip() + "\n"
    raised = exceptions.ResourcesUnavailableError(
        backend._RESOURCES_UNAVAILABLE_LOG + "\n" + blocks, failover_history=history)
    raised.stacktrace = "Traceback (most recent call last):\n  ...\n"  # type: ignore[attr-defined]
    wire = encoders.pickle_and_encode(exceptions.serialize_exception(raised))
    return exceptions.deserialize_exception(decoders.decode_and_unpickle(wire))


def request_log(*lines: str) -> str:
    """The request's log as ``stream_and_get`` prints it (each record one line)."""
    return "".join(line + "\n" for line in lines)
