"""The restart / give-up / backoff rules on their own (policies.lifecycle)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpuopt.core.places import Place
from gpuopt.jobs.states import EndReason, FailureKind, JobStatus
from gpuopt.policies.lifecycle import (
    Ending,
    PastAttempt,
    RetryRules,
    backoff,
    launch_not_before,
    next_state,
    places_to_avoid,
)

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
RULES = RetryRules(max_restarts_on_errors=2)
A = Place("aws", "us-east-1", "us-east-1a")
B = Place("gcp", "us-central1", "us-central1-a")


def _failed(kind: FailureKind, at: datetime = T0, place: Place = A) -> PastAttempt:
    return PastAttempt(EndReason.FAILED, kind, at, place)


def test_a_refused_launch_fails_at_once_without_spending_restarts() -> None:
    """The misfire: a launch the node cannot run is not the user's program failing."""
    nxt = next_state(Ending(EndReason.FAILED, FailureKind.REFUSED,
                            detail="the local executor needs a local checkpoint directory"),
                     restarts_used=0, history=[], rules=RULES)
    assert nxt.status is JobStatus.FAILED and nxt.restarts_used == 0
    assert nxt.exit_code is None
    assert nxt.last_error == "cannot launch: the local executor needs a local checkpoint directory"
    assert "exit code" not in nxt.event and "exit code" not in (nxt.last_error or "")


def test_program_failures_spend_restarts_then_fail_with_the_exit_code() -> None:
    first = next_state(Ending(EndReason.FAILED, FailureKind.PROGRAM, exit_code=3,
                              detail="run exited with code 3"),
                       restarts_used=0, history=[], rules=RULES)
    assert (first.status, first.restarts_used) == (JobStatus.QUEUED, 1)
    assert first.event == "program exited with code 3; restart 1 of 2"
    last = next_state(Ending(EndReason.FAILED, FailureKind.PROGRAM, exit_code=3,
                             detail="run exited with code 3", last_lines="boom"),
                      restarts_used=2, history=[], rules=RULES)
    assert (last.status, last.exit_code) == (JobStatus.FAILED, 3)
    assert last.last_error == "run exited with code 3\nlast log lines:\nboom"


def test_a_failure_without_an_exit_code_never_says_exit_code_none() -> None:
    nxt = next_state(Ending(EndReason.FAILED, FailureKind.SETUP), restarts_used=0,
                     history=[], rules=RetryRules())
    assert nxt.status is JobStatus.FAILED
    assert "None" not in nxt.event and "None" not in (nxt.last_error or "")


def test_capacity_failures_retry_within_max_restarts_then_fail() -> None:
    retry = next_state(Ending(EndReason.FAILED, FailureKind.CAPACITY, detail="no H100"),
                       restarts_used=0, history=[], rules=RULES)
    assert (retry.status, retry.restarts_used) == (JobStatus.QUEUED, 1)
    assert retry.event == "no capacity: no H100; retry 1 of 2 in 30 s"
    spent = next_state(Ending(EndReason.FAILED, FailureKind.CAPACITY, detail="no H100"),
                       restarts_used=2, history=[_failed(FailureKind.CAPACITY)] * 2,
                       rules=RULES)
    assert spent.status is JobStatus.FAILED and spent.restarts_used == 2
    assert spent.last_error == ("no capacity: no H100 (retries used: 2 of "
                                "max_restarts_on_errors 2)")
    # With no retries allowed (the default), the first capacity failure ends the job.
    none = next_state(Ending(EndReason.FAILED, FailureKind.LAUNCH, detail="x"),
                      restarts_used=0, history=[], rules=RetryRules())
    assert none.status is JobStatus.FAILED


def test_never_started_attempts_retry_without_spending_restarts_but_are_bounded() -> None:
    again = next_state(Ending(EndReason.FAILED, FailureKind.NOT_STARTED, detail="gone"),
                       restarts_used=0, history=[], rules=RetryRules())
    assert (again.status, again.restarts_used) == (JobStatus.QUEUED, 0)
    history = [_failed(FailureKind.NOT_STARTED)] * 2
    done = next_state(Ending(EndReason.FAILED, FailureKind.NOT_STARTED, detail="gone"),
                      restarts_used=0, history=history, rules=RetryRules())
    assert done.status is JobStatus.FAILED
    assert done.last_error == "3 attempts in a row never started; last: gone"


def test_preemption_and_success_and_cancel() -> None:
    assert next_state(Ending(EndReason.PREEMPTED, detail="spot"), restarts_used=1,
                      history=[], rules=RULES).status is JobStatus.PREEMPTED
    ok = next_state(Ending(EndReason.SUCCEEDED), restarts_used=0, history=[], rules=RULES)
    assert (ok.status, ok.exit_code, ok.finished) == (JobStatus.SUCCEEDED, 0, True)
    c = next_state(Ending(EndReason.CANCELLED, detail="by you"), restarts_used=0,
                   history=[], rules=RULES)
    assert (c.status, c.last_error) == (JobStatus.CANCELLED, "by you")


def test_backoff_doubles_up_to_the_cap() -> None:
    assert [backoff(n, RULES).total_seconds() for n in range(1, 8)] == [
        30, 60, 120, 240, 480, 600, 600]
    assert backoff(10_000, RULES) == timedelta(minutes=10)  # no overflow for a long streak
    assert backoff(0, RULES) == timedelta(0)


def test_launch_not_before_counts_only_the_newest_failed_launches_in_a_row() -> None:
    assert launch_not_before([], RULES) is None
    ok = PastAttempt(EndReason.PREEMPTED, None, T0)
    assert launch_not_before([_failed(FailureKind.CAPACITY), ok], RULES) is None
    history = [ok, _failed(FailureKind.CAPACITY, T0), _failed(FailureKind.LAUNCH, T0)]
    assert launch_not_before(history, RULES) == T0 + timedelta(seconds=60)
    # A program failure is not a launch failure: no backoff after it.
    assert launch_not_before([_failed(FailureKind.PROGRAM)], RULES) is None


def test_places_without_capacity_are_avoided_on_the_next_try() -> None:
    history = [_failed(FailureKind.CAPACITY, place=B), PastAttempt(EndReason.SUCCEEDED, None, T0),
               _failed(FailureKind.CAPACITY, place=A), _failed(FailureKind.LAUNCH, place=B)]
    assert places_to_avoid(history) == frozenset({A})  # B's capacity failure is older
    assert places_to_avoid([]) == frozenset()
