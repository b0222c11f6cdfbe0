"""Spot availability traces on disk (format of skypilot-org/spot-traces).

    {"metadata": {"gap_seconds": 600}, "data": [0, 1, 1, 0, ...]}

``0`` = spot could be had during that tick, ``1`` = it could not.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuopt.core.errors import UserError
from gpuopt.policies.spot.sweep import TraceSet

EXIT_BAD_INPUT = 2


@dataclass(frozen=True, slots=True)
class Trace:
    path: Path
    gap_s: float
    data: tuple[int, ...]


def parse_trace(text: str, source: str) -> tuple[float, tuple[int, ...]]:
    """(gap seconds, ticks) from a trace's JSON text; UserError saying what is wrong."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"{source}: not valid JSON ({exc.msg} at line {exc.lineno}); expected "
            '{"metadata": {"gap_seconds": N}, "data": [0, 1, ...]}',
            exit_code=EXIT_BAD_INPUT,
        ) from None
    if not isinstance(doc, dict):
        raise UserError(f"{source}: the top level must be an object with metadata and data",
                        exit_code=EXIT_BAD_INPUT)
    meta = doc.get("metadata")
    gap = meta.get("gap_seconds") if isinstance(meta, dict) else None
    if isinstance(gap, bool) or not isinstance(gap, int | float) or gap <= 0:
        raise UserError(f"{source}: metadata.gap_seconds must be a number > 0",
                        exit_code=EXIT_BAD_INPUT)
    data = doc.get("data")
    if not isinstance(data, list) or not data:
        raise UserError(f"{source}: data must be a non-empty list of 0/1 ticks",
                        exit_code=EXIT_BAD_INPUT)
    for i, v in enumerate(data):
        if isinstance(v, bool) or v not in (0, 1):
            raise UserError(f"{source}: data[{i}] is {v!r}; every tick must be 0 or 1",
                            exit_code=EXIT_BAD_INPUT)
    return float(gap), tuple(int(v) for v in data)


def load_trace(path: Path) -> Trace:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"trace file {path} does not exist; pass an existing --trace FILE",
                        exit_code=EXIT_BAD_INPUT) from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read trace {path}: {exc}", exit_code=EXIT_BAD_INPUT) from None
    gap, data = parse_trace(text, str(path))
    return Trace(path, gap, data)


def expand(paths: Sequence[Path]) -> list[Path]:
    """Files as given; a directory stands for the *.json files in it (sorted)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            files = sorted(p.glob("*.json"))
            if not files:
                raise UserError(f"{p} holds no *.json trace files", exit_code=EXIT_BAD_INPUT)
            out.extend(files)
        else:
            out.append(p)
    return out


def load_traces(paths: Sequence[Path]) -> list[Trace]:
    return [load_trace(p) for p in expand(paths)]


def one_gap(traces: Sequence[Trace]) -> float:
    gaps = {t.gap_s for t in traces}
    if len(gaps) != 1:
        listing = ", ".join(f"{t.path.name}: {t.gap_s:g} s" for t in traces)
        raise UserError(f"traces replayed together need the same gap_seconds ({listing})",
                        exit_code=EXIT_BAD_INPUT)
    return gaps.pop()


def instance_kind(path: Path) -> str:
    """The instance type a trace file records, from the spot-traces naming
    ``<zone>_<gpu>_<count>.json`` (e.g. ``us-west-2a_v100_8`` -> ``v100_8``); files not
    named that way count as one kind per folder."""
    _, sep, kind = path.stem.partition("_")
    return kind if sep else ""


def sweep_sets(traces: Sequence[Trace], zones: str) -> list[TraceSet]:
    """Trace sets for a sweep: each file alone ("single"), the files of each folder that
    record the same instance type together as candidate zones ("multi"), or both.

    Only the same instance type is combined: a job can move between zones, not between
    a K80 and a V100 (different speed and price), so mixing types as "zones" of one job
    would credit the policy with capacity the job could not use."""
    sets: list[TraceSet] = []
    if zones in ("single", "both"):
        sets.extend(TraceSet(t.path.name, (t.data,), t.gap_s) for t in traces)
    if zones in ("multi", "both"):
        groups: dict[tuple[Path, str], list[Trace]] = {}
        for t in traces:
            groups.setdefault((t.path.parent, instance_kind(t.path)), []).append(t)
        for (folder, kind), group in groups.items():
            if len(group) < 2:
                continue
            name = f"{folder.name}/*_{kind}.json" if kind else f"{folder.name}/*"
            sets.append(TraceSet(name, tuple(t.data for t in group), one_gap(group)))
    return sets
