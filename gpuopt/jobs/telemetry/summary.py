"""One attempt's telemetry summary as the control side reads it back (a local file, or
the ``[gpuopt] telemetry {...}`` line the SkyPilot run wrapper echoes into the log).

Whatever the node wrote is checked here: a field of the wrong type or out of range is
dropped, a text that is not a summary gives None; nothing the node writes can fail a
reconcile step.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass

from gpuopt.jobs.telemetry.parse import MAX_GPUS, MAX_SERIES

TELEMETRY_MARKER = "[gpuopt] telemetry"
MAX_SUMMARY_TEXT = 16_384
LOW_UTILIZATION_PCT = 50.0


@dataclass(frozen=True, slots=True)
class TelemetrySummary:
    samples: int
    seconds: float
    peak_memory_mib: tuple[int, ...]  # per GPU, by nvidia-smi index
    memory_total_mib: tuple[int, ...] = ()
    mean_utilization_pct: float | None = None
    median_utilization_pct: float | None = None
    energy_wh: float | None = None
    tokens: int | None = None  # the progress file's count at the last sample
    tokens_per_second: float | None = None
    tokens_processed: int | None = None  # while sampled, in this attempt
    # (seconds since the first sample, mean utilisation %, peak MiB of any GPU, watts)
    series: tuple[tuple[float, float, float, float], ...] = ()

    @property
    def gpus(self) -> int:
        return len(self.peak_memory_mib)

    @property
    def low_utilization(self) -> bool:
        return (self.mean_utilization_pct is not None
                and self.mean_utilization_pct < LOW_UTILIZATION_PCT)

    def to_status_json(self) -> dict[str, object]:
        """What ``status --json`` shows of an attempt's telemetry."""
        return {
            "peak_memory_mib": list(self.peak_memory_mib),
            "mean_utilization_pct": self.mean_utilization_pct,
            "energy_wh": self.energy_wh,
            "samples": self.samples,
            "tokens_per_second": self.tokens_per_second,
        }

    def to_json(self) -> dict[str, object]:
        """Everything (stored, and read back by :func:`summary_from_json`)."""
        return {
            "samples": self.samples, "seconds": self.seconds,
            "peak_memory_mib": list(self.peak_memory_mib),
            "memory_total_mib": list(self.memory_total_mib),
            "mean_utilization_pct": self.mean_utilization_pct,
            "median_utilization_pct": self.median_utilization_pct,
            "energy_wh": self.energy_wh, "tokens": self.tokens,
            "tokens_per_second": self.tokens_per_second,
            "tokens_processed": self.tokens_processed,
            "series": [list(p) for p in self.series],
        }


def _num(value: object, low: float, high: float) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    f = float(value)
    return f if math.isfinite(f) and low <= f <= high else None


def _mib_list(value: object) -> tuple[int, ...] | None:
    if not isinstance(value, list) or len(value) > MAX_GPUS:
        return None
    out = [_num(v, 0, 1e8) for v in value]
    return None if any(v is None for v in out) else tuple(round(v or 0) for v in out)


def summary_from_json(data: object) -> TelemetrySummary | None:
    if not isinstance(data, dict):
        return None
    samples = data.get("samples")
    peaks = _mib_list(data.get("peak_memory_mib"))
    if not isinstance(samples, int) or isinstance(samples, bool) or samples < 1 or not peaks:
        return None
    series: list[tuple[float, float, float, float]] = []
    raw = data.get("series")
    if isinstance(raw, list):
        for p in raw[:MAX_SERIES]:
            if isinstance(p, list) and len(p) == 4:
                vals = [_num(v, 0, 1e12) for v in p]
                if all(v is not None for v in vals):
                    series.append((vals[0] or 0.0, vals[1] or 0.0, vals[2] or 0.0,
                                   vals[3] or 0.0))
    tokens, processed = data.get("tokens"), data.get("tokens_processed")
    return TelemetrySummary(
        samples=samples,
        seconds=_num(data.get("seconds"), 0, 1e9) or 0.0,
        peak_memory_mib=peaks,
        memory_total_mib=_mib_list(data.get("memory_total_mib")) or (),
        mean_utilization_pct=_num(data.get("mean_utilization_pct"), 0, 100),
        median_utilization_pct=_num(data.get("median_utilization_pct"), 0, 100),
        energy_wh=_num(data.get("energy_wh"), 0, 1e12),
        tokens=tokens if isinstance(tokens, int) and not isinstance(tokens, bool)
        and 0 <= tokens < 2**63 else None,
        tokens_per_second=_num(data.get("tokens_per_second"), 0, 1e12) or None,
        tokens_processed=processed if isinstance(processed, int)
        and not isinstance(processed, bool) and 0 <= processed < 2**63 else None,
        series=tuple(series),
    )


def parse_summary(text: str) -> TelemetrySummary | None:
    if len(text) > MAX_SUMMARY_TEXT:
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return summary_from_json(data)


def telemetry_from_lines(lines: Iterable[str]) -> TelemetrySummary | None:
    """The newest well-formed summary the run wrapper echoed into these log lines."""
    found: TelemetrySummary | None = None
    for line in lines:
        if line.startswith(TELEMETRY_MARKER):
            found = parse_summary(line[len(TELEMETRY_MARKER):].strip()) or found
    return found
