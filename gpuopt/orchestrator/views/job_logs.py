"""An attempt's output as ``gpuopt logs`` and the API show it: the job's own secret
values hidden, control characters escaped (a program's bytes, not ours)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from gpuopt.core.errors import UserError

if TYPE_CHECKING:
    from gpuopt.orchestrator.store import Store
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow


def choose_attempt(job: JobRow, attempts: Sequence[AttemptRow], number: int | None
                   ) -> AttemptRow:
    if not attempts:
        raise UserError(f"{job.id} has not been launched yet ({job.status})", exit_code=2)
    chosen = attempts[-1] if number is None else next(
        (a for a in attempts if a.number == number), None)
    if chosen is None:
        raise UserError(f"{job.id} has attempts 1..{len(attempts)}, not {number}", exit_code=2)
    return chosen


def secret_values(store: Store | None, job: JobRow) -> list[str]:
    """The job's own secret values, to hide them in what is shown. A local attempt's log
    is redacted as it is written (jobs/executors/local_proc.SUPERVISOR); another
    executor's log is shown only when the values can be had here."""
    from gpuopt.orchestrator.reconcile.attempts import load_stored_spec
    from gpuopt.orchestrator.submit.job_secrets import SecretsUnavailable, open_secrets

    names = sorted(load_stored_spec(job).secrets)
    if not names:
        return []
    try:
        return list(open_secrets(store, job.id, names).values()) if store else []
    except SecretsUnavailable as err:
        if job.executor == "local":
            return []
        raise UserError(f"{err}; its log may hold them, so it is not shown (the last "
                        "lines, redacted, are in `gpuopt status`)", exit_code=2) from None


def log_lines(store: Store | None, job: JobRow, chosen: AttemptRow,
              follow: bool = False) -> Iterator[str]:
    """The attempt's lines (its last lines stored when the executor has none)."""
    from gpuopt.core.safe_text import escape_text
    from gpuopt.orchestrator.reconcile.attempts import ExecutorCache
    from gpuopt.orchestrator.submit.job_secrets import redact

    hidden = secret_values(store, job)

    def shown(line: str) -> str:
        return escape_text(redact(line, hidden) if hidden else line, multiline=True)

    printed = False
    for line in ExecutorCache()(job.executor).logs(chosen.cluster_name, follow=follow):
        yield shown(line)
        printed = True
    if not printed and chosen.last_log_lines:
        yield shown(chosen.last_log_lines)
