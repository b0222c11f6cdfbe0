"""A real SkyPilot API server on loopback for the tests, in a throwaway HOME.

``start`` prepares the HOME in a subprocess (SkyPilot fixes its paths from HOME when it
is imported): SkyPilot's catalog cache in its real format (tests/jobs/executors/
sky_catalog_fixture.py) with gpuopt's embedded snapshot exported into it, credentials
files shaped like the clouds' own (with the providers' documented example keys), and
the clouds enabled in SkyPilot's own state database through SkyPilot's own functions
(``sky check`` would ask the clouds over the network, which the tests have not). Then
``sky api start --host 127.0.0.1 --port <free port>`` starts the server, exactly as a
user does; ``stop`` runs ``sky api stop`` against the same port.

Every process that talks to it gets ``env``: that HOME and
``SKYPILOT_API_SERVER_LOCAL_PORT`` (how SkyPilot's client finds a local server on a
non-default port), so nothing reaches a server or a ~/.sky outside the test.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENABLED = ("AWS", "GCP", "Azure")  # SkyPilot's canonical names of what the tests enable
START_TIMEOUT_S = 120.0


@dataclass
class SkyServer:
    home: Path
    port: int
    env: dict[str, str]
    start_seconds: float = 0.0
    log: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """A Python module run against this server (the repository on its path)."""
        return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                              timeout=timeout, cwd=REPO, env=self.env)


def client_env(home: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SKYPILOT_", "AWS_", "GOOGLE_", "AZURE_"))}
    env.update(HOME=str(home), SKYPILOT_API_SERVER_LOCAL_PORT=str(port),
               SKYPILOT_DISABLE_USAGE_COLLECTION="1", AWS_EC2_METADATA_DISABLED="true",
               PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p),
               COLUMNS="100")
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sky_cli() -> str:
    return str(Path(sys.executable).with_name("sky"))


def start(home: Path) -> SkyServer:
    server = SkyServer(home, free_port(), {})
    server.env = client_env(home, server.port)
    prepared = server.run("-m", "tests.sky_server_home", "prepare", *ENABLED, timeout=120)
    if prepared.returncode != 0:
        raise RuntimeError(f"preparing {home} failed: {prepared.stderr[-2000:]}")
    t0 = time.monotonic()
    started = subprocess.run([sky_cli(), "api", "start", "--host", "127.0.0.1",
                              "--port", str(server.port)], capture_output=True, text=True,
                             timeout=START_TIMEOUT_S, env=server.env, cwd=REPO)
    server.start_seconds = time.monotonic() - t0
    server.log.append(started.stdout + started.stderr)
    if started.returncode != 0:
        stop(server)
        raise RuntimeError(f"`sky api start` failed ({started.returncode}): "
                           f"{(started.stdout + started.stderr)[-2000:]}")
    enabled = server.run("-m", "tests.sky_server_home", "enable", *ENABLED,
                         timeout=START_TIMEOUT_S)
    server.start_seconds = time.monotonic() - t0
    if enabled.returncode != 0:
        stop(server)
        raise RuntimeError(f"enabling clouds failed: {enabled.stderr[-2000:]}")
    return server


def stop(server: SkyServer) -> None:
    subprocess.run([sky_cli(), "api", "stop"], capture_output=True, text=True, timeout=60,
                   env=server.env, cwd=REPO)
