"""The measurement corpus: published peak memory and throughput with provenance, one
TOML file per source in jobs/estimate/measurements/, parsed into rows. Pure: the files
are read by jobs/corpus_files.py and their text handed in.

Used by the fit (correction.py's coefficients, fitted by benchmarks/estimate_accuracy.py)
and by the tests that score held-out rows.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuopt.jobs.architectures import ARCHITECTURES, Architecture
from gpuopt.jobs.spec import WorkloadSpec

GIB = 1024**3
MEMORY_KINDS = ("allocated", "reserved", "nvidia-smi")


@dataclass(frozen=True, slots=True)
class Measurement:
    source: str
    framework: str  # the framework or engine the source measured (for reporting)
    provenance: str
    row: str
    model: str
    gpu: str
    count: int
    tp: int
    workload: WorkloadSpec | None
    tokens_per_second: float | None
    memory_bytes: float | None
    memory_kind: str
    excludes_kv: bool
    unexpressed: str | None  # why the model cannot express it (None: it can)
    # why the row's tokens/s is not scored although its memory is (the measured figure
    # stays in the file; tokens_per_second is then None)
    throughput_unexpressed: str | None = None

    @property
    def label(self) -> str:
        return f"{self.source}: {self.row}"

    def architecture(self) -> Architecture:
        return ARCHITECTURES[self.model]


def _provenance(src: Mapping[str, Any]) -> str:
    if "paper" in src:
        return f"{src['paper']}, {src.get('table', '')}".strip(", ")
    where = src.get("repo", "")
    if "issue" in src:
        return f"{where} issue {src['issue']}"
    commit = src.get("commit")
    return f"{where}/{src.get('path', '')}" + (f"@{commit[:12]}" if commit else "")


def parse_source(text: str, name: str) -> tuple[Measurement, ...]:
    """One source file's rows (``name`` for errors)."""
    doc = tomllib.loads(text)
    src = doc["source"]
    defaults = dict(doc.get("defaults", {}))
    out: list[Measurement] = []
    for raw in doc.get("row", []):
        fields = {**defaults, **raw.get("workload", {})}
        why = raw.get("unexpressed")
        workload = None
        if why is None:
            try:
                workload = WorkloadSpec(**fields)
            except ValueError as exc:
                raise ValueError(f"{name}: row {raw['id']!r}: {exc}") from None
        if raw["model"] not in ARCHITECTURES:
            raise ValueError(f"{name}: row {raw['id']!r}: unknown model {raw['model']!r}")
        mem: float | None = None
        if "memory_gib" in raw:
            mem = float(raw["memory_gib"]) * GIB
        elif "memory_gb" in raw:
            mem = float(raw["memory_gb"]) * 1e9
        kind = raw.get("memory_kind", "nvidia-smi")
        if mem is not None and kind not in MEMORY_KINDS:
            raise ValueError(f"{name}: row {raw['id']!r}: memory_kind must be one of "
                             f"{MEMORY_KINDS}")
        tps = raw.get("tokens_per_second")
        tps_why = raw.get("throughput_unexpressed")
        if tps_why is not None:
            tps = None
        out.append(Measurement(
            source=src["id"], framework=src["framework"], provenance=_provenance(src),
            row=raw["id"], model=raw["model"], gpu=raw["gpu"], count=int(raw["count"]),
            tp=int(raw.get("tp", 1)), workload=workload,
            tokens_per_second=float(tps) if tps is not None else None,
            memory_bytes=mem, memory_kind=kind,
            excludes_kv=bool(raw.get("memory_excludes_kv", False)), unexpressed=why,
            throughput_unexpressed=tps_why))
    return tuple(out)


def sources(rows: tuple[Measurement, ...]) -> tuple[str, ...]:
    return tuple(sorted({r.source for r in rows}))
