"""What remote submitters sent (the API's ``<data dir>/uploads/<id>/``: the job file
and its unpacked workdir), removed when no longer needed: a week after its job ended,
or an hour after it was made when no job refers to it (a refused or interrupted
submit). Run by the daemon's daily compaction task."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuopt.orchestrator.store import Store

KEEP_AFTER_END = timedelta(days=7)
ORPHAN_AFTER = timedelta(hours=1)


def uploads_root() -> Path:
    from gpuopt.orchestrator.paths import data_dir

    return data_dir() / "uploads"


def sweep_uploads(store: Store, now: datetime, root: Path | None = None) -> int:
    """Remove the upload directories no job needs any more; returns how many."""
    from gpuopt.orchestrator.store.jobs_repo import jobs_with_spec_under

    root = root or uploads_root()
    if not root.is_dir():
        return 0
    with store.session() as session:
        owners = {Path(path).parent.name: (live, finished)
                  for path, live, finished in jobs_with_spec_under(session, f"{root}/")}
    removed = 0
    for directory in sorted(root.iterdir()):
        if not directory.is_dir() or directory.is_symlink():
            continue
        found = owners.get(directory.name)
        if found is None:
            made = datetime.fromtimestamp(directory.stat().st_mtime, UTC)
            stale = now - made > ORPHAN_AFTER
        else:
            live, finished = found
            stale = not live and finished is not None and now - finished > KEEP_AFTER_END
        if stale:
            shutil.rmtree(directory, ignore_errors=True)
            removed += 1
    return removed
