"""Prices from SkyPilot's catalog files into the price history (``--source
skypilot-catalog`` and the daemon's ``poll-skypilot-catalog`` job).

Each cloud's file is parsed on its own and stored in its own transaction, like an API
poll's cloud: a file gpuopt cannot read is reported (naming the file and field) and
changes nothing, the others are stored. Offers are dated by the file's modification time
and labelled with it; an observation older than what the history already has for the same
place (a fresher API poll) is kept in the history without moving the current price.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from gpuopt.orchestrator.prices.poll import CloudPollResult, store_fetch

if TYPE_CHECKING:
    from gpuopt.orchestrator.store import Store

log = logging.getLogger("gpuopt.prices")

SOURCE = "skypilot-catalog"


def catalog_dir(configured: str | Path | None) -> Path:
    """The configured directory, or the installed SkyPilot's (UserError without it)."""
    from gpuopt.providers.skypilot_catalog.files import default_catalog_dir

    if configured:
        return Path(configured).expanduser()
    return default_catalog_dir()


def poll_catalog(store: Store, root: Path, now: datetime,
                 clouds: Sequence[str] | None = None
                 ) -> tuple[dict[str, CloudPollResult], list[str]]:
    """Read every registered cloud's ``vms.csv`` under ``root`` (``clouds``: only those)
    and store its offers. Returns cloud -> result, and notes on files not read."""
    from gpuopt.core.errors import UserError
    from gpuopt.providers.base import FetchResult
    from gpuopt.providers.skypilot_catalog.files import catalog_files, read_catalog

    files, notes = catalog_files(root, clouds)
    results: dict[str, CloudPollResult] = {}
    for f in files:
        try:
            parsed = read_catalog(f)
        except UserError as err:  # the file's own words: which file, line and field
            log.warning("%s", err)
            results[f.cloud] = CloudPollResult(f.cloud, status="error", error=str(err))
            continue
        skipped = tuple(f"{n} rows: {why}" for why, n in parsed.skipped.items())
        fetched = FetchResult(f.cloud, parsed.offers, warnings=skipped)
        results[f.cloud] = store_fetch(store, f.cloud, fetched, now, keep_older=True,
                                       availability=False)
    if clouds is not None:
        for cloud in clouds:
            if cloud not in results:
                results[cloud] = CloudPollResult(
                    cloud, status="skipped", error=f"no {cloud} catalog file under {root}")
    return results, notes
