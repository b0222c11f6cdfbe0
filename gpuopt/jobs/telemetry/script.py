"""The sampler as one standalone Python script for the node (where gpuopt is not
installed): parse.py's source, then sampler.py's, as one module."""

from __future__ import annotations

import inspect

FUTURE = "from __future__ import annotations\n"


def node_script() -> str:
    """The text of ``telemetry.py``, run as ``python3 telemetry.py OUT INTERVAL [PROGRESS]``."""
    from gpuopt.jobs.telemetry import parse, sampler

    parts = [inspect.getsource(parse), inspect.getsource(sampler)]
    body = "\n".join(p.replace(FUTURE, "", 1) for p in parts)
    return FUTURE + body
