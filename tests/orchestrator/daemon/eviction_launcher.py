"""An eviction-rate poll in its own process, for the kill -9 test of the poll:

    python -m tests.orchestrator.daemon.eviction_launcher DB_URL DIR AT

runs one poll (orchestrator/prices/eviction_poll.py) at AT (ISO time) on the store, Resource
Graph answering with ANSWER (a bucket for each of PLACES). With GPUOPT_TEST_PAUSE_AT=
<crash point> (jobs/executors/crash_points.py) the poll stops there: it writes
``<DIR>/paused-<point>`` and waits to be killed by another process (the test's kill -9).
Prints the poll's status and new readings.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

SUB = "00000000-0000-0000-0000-0000000000aa"
SIZE = "Standard_NC6s_v3"  # 1 x V100
PLACES = {"eastus": "10-15", "westus2": "0-5"}
ANSWER = {"totalRecords": len(PLACES), "count": len(PLACES), "resultTruncated": "false",
          "data": [{"skuName": SIZE, "location": loc, "evictionRate": rate}
                   for loc, rate in PLACES.items()]}


def main(db_url: str, directory: str, at: str) -> int:
    import gpuopt.orchestrator.prices.eviction_poll as poll
    from gpuopt.orchestrator.store import open_store
    from tests.orchestrator.reconcile.probe_launcher import PAUSE_ENV, _pause_at

    if point := os.environ.get(PAUSE_ENV):
        poll.crash_point = _pause_at(point, Path(directory))

    def post(_body: Mapping[str, Any]) -> Mapping[str, Any]:
        return ANSWER

    store = open_store(db_url)
    result = poll.poll_eviction_rates(store, datetime.fromisoformat(at), post=post,
                                      subscription=SUB)["azure"]
    store.close()
    print(result.status, result.recorded)
    return 0 if result.status == "ok" else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
