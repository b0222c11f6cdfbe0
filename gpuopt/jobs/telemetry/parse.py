"""nvidia-smi's CSV -> readings, and readings -> one attempt's telemetry summary. Pure.

The sampler (sampler.py) runs ``nvidia-smi --query-gpu=<QUERY_FIELDS>
--format=csv,noheader,nounits``, which prints one line per GPU, the fields in the order
asked, separated by ", " and without units, e.g. ``0, 1234, 81559, 87, 312.45``; a field
the GPU cannot report reads ``[N/A]`` (or ``[Not Supported]``), power.draw typically.

This module is the standard library only and imports nothing of gpuopt: its source is
shipped to the node with the sampler's (script.py), where gpuopt is not installed. It
also runs on the node's Python, so it keeps to what 3.8 understands.
"""

from __future__ import annotations

from typing import NamedTuple

QUERY_FIELDS = ("index", "memory.used", "memory.total", "utilization.gpu", "power.draw")
QUERY_ARGS = ("--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv,noheader,nounits")
MAX_GPUS = 64  # per node; more lines than this is not nvidia-smi's --query-gpu output
MAX_SERIES = 48  # points of the downsampled series kept per attempt
SUMMARY_VERSION = 1


class GpuReading(NamedTuple):
    gpu: int  # nvidia-smi's index
    memory_used_mib: float | None
    memory_total_mib: float | None
    utilization_pct: float | None
    power_w: float | None


def _number(text: str, low: float, high: float) -> float | None:
    """A field's value; None for [N/A], [Not Supported], junk or out of range."""
    try:
        value = float(text)
    except ValueError:
        return None
    if value != value or not low <= value <= high:  # NaN or absurd
        return None
    return value


def parse_query_output(text: str) -> list[GpuReading]:
    """One reading per well-formed line (index first); other lines are skipped."""
    readings: list[GpuReading] = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(QUERY_FIELDS) or not fields[0].isdigit():
            continue
        readings.append(GpuReading(
            gpu=int(fields[0]),
            memory_used_mib=_number(fields[1], 0, 1e8),
            memory_total_mib=_number(fields[2], 0, 1e8),
            utilization_pct=_number(fields[3], 0, 100),
            power_w=_number(fields[4], 0, 1e5),
        ))
        if len(readings) >= MAX_GPUS:
            break
    return readings


def tokens_from_progress(text: str) -> int | None:
    """The ``tokens`` of a progress file (tokens processed so far), if it has one."""
    import json

    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    tokens = data.get("tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or not 0 <= tokens < 2**63:
        return None
    return tokens


class Accumulator:
    """Folds samples into a bounded summary: peaks, a utilisation histogram (an exact
    median of integer percentages), energy, tokens/s, and a series of at most
    MAX_SERIES points whose resolution halves each time it fills."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.samples = 0
        self.first_t: float | None = None
        self.last_t: float | None = None
        self.peak: dict[int, float] = {}
        self.total: dict[int, float] = {}
        self.util_hist = [0] * 101
        self.util_sum = 0.0
        self.util_n = 0
        self.energy_ws = 0.0
        self.power_seen = False
        self.last_power: float | None = None
        self.first_tokens: tuple | None = None  # (t, tokens)
        self.last_tokens: tuple | None = None
        self.series: list[list[float]] = []  # [t_rel_s, util %, peak MiB, power W, n]
        self.bucket_s = interval_s

    def add(self, t: float, readings: list[GpuReading], tokens: int | None = None) -> None:
        if not readings:
            return
        if self.first_t is None:
            self.first_t = t
        # energy: the power of the previous sample held until this one (gaps capped)
        if self.last_t is not None and self.last_power is not None:
            gap = max(0.0, min(t - self.last_t, 2 * self.interval_s))
            self.energy_ws += self.last_power * gap
        self.last_t = t
        self.samples += 1
        utils: list[float] = []
        powers: list[float] = []
        mems: list[float] = []
        for r in readings:
            if r.memory_used_mib is not None:
                self.peak[r.gpu] = max(self.peak.get(r.gpu, 0.0), r.memory_used_mib)
                mems.append(r.memory_used_mib)
            if r.memory_total_mib is not None:
                self.total[r.gpu] = r.memory_total_mib
            if r.utilization_pct is not None:
                utils.append(r.utilization_pct)
                self.util_hist[round(r.utilization_pct)] += 1
                self.util_sum += r.utilization_pct
                self.util_n += 1
            if r.power_w is not None:
                powers.append(r.power_w)
        self.last_power = sum(powers) if powers else None
        self.power_seen = self.power_seen or bool(powers)
        if tokens is not None:
            if self.first_tokens is None or tokens < self.first_tokens[1]:
                self.first_tokens = (t, tokens)  # (a counter that went back: start again)
            self.last_tokens = (t, tokens)
        self._add_point(t - self.first_t, sum(utils) / len(utils) if utils else 0.0,
                        max(mems) if mems else 0.0, sum(powers))

    def _add_point(self, rel: float, util: float, mem: float, power: float) -> None:
        if self.series and rel - self.series[-1][0] < self.bucket_s:
            p = self.series[-1]  # same bucket: running mean, peak memory
            n = p[4]
            p[1] = (p[1] * n + util) / (n + 1)
            p[2] = max(p[2], mem)
            p[3] = (p[3] * n + power) / (n + 1)
            p[4] = n + 1
            return
        self.series.append([rel, util, mem, power, 1])
        if len(self.series) > MAX_SERIES:
            self.bucket_s *= 2
            merged: list[list[float]] = []
            for a, b in zip(self.series[0::2], self.series[1::2], strict=False):
                n = a[4] + b[4]
                merged.append([a[0], (a[1] * a[4] + b[1] * b[4]) / n, max(a[2], b[2]),
                               (a[3] * a[4] + b[3] * b[4]) / n, n])
            if len(self.series) % 2:
                merged.append(self.series[-1])
            self.series = merged

    def median_utilization(self) -> float | None:
        if not self.util_n:
            return None
        seen = 0
        for pct, count in enumerate(self.util_hist):
            seen += count
            if 2 * seen >= self.util_n:
                return float(pct)
        return 100.0

    def tokens_per_second(self) -> float | None:
        if self.first_tokens is None or self.last_tokens is None:
            return None
        dt = self.last_tokens[0] - self.first_tokens[0]
        dn = self.last_tokens[1] - self.first_tokens[1]
        return dn / dt if dt > 0 and dn > 0 else None

    def to_json(self) -> dict[str, object]:
        gpus = sorted(set(self.peak) | set(self.total))
        tps = self.tokens_per_second()
        return {
            "v": SUMMARY_VERSION,
            "samples": self.samples,
            "seconds": round((self.last_t or 0.0) - (self.first_t or 0.0), 1),
            "interval_s": self.interval_s,
            "peak_memory_mib": [round(self.peak.get(i, 0.0)) for i in gpus],
            "memory_total_mib": [round(self.total.get(i, 0.0)) for i in gpus],
            "mean_utilization_pct": (round(self.util_sum / self.util_n, 1)
                                     if self.util_n else None),
            "median_utilization_pct": self.median_utilization(),
            "energy_wh": round(self.energy_ws / 3600, 3) if self.power_seen else None,
            "tokens": self.last_tokens[1] if self.last_tokens else None,
            "tokens_processed": (self.last_tokens[1] - self.first_tokens[1]
                                 if self.last_tokens and self.first_tokens else None),
            "tokens_per_second": round(tps, 2) if tps is not None else None,
            "series": [[round(p[0]), round(p[1], 1), round(p[2]), round(p[3], 1)]
                       for p in self.series],
        }
