"""The embedded snapshot's coverage table (issue 28): per cloud GPUs, regions, zones,
spot rows and rows, plus the file's size and its parse time. A cloud priced once for all
its data centres (RunPod, region "global") counts the regions and zones (data centres)
its rows stand for (the snapshot's ``places``).

Run from the repository root: ``python benchmarks/snapshot_coverage.py``. The load
time is the best of five parses (a figure for this machine, not a test threshold).
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from importlib.resources import files
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuopt.providers.offer import Market
from gpuopt.providers.snapshot import SNAPSHOT_FILE, load_snapshot


def main() -> None:
    text = files("gpuopt.providers").joinpath(SNAPSHOT_FILE).read_text(encoding="utf-8")
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        snap = load_snapshot(text)
        best = min(best, time.perf_counter() - t0)
    gpus: dict[str, set[str]] = defaultdict(set)
    regions: dict[str, set[str]] = defaultdict(set)
    zones: dict[str, set[str]] = defaultdict(set)
    spot: dict[str, int] = defaultdict(int)
    rows: dict[str, int] = defaultdict(int)
    for o in snap.offers:
        gpus[o.cloud].add(o.gpu)
        centres = snap.places.get((o.cloud, o.instance_type))
        if centres:
            regions[o.cloud].update(r for r, _z in centres)
            zones[o.cloud].update(z for _r, z in centres if z)
        else:
            regions[o.cloud].add(o.region)
            if o.zone:
                zones[o.cloud].add(o.zone)
        spot[o.cloud] += o.market is Market.SPOT
        rows[o.cloud] += 1
    print("| cloud | GPUs | regions | zones | spot rows | rows |")
    print("|---|---:|---:|---:|---:|---:|")
    for c in sorted(rows):
        print(f"| {c} | {len(gpus[c])} | {len(regions[c])} | {len(zones[c])} "
              f"| {spot[c]} | {rows[c]} |")
    print(f"| **total** | {len({g for s in gpus.values() for g in s})} "
          f"| {sum(len(s) for s in regions.values())} | {sum(len(s) for s in zones.values())} "
          f"| {sum(spot.values())} | {len(snap.offers)} |")
    print(f"\n{len(text.encode()):,} bytes; parse {best * 1000:.1f} ms (best of 5); "
          f"sources dated {snap.dated()}")


if __name__ == "__main__":
    main()
