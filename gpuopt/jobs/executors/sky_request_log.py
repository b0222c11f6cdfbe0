"""What a failed SkyPilot launch request's log says: the clouds' error codes, and where.

SkyPilot 0.14 keeps the clouds' per-zone errors out of the exception a failed launch
raises. ``RetryingVmProvisioner._retry_zones`` (sky/backends/cloud_vm_ray_backend.py)
catches each zone's cloud exception, blocks the zone and moves on; once a region is
exhausted it raises ``ResourcesUnavailableError("Failed to acquire resources in all
zones in <region> for <resources>. ")``, with no cause, and *that* is what
``provision_with_retries`` appends to ``failover_history``; the final error says
"Reasons for provision failures (for details, please check the log above): ...".
``__cause__`` never reaches the client anyway (the API server pickles the exception's
``__dict__``, sky/exceptions.py ``serialize_exception``).

The codes reach the request's log (what ``sky.stream_and_get(request_id)`` streams), as
SkyPilot's provisioners log them at WARNING and above (sky/provision/logging.py sends
``sky.provision`` WARNING+ to the request's stdout):

- AWS (sky/provision/aws/instance.py ``_create_instances``), once per subnet:
  ``create_instances: Attempt failed with An error occurred (InsufficientInstanceCapacity)
  when calling the RunInstances operation (reached max retries: 0): ...``;
- GCP (sky/provision/gcp/instance_utils.py ``_format_and_log_message_from_errors``):
  ``Got return code 'ZONE_RESOURCE_POOL_EXHAUSTED' in us-central1-a: "The zone ..."``;
- Azure (sky/provision/azure/instance.py ``run_instances``): ``Failed to create
  instances: [azure.core.exceptions.HttpResponseError] (SkuNotAvailable) ...``;

each after the backend's ``⚙︎ Launching on <cloud> <region> (<zones>).`` line for that
try (``_retry_zones``), which is how a code is placed here. Lines carry SkyPilot's log
prefix and colour codes; both are ignored. Codes are read line by line with
jobs.executors.capacity_errors (a quota code that counts only beside the word "quota"
counts only on its own line). Pure: text in, sightings out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpuopt.jobs.executors.capacity_errors import Verdict, codes_in

MAX_LOG_BYTES = 64 * 1024  # the tail of the request's log that is read
MAX_LOG_LINES = 2000  # asked of the API server (it tails by lines), before the byte bound
MAX_PLACES_SHOWN = 6  # per code, in the detail

# colorama's codes as SkyPilot writes them (sky/utils/common_utils.py remove_color)
_COLOR = re.compile(r"\x1b[^m]*m")
# f'Launching{controller_str} on {to_provision.cloud} {region.name}{RESET}{zone_str}.'
_LAUNCHING = re.compile(
    r"Launching(?: [\w -]+?)? on (?P<cloud>\S+) (?P<region>[^\s(]+)(?: \((?P<zones>[^)]*)\))?\.")


@dataclass(frozen=True, slots=True)
class Sighting:
    code: str
    place: str  # "AWS us-east-1 (us-east-1a)", as SkyPilot named the try; "" if unknown


def log_lines(text: str) -> list[str]:
    """The log's lines without colour codes, blank lines dropped."""
    return [s for line in _COLOR.sub("", text).splitlines() if (s := line.strip())]


def sightings(lines: Iterable[str]) -> list[Sighting]:
    """Every (code, place) the log shows, in order, each once."""
    place = ""
    found: list[Sighting] = []
    for line in lines:
        m = _LAUNCHING.search(line)
        if m is not None:
            zones = f" ({m['zones']})" if m["zones"] else ""
            place = f"{m['cloud']} {m['region']}{zones}"
            continue
        for code in codes_in(line):
            s = Sighting(code, place)
            if s not in found:
                found.append(s)
    return found


def describe(verdict: Verdict, seen: Sequence[Sighting]) -> str:
    """``capacity: InsufficientInstanceCapacity in AWS us-east-1 (us-east-1a); ...``
    ("" when no code was found)."""
    if not verdict.codes:
        return ""
    parts = []
    for code in verdict.codes:
        places = [s.place for s in seen if s.code == code and s.place]
        shown = ", ".join(places[:MAX_PLACES_SHOWN])
        more = len(places) - MAX_PLACES_SHOWN
        shown += f" (+{more} more)" if more > 0 else ""
        parts.append(f"{code} in {shown}" if places else code)
    return f"{verdict.problem.value}: {'; '.join(parts)}"
