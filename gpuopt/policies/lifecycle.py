"""What happens to a job when one of its attempts ends: retry, re-place, back off, give up.

Pure rules over typed values (jobs.states): the reconcile loop hands over how the
attempt ended and the job's counters, and gets the job's next status with the message
to record. No message text is ever inspected.

- succeeded / cancelled end the job; preempted re-places it (no limit: preemption is
  the cloud's doing, and the spot policy decides whether to keep taking spot);
- a failure of the user's program (``run`` or ``setup`` exited non-zero) and a launch
  that failed for a reason that may pass (no capacity there, a transient error) each
  spend one of the job's ``max_restarts_on_errors`` retries; past that the job fails;
- a launch retrying cannot fix (credentials, network, an invalid request, quota, a spec
  the node cannot run) fails the job at once, spending nothing;
- an attempt that was recorded but never started (its launcher died first) is tried
  again without spending a retry, at most ``max_not_started`` times in a row;
- after failed launches the next one waits: ``base x 2^(n-1)`` after the n-th failed
  launch in a row, at most ``cap`` (:func:`launch_not_before`); a place that had no
  capacity is avoided on the next try (:func:`places_to_avoid`);
- a job under the deadline spot policy (``RetryRules.spot_policy``): a spot launch that
  found no capacity is an observation, not an error: it spends no retry and starts no
  back-off, as the policy decides when and where to try again (from the availability
  history it reads); an attempt stopped to move the job (``moved``) places it again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from gpuopt.core.backoff import Backoff
from gpuopt.core.places import Place
from gpuopt.jobs.states import EndReason, FailureKind, JobStatus

BACKOFF_KINDS = (FailureKind.CAPACITY, FailureKind.LAUNCH)
# After the n-th failed launch in a row: 30 s x 2^(n-1), at most 10 min.
LAUNCH_BACKOFF = Backoff(first=timedelta(seconds=30), factor=2, cap=timedelta(minutes=10))


@dataclass(frozen=True, slots=True)
class RetryRules:
    max_restarts_on_errors: int = 0
    launch_backoff: Backoff = LAUNCH_BACKOFF
    max_not_started: int = 3
    # the deadline spot policy decides where and when spot is tried again
    spot_policy: bool = False


@dataclass(frozen=True, slots=True)
class PastAttempt:
    """What the rules need of an ended attempt of the job, oldest first."""

    reason: EndReason
    failure: FailureKind | None
    ended_at: datetime
    place: Place | None = None
    spot: bool = False  # the attempt was (or tried to be) spot


@dataclass(frozen=True, slots=True)
class Ending:
    """How the attempt that just ended ended. ``detail`` is shown, never inspected."""

    reason: EndReason
    failure: FailureKind | None = None
    exit_code: int | None = None
    detail: str = ""
    last_lines: str | None = None
    spot: bool = False  # the attempt was (or tried to be) spot


@dataclass(frozen=True, slots=True)
class NextState:
    status: JobStatus
    event: str  # what happened to the attempt, for the job's events
    restarts_used: int
    last_error: str | None = None
    exit_code: int | None = None

    @property
    def finished(self) -> bool:
        return not self.status.is_live


def _streak(history: Sequence[PastAttempt], kinds: tuple[FailureKind, ...],
            spot_policy: bool = False) -> int:
    n = 0
    for a in reversed(history):
        if a.reason is not EndReason.FAILED or a.failure not in kinds:
            break
        if spot_policy and _policy_capacity(a.failure, a.spot):
            break  # an observation for the spot policy, not a failed launch
        n += 1
    return n


def _policy_capacity(kind: FailureKind | None, spot: bool) -> bool:
    return kind is FailureKind.CAPACITY and spot


def not_started_streak(history: Sequence[PastAttempt]) -> int:
    return _streak(history, (FailureKind.NOT_STARTED,))


def launch_failure_streak(history: Sequence[PastAttempt], spot_policy: bool = False) -> int:
    """Failed launches (capacity or transient) in a row among the newest attempts (with
    ``spot_policy``, a spot launch without capacity ends the streak)."""
    return _streak(history, BACKOFF_KINDS, spot_policy)


def backoff(n: int, rules: RetryRules) -> timedelta:
    """The wait after the n-th failed launch in a row (n >= 1)."""
    return rules.launch_backoff.delay(n) if n >= 1 else timedelta(0)


def launch_not_before(history: Sequence[PastAttempt], rules: RetryRules) -> datetime | None:
    """When the next launch may start after failed launches in a row; None: at once."""
    n = launch_failure_streak(history, rules.spot_policy)
    if n == 0:
        return None
    return history[-1].ended_at + backoff(n, rules)


def places_to_avoid(history: Sequence[PastAttempt]) -> frozenset[Place]:
    """Places where the newest launches in a row found no capacity."""
    n = launch_failure_streak(history)
    recent = history[len(history) - n:] if n else ()
    return frozenset(a.place for a in recent
                     if a.failure is FailureKind.CAPACITY and a.place is not None)


def _with_detail(word: str, detail: str | None) -> str:
    """'preempted (spot reclaimed)'; a detail that already says the word is not wrapped
    again ('preempted (preempted ...)'), an empty one not shown."""
    if not detail:
        return word
    if detail.lower().startswith(word):
        return detail
    return f"{word} ({detail})"


def next_state(
    ending: Ending, *, restarts_used: int, history: Sequence[PastAttempt], rules: RetryRules
) -> NextState:
    """The job's next status once an attempt ended. ``history``: the attempts that ended
    before this one, oldest first."""
    settled = _not_a_failure(ending, restarts_used)
    if settled is not None:
        return settled
    detail = ending.detail
    kind = ending.failure or FailureKind.PROGRAM
    if kind is FailureKind.REFUSED:
        return NextState(JobStatus.FAILED,
                         f"could not be launched: {detail}; not retried (retrying cannot "
                         "fix this)", restarts_used, last_error=f"cannot launch: {detail}")
    if kind is FailureKind.NOT_STARTED:
        return _never_started(detail, restarts_used, history, rules)
    if rules.spot_policy and _policy_capacity(kind, ending.spot):
        return NextState(JobStatus.QUEUED, f"no spot capacity: {detail}; the deadline "
                         "spot policy decides where and when to try again", restarts_used)
    if kind in BACKOFF_KINDS:
        return _launch_failed(kind, detail, restarts_used, history, rules)
    return _program_failed(ending, kind, restarts_used, rules)


def _not_a_failure(ending: Ending, restarts_used: int) -> NextState | None:
    """Succeeded, preempted, moved or cancelled: the next state; a failure: None."""
    reason, detail = ending.reason, ending.detail
    if reason is EndReason.SUCCEEDED:
        return NextState(JobStatus.SUCCEEDED, "succeeded", restarts_used, exit_code=0)
    if reason is EndReason.PREEMPTED:
        return NextState(JobStatus.PREEMPTED, f"{_with_detail('preempted', detail)}; "
                         "re-placing", restarts_used)
    if reason is EndReason.MOVED:
        return NextState(JobStatus.QUEUED, f"stopped to move the job ({detail})",
                         restarts_used)
    if reason is EndReason.CANCELLED:
        return NextState(JobStatus.CANCELLED, f"cancelled ({detail})", restarts_used,
                         last_error=detail or "cancelled")
    return None


def _never_started(detail: str, restarts_used: int, history: Sequence[PastAttempt],
                   rules: RetryRules) -> NextState:
    n = not_started_streak(history) + 1
    if n >= rules.max_not_started:
        return NextState(JobStatus.FAILED,
                         f"never started ({detail}); giving up after {n} in a row",
                         restarts_used,
                         last_error=f"{n} attempts in a row never started; last: {detail}")
    return NextState(JobStatus.QUEUED, f"never started ({detail}); placing again",
                     restarts_used)


def _launch_failed(kind: FailureKind, detail: str, restarts_used: int,
                   history: Sequence[PastAttempt], rules: RetryRules) -> NextState:
    """No capacity or a failed launch: retried after a backoff while retries are left."""
    limit = rules.max_restarts_on_errors
    what = "no capacity" if kind is FailureKind.CAPACITY else "launch failed"
    if restarts_used < limit:
        n = restarts_used + 1
        wait = backoff(launch_failure_streak(history) + 1, rules)
        return NextState(JobStatus.QUEUED,
                         f"{what}: {detail}; retry {n} of {limit} in {_secs(wait)}", n)
    return NextState(JobStatus.FAILED, f"{what}: {detail}; no retries left",
                     restarts_used,
                     last_error=f"{what}: {detail} (retries used: {restarts_used} of "
                                f"max_restarts_on_errors {limit})")


def _program_failed(ending: Ending, kind: FailureKind, restarts_used: int,
                    rules: RetryRules) -> NextState:
    """The user's program (or setup) exited non-zero: a failure, never a preemption."""
    limit = rules.max_restarts_on_errors
    detail = ending.detail
    step = "setup" if kind is FailureKind.SETUP else "program"
    code = ending.exit_code
    ended = f"{step} exited with code {code}" if code is not None else f"{step} failed"
    if restarts_used < limit:
        n = restarts_used + 1
        return NextState(JobStatus.QUEUED, f"{ended}; restart {n} of {limit}", n)
    tail = f"\nlast log lines:\n{ending.last_lines}" if ending.last_lines else ""
    why = detail if detail and detail != ended else ended
    return NextState(JobStatus.FAILED, ended, restarts_used,
                     last_error=f"{why}{tail}", exit_code=code)


def _secs(d: timedelta) -> str:
    s = int(d.total_seconds())
    return f"{s // 60} min" if s >= 120 and s % 60 == 0 else f"{s} s"
