"""Rewrite the figures in the docs from their sources: `make docs` for this repository.

    .venv/bin/python docs/update_figures.py            # rewrite every marked block
    .venv/bin/python docs/update_figures.py --check    # exit 1 when a block is stale
    .venv/bin/python docs/update_figures.py --run plan_bench   # run a benchmark, store
                                                       # its output, rewrite its block

A block is marked in any docs/*.md page or README.md as

    <!-- figures:NAME -->
    ...generated text...
    <!-- /figures:NAME -->

NAME is one of the generators below: the estimators against their public calibration
points (computed now, in a second), the embedded price snapshot's counts, or
``bench-<benchmark>``: the stored output of ``benchmarks/<benchmark>.py``
(benchmarks/results/<benchmark>.txt, written by ``--run``, with the command and when it
ran). The check only renders and compares: it never runs a benchmark, so CI stays cheap
(tests/test_docs_figures.py). Figures typed by hand drift; these cannot.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
BLOCK = re.compile(r"(<!-- figures:(?P<name>[a-z0-9_-]+) -->\n)(?P<body>.*?)"
                   r"(<!-- /figures:(?P=name) -->)", re.S)
# What --run executes for each benchmark: short settings (a loaded 2-core machine).
BENCH_ARGS = {
    "plan_bench": [],
    "daemon_footprint": ["--seconds", "20", "--settle", "5"],
    "simulate_sweep": ["--starts", "60"],
    "signal_weights_held_out": ["--starts", "30"],
    "simulate_synthetic": [],
    "online_reference": [],
}


def _memory_calibration() -> str:
    from tests.jobs.estimate import test_memory_calibration as cal

    errors = []
    for row in cal.ROWS:
        total, _ = cal._estimate(row)
        if not row.known_gap:
            errors.append(100 * (total / row.measured_bytes - 1))
    gaps = [r for r in cal.ROWS if r.known_gap]
    head = (f"{len(errors)} of {len(cal.ROWS)} public points within "
            f"{min(errors):+.1f}%..{max(errors):+.1f}% of the measured peak"
            + "".join(f"; {r.label}: "
                      f"{100 * (cal._estimate(r)[0] / r.measured_bytes - 1):+.1f}% (known gap)"
                      for r in gaps))
    return f"{head}.\n\n```text\n{cal._table()}\n```\n"


def _runtime_calibration() -> str:
    from tests.jobs.estimate import test_runtime as cal

    lines = [f"{'row':34} {'measured':>9} {'estimate':>9} {'est/meas':>8}"]
    train, infer = [], []
    for row in cal.ROWS:
        r = cal._ratio(row)
        (train if "finetune" in row.workload else infer).append(r)
        lines.append(f"{row.label:34} {row.measured_tps:9.1f} {r * row.measured_tps:9.1f} "
                     f"{r:8.2f}")
    head = (f"Estimated / measured tokens per second: training {min(train):.2f}-"
            f"{max(train):.2f}x ({len(train)} points), inference {min(infer):.2f}-"
            f"{max(infer):.2f}x ({len(infer)} points).")
    return head + "\n\n```text\n" + "\n".join(lines) + "\n```\n"


def _held_out_accuracy() -> str:
    spec = importlib.util.spec_from_file_location(
        "estimate_accuracy", ROOT / "benchmarks" / "estimate_accuracy.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return str(mod.report()) + "\n"


def _held_out_summary() -> str:
    """The README's short form of the held-out table: the per-framework table and the
    closing line of `benchmarks/estimate_accuracy.py`'s report (the whole: docs/estimates.md)."""
    lines = _held_out_accuracy().splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next(i for i in range(first, len(lines)) if not lines[i].startswith("|"))
    last = next(line for line in reversed(lines) if line.startswith("Held-out"))
    return "\n".join([lines[0], "", *lines[first:end], "", last]) + "\n"


def _snapshot() -> str:
    from gpuopt.providers.snapshot import load_snapshot

    snap = load_snapshot()
    clouds = Counter(o.cloud for o in snap.offers)
    markets = Counter(o.market.value for o in snap.offers)
    per_cloud = ", ".join(f"{c} {n}" for c, n in clouds.most_common())
    per_market = ", ".join(f"{m} {n}" for m, n in sorted(markets.items()))
    return (f"{len(snap.offers)} prices, each dated by its source: {snap.dated()} "
            f"({per_cloud}; {per_market}).\n")


