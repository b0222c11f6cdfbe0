"""What each attempt measured: stored as the reconcile loop sees it, turned into a
calibration record when the attempt ends, shown against the estimate by ``status``.

The reconcile loop calls :func:`record_running` on every watch of a running attempt and
:func:`record_ended` once it closed one. Telemetry is best effort: a failure here is
logged and never fails the job's step.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gpuopt.jobs.states import EndReason

if TYPE_CHECKING:
    from gpuopt.jobs.estimate.calibration import Calibration, CalibrationRecord
    from gpuopt.jobs.executors.base import AttemptStatus
    from gpuopt.jobs.spec import JobSpec
    from gpuopt.jobs.telemetry.summary import TelemetrySummary
    from gpuopt.orchestrator.store.engine import Store
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow

log = logging.getLogger(__name__)
# An attempt that did not finish becomes a calibration record only after this much
# measured running: a short one says little about steady-state throughput.
MIN_CALIBRATION_SECONDS = 600.0
LOW_UTILIZATION_PCT = 50.0


def _save(store: Store, a: AttemptRow, t: TelemetrySummary, now: datetime) -> None:
    from gpuopt.orchestrator.store.telemetry_repo import save_telemetry

    with store.transaction() as session:
        save_telemetry(session, a.id or 0, a.job_id, t, now)


def record_running(store: Store, a: AttemptRow, status: AttemptStatus, now: datetime) -> None:
    """Store the newest summary of a running attempt (when it has one)."""
    if status.telemetry is None or a.id is None:
        return
    try:
        _save(store, a, status.telemetry, now)
    except Exception as err:  # telemetry never breaks a step
        log.warning("job %s attempt %d: telemetry not stored: %s: %s", a.job_id, a.number,
                    type(err).__name__, err)


def record_ended(store: Store, a: AttemptRow, status: AttemptStatus, spec: JobSpec,
                 reason: EndReason, now: datetime) -> None:
    """The final summary, and the calibration record when the attempt finished (or ran
    long enough)."""
    t = status.telemetry
    if t is None or a.id is None:
        return
    try:
        _save(store, a, t, now)
        if reason is EndReason.SUCCEEDED or t.seconds >= MIN_CALIBRATION_SECONDS:
            record = calibration_record(spec, a, t)
            if record is not None:
                from gpuopt.orchestrator.store.telemetry_repo import add_calibration

                with store.transaction() as session:
                    add_calibration(session, record, now, attempt_id=a.id)
    except Exception as err:  # telemetry never breaks a step
        log.warning("job %s attempt %d: telemetry not stored: %s: %s", a.job_id, a.number,
                    type(err).__name__, err)


def calibration_record(spec: JobSpec, a: AttemptRow, t: TelemetrySummary,
                       ) -> CalibrationRecord | None:
    """The attempt's configuration with what it measured; None if it ran on no known GPU
    or measured nothing usable. The throughput is left out when the GPUs measured are not
    the planned model (their memory says so: a local run on another GPU)."""
    from gpuopt.jobs.estimate.calibration import is_planned_gpu, record_for
    from gpuopt.providers.hardware import GPUS

    if a.gpu not in GPUS or a.gpu_count < 1 or a.num_nodes > 1:
        return None  # (calibration records are of one node)
    tps = t.tokens_per_second
    if tps is not None and not is_planned_gpu(GPUS[a.gpu].memory_gib, t.memory_total_mib):
        log.info("job %s attempt %d: measured on GPUs of %d MiB, not %s: its tokens/s is "
                 "not recorded", a.job_id, a.number, max(t.memory_total_mib), a.gpu)
        tps = None
    peak = max(t.peak_memory_mib) if t.peak_memory_mib else None
    if not peak and tps is None:
        return None
    return record_for(spec.resolved_model(), spec.workload, a.gpu, a.gpu_count,
                      peak_memory_mib=peak or None, tokens_per_second=tps)


def load_calibration(store: Store | None, spec: JobSpec) -> Calibration | None:
    """The stored records of this job's model (None: no store, or none)."""
    if store is None:
        return None
    from gpuopt.jobs.estimate.calibration import Calibration, fingerprint
    from gpuopt.orchestrator.store.telemetry_repo import calibration_records

    try:
        with store.session() as session:
            rows = calibration_records(session, fingerprint(spec.resolved_model()))
    except Exception as err:  # an old schema, a database gone: estimate from the model
        log.warning("calibration records not read: %s: %s", type(err).__name__, err)
        return None
    return Calibration(tuple(r for r, _, _ in rows)) if rows else None


# -- status: measured against estimated ----------------------------------------------
def low_utilization_warning(t: TelemetrySummary) -> str | None:
    pct = t.mean_utilization_pct
    if pct is None or pct >= LOW_UTILIZATION_PCT:
        return None
    return f"GPU busy {pct:.0f}% of the time: the data pipeline may be the bottleneck"


def estimated_for(spec: JobSpec, a: AttemptRow) -> dict[str, Any]:
    """The model's figures for the attempt's configuration (what the measurement is held
    against): peak memory per GPU (MiB) and tokens/s."""
    from gpuopt.jobs.estimate.memory import estimate_memory
    from gpuopt.jobs.estimate.runtime import estimate_runtime
    from gpuopt.providers.hardware import GPUS

    out: dict[str, Any] = {"peak_memory_mib": None, "tokens_per_second": None}
    count = max(1, a.gpu_count)
    try:
        arch, workload = spec.resolved_model(), spec.workload
        out["peak_memory_mib"] = round(estimate_memory(arch, workload, count).total_bytes
                                       / 2**20)
        if a.gpu in GPUS:
            rt = estimate_runtime(arch, workload, GPUS[a.gpu], count)
            out["tokens_per_second"] = round(rt.tokens_per_second, 1)
    except (ValueError, KeyError):  # no amount of work stated, or an unknown GPU
        pass
    return out


def telemetry_views(store: Store, spec: JobSpec | None, attempts: list[AttemptRow],
                    ) -> dict[int, dict[str, Any]]:
    """attempt number -> what ``status`` adds to its view: ``telemetry`` (the summary,
    keys as documented), ``estimated`` and ``utilization_warning``."""
    from gpuopt.orchestrator.store.telemetry_repo import telemetry_of

    with store.session() as session:
        found = telemetry_of(session, [a.id for a in attempts if a.id is not None])
    views: dict[int, dict[str, Any]] = {}
    for a in attempts:
        t = found.get(a.id or -1)
        if t is None:
            continue
        views[a.number] = {
            "telemetry": t.to_status_json(),
            "median_utilization_pct": t.median_utilization_pct,
            "estimated": estimated_for(spec, a) if spec is not None else None,
            "utilization_warning": low_utilization_warning(t),
        }
    return views
