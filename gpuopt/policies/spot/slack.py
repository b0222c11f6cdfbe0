"""Exact slack accounting under the simulation model, shared by the policies.

"Fallback slack" is the time to spare if the job went (or stayed) on on-demand now and
never left it: time left - work left - the restart overhead that move would cost. A
deadline that was feasible at start (task + one restart overhead <= deadline) is met
by any policy that only takes actions after which, in the worst case (spot preempted
at the very next tick), the fallback slack is still >= 0: on-demand itself keeps it.
"""

from __future__ import annotations

from gpuopt.policies.spot.model import TIME_TOLERANCE_S, Hold, Kind, Observation

EPS = TIME_TOLERANCE_S  # seconds; absorbs float rounding in sums of tick lengths


def overhead_if(obs: Observation, want: Hold) -> float:
    """Restart overhead that would be left to run when holding ``want`` this interval."""
    if want == obs.holding:
        return obs.overhead_left_s
    return obs.restart_overhead_s


def is_safe(obs: Observation, want: Hold) -> bool:
    """True if, after holding ``want`` for one interval, the deadline can still be met
    whatever spot does next (worst case: a spot hold is preempted at the next tick)."""
    gap = obs.tick_s
    d = obs.restart_overhead_s
    left = obs.time_left_s
    work_left = obs.work_left_s
    if want.kind is Kind.NONE:
        return left - gap - work_left - d >= -EPS
    o = overhead_if(obs, want)
    spent = min(gap, o)
    if work_left <= gap - spent + EPS:  # finishes during this interval (EPS: float noise)
        return spent + work_left <= left + EPS
    if want.kind is Kind.ON_DEMAND:
        return left - work_left - o >= -EPS
    # Spot: the whole overhead still to run may be lost, then on-demand needs its own.
    return left - work_left - o - d >= -EPS