def _bench(name: str) -> Callable[[], str]:
    def render() -> str:
        path = RESULTS / f"{name}.txt"
        if not path.exists():
            return (f"Not run yet: `.venv/bin/python docs/update_figures.py --run {name}`.\n")
        header, _, body = path.read_text(encoding="utf-8").partition("\n\n")
        return f"{header}\n\n```text\n{body.rstrip()}\n```\n"
    return render


def _spot_sweep_summary() -> str:
    """The README's short form of the stored sweep: `auto` and uniform-progress-zones,
    one row per deadline and zones, every information column."""
    path = RESULTS / "simulate_sweep.txt"
    if not path.exists():
        return "Not run yet: `.venv/bin/python docs/update_figures.py --run simulate_sweep`.\n"
    header, _, body = path.read_text(encoding="utf-8").partition("\n\n")
    rows: list[str] = []
    head = ""
    deadline = ""
    for line in body.splitlines():
        if m := re.match(r"deadline (\d+) h:", line):
            deadline = m.group(1)
        elif line.startswith("| policy |"):
            head = "| deadline " + line
        elif line.startswith(("| auto |", "| uniform-progress-zones |")):
            rows.append(f"| {deadline} h " + line)
    if not head:
        return "The stored sweep has no table.\n"
    cols = head.count("|") - 1
    return ("\n".join([head, "|" + "---|" * cols, *rows]) + "\n\n"
            f"x the omniscient optimum (deadline misses); {header.strip().rstrip(':')}; "
            f"the whole output: docs/spot-policy.md.{_held_out_signals()}\n")


def _held_out_signals() -> str:
    """The signals' weights fitted on these traces: the stored held-out fit's figures
    (benchmarks/signal_weights_held_out.py), multi-zone, as a sentence ("" if not run)."""
    path = RESULTS / "signal_weights_held_out.txt"
    if not path.exists():
        return ""
    text = path.read_text(encoding="utf-8")
    cmd = text.split("`")[1] if text.count("`") >= 2 else "benchmarks/signal_weights_held_out.py"
    cells = []
    for line in text.splitlines():
        row = [c.strip() for c in line.strip("|").split("|")]
        if len(row) == 7 and row[1] == "multi-zone":
            cells.append(f"{row[0]}: {row[4]} in sample, {row[6]} held out "
                         f"({row[3]} without signals)")
    if not cells:
        return ""
    return (" The signals' weights are fitted on these traces; fitted leaving out each "
            f"trace family in turn and scored on it (`{cmd}`, its own windows), "
            f"multi-zone `launch-probe+signals`: {'; '.join(cells)}.")


GENERATORS: dict[str, Callable[[], str]] = {
    "spot-sweep-summary": _spot_sweep_summary,
    "memory-calibration": _memory_calibration,
    "runtime-calibration": _runtime_calibration,
    "held-out-accuracy": _held_out_accuracy,
    "held-out-summary": _held_out_summary,
    "snapshot": _snapshot,
    **{f"bench-{name}": _bench(name) for name in BENCH_ARGS},
}


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def render(text: str, where: str) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in GENERATORS:
            raise SystemExit(f"{where}: unknown figures block {name!r} "
                             f"(known: {', '.join(GENERATORS)})")
        return m.group(1) + GENERATORS[name]() + m.group(4)
    return BLOCK.sub(one, text)


def stale_blocks() -> list[str]:
    """The pages whose marked blocks differ from what their sources say now."""
    out = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        if render(text, str(page)) != text:
            out.append(str(page.relative_to(ROOT)))
    return out


def run_benchmark(name: str) -> None:
    """Run benchmarks/NAME.py with the settings above; store its output and the command."""
    cmd = [sys.executable, f"benchmarks/{name}.py", *BENCH_ARGS[name]]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    shown = " ".join([".venv/bin/python", *cmd[1:]])
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.txt").write_text(
        f"`{shown}`, run {datetime.now(UTC):%Y-%m-%d} on a shared, loaded 2-core machine:"
        f"\n\n{done.stdout.strip()}\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only report stale blocks")
    ap.add_argument("--run", choices=sorted(BENCH_ARGS), action="append", default=[],
                    help="run this benchmark first and store its output (repeatable)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.check:
        stale = stale_blocks()
        for page in stale:
            print(f"{page}: figures are stale: run .venv/bin/python docs/update_figures.py",
                  file=sys.stderr)
        return 1 if stale else 0
    for name in args.run:
        run_benchmark(name)
    for page in pages():
        text = page.read_text(encoding="utf-8")
        new = render(text, str(page))
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"updated {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
