"""The typed lifecycle of a job and its attempts (stored as these strings, never parsed).

    job:      queued -> launching -> running -> succeeded | failed | cancelled
                           ^            |
                           +- preempted-+
    attempt:  launching -> running -> ended (with an EndReason, and a FailureKind when
              the reason is ``failed``); a probe: provisioning -> launching -> ...

Decisions read these values only; the human-readable ``detail`` / ``last_error`` texts
are for people and are never inspected by code.
"""

from __future__ import annotations

from enum import StrEnum


class JobStatus(StrEnum):
    QUEUED = "queued"
    LAUNCHING = "launching"
    RUNNING = "running"
    PREEMPTED = "preempted"  # its attempt was preempted; the job waits to be re-placed
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_live(self) -> bool:
        return self in LIVE_JOB_STATUSES


LIVE_JOB_STATUSES = (JobStatus.QUEUED, JobStatus.LAUNCHING, JobStatus.RUNNING,
                     JobStatus.PREEMPTED)
TERMINAL_JOB_STATUSES = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)
PLACEABLE_JOB_STATUSES = (JobStatus.QUEUED, JobStatus.PREEMPTED)


class AttemptPhase(StrEnum):
    LAUNCHING = "launching"  # its row is committed; the executor may not have it yet
    RUNNING = "running"
    # gpuopt is stopping it to move the job (the deadline spot policy): recorded before
    # the executor is asked to stop, so a loop that dies in between leaves the intent,
    # and the next one ends it as moved, not as stopped outside gpuopt
    STOPPING = "stopping"
    # it ended (or is being ended), but the executor could not confirm that nothing of it
    # is left (a failed stop, e.g. a full disk): its end reason, end time and cost are
    # recorded; the stop is retried with back-off, and the job moves on only when it
    # succeeds, so nothing new starts beside a leftover (orchestrator/reconcile/stop_retry.py)
    STOP_FAILED = "stop_failed"
    ENDED = "ended"
    # a probe (make before break, reconcile/probing.py): its instance is requested or up
    # while the job's open attempt (``probe_of``) still runs the program; nothing of the
    # job runs on it until that attempt has stopped, then it is started (launching).
    # Not open: the job's program is the open attempt's.
    PROVISIONING = "provisioning"


OPEN_ATTEMPT_PHASES = (AttemptPhase.LAUNCHING, AttemptPhase.RUNNING, AttemptPhase.STOPPING)


class EndReason(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # see FailureKind
    PREEMPTED = "preempted"  # the machine went away (or the attempt was lost)
    CANCELLED = "cancelled"
    # stopped by gpuopt to move the job: the deadline spot policy chose to hold something
    # else (spot elsewhere, on-demand, or nothing for now); the job is placed again
    MOVED = "moved"


class FailureKind(StrEnum):
    """Why an attempt failed; decides whether and how the job is tried again."""

    PROGRAM = "program"  # `run` exited non-zero: the user's program, never a preemption
    SETUP = "setup"  # `setup` exited non-zero
    CAPACITY = "capacity"  # no capacity at that place now: retried elsewhere, backing off
    LAUNCH = "launch"  # the launch failed for a reason that may pass: retried, backing off
    REFUSED = "refused"  # retrying cannot fix it (credentials, network, invalid request,
    #                      quota, a spec the node cannot run): the job fails at once
    NOT_STARTED = "not_started"  # recorded but never started (the launcher died first)
