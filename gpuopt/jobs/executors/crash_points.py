"""Crash points: where a test makes the launching process die, to prove a window safe.

``GPUOPT_CRASH_AT=<point>`` in the environment makes the process SIGKILL itself when it
reaches that point (nothing is flushed or cleaned up: the same as ``kill -9`` landing
there). Unset, a crash point costs one environment lookup. Points, in launch order:

- ``claimed``: the attempt row is committed, the executor not yet asked (reconcile);
- ``intent``: the local executor wrote the attempt's intent, nothing spawned yet;
- ``spawned``: the wrapper exists (held at its gate), its identity not yet recorded;
- ``recorded``: state.json names the wrapper's process group, the gate not yet opened;
- ``stopping``: an attempt is marked stopping to move its job, the executor not yet
  asked to stop it (reconcile);
- ``sealing``: ``submit`` added the job and its sealed secrets to its transaction, not
  yet committed (orchestrator/cli/submit_cmd.py);
- ``ending``: a job's end and the removal of its secrets are in the closing
  transaction, not yet committed (reconcile);
- a probe's sequence (orchestrator/reconcile/probing.py): ``probe-claimed`` (its row
  committed, provisioning not asked), ``provisioned`` (its instance up, the held attempt
  untouched), ``probe-stopping`` (the held attempt marked stopping), ``probe-stopped``
  (its stop done, its close not committed), ``probe-broken`` (closed, the job not
  started on the probe), ``probe-starting`` (the probe's row launching, ``start`` not
  asked), ``probe-started``;
- ``eviction-recorded``: an eviction-rate poll's readings and its ``poll_status`` row
  are in its transaction, not yet committed (orchestrator/prices/eviction_poll.py).
"""

from __future__ import annotations

import os
import signal

ENV = "GPUOPT_CRASH_AT"
POINTS = ("claimed", "intent", "spawned", "recorded", "stopping", "sealing", "ending",
          "probe-claimed", "provisioned", "probe-stopping", "probe-stopped", "probe-broken",
          "probe-starting", "probe-started", "eviction-recorded")


def crash_point(name: str) -> None:
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
