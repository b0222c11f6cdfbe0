"""Idle footprint of `gpuopt daemon run`: RSS and CPU over a window, SQLite, no jobs.

    /work/venv/bin/python benchmarks/daemon_footprint.py [--seconds 60] [--clouds]

Starts a real daemon process in a throwaway GPUOPT_HOME with the default intervals
(reconcile every 20 s, heartbeat every 20 s), lets it settle, then samples its RSS
(psutil, the process and its children) and its CPU time over the window. ``--clouds``
also polls every cloud once at start (no credentials here, so each poll fails fast but
imports its SDK): the RSS a daemon reaches once the SDKs are loaded.
Goal: under 150 MiB RSS and under 1% of one core.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

MIB = 1024 * 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    import psutil

    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument("--clouds", action="store_true", help="poll every cloud at start")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUOPT_")}
        env.update({
            "GPUOPT_HOME": home,
            "GPUOPT_DAEMON_METRICS_ADDRESS": f"127.0.0.1:{port}",
            "GPUOPT_CLOUDS_ENABLED": '["aws", "gcp", "azure"]' if args.clouds else "[]",
            "AWS_EC2_METADATA_DISABLED": "true",
        })
        log = Path(home) / "daemon.log"
        with log.open("wb") as fh:
            proc = subprocess.Popen(
                [sys.executable, "-m", "gpuopt.orchestrator.cli.app", "daemon", "run"],
                env=env, stdout=fh, stderr=subprocess.STDOUT,
            )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
                    break
                except OSError:
                    time.sleep(0.2)
            time.sleep(args.settle)
            p = psutil.Process(proc.pid)

            def tree_rss() -> int:
                return p.memory_info().rss + sum(
                    c.memory_info().rss for c in p.children(recursive=True))

            cpu0 = p.cpu_times()
            t0 = time.monotonic()
            peak = 0
            samples = []
            while time.monotonic() - t0 < args.seconds:
                rss = tree_rss()
                peak = max(peak, rss)
                samples.append(rss)
                time.sleep(1.0)
            cpu1 = p.cpu_times()
            wall = time.monotonic() - t0
            used = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
            # One scrape, to show the metrics endpoint's cost is not in the idle figure.
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
            print(f"idle daemon ({'clouds polled' if args.clouds else 'no clouds'}), "
                  f"{wall:.0f} s window after {args.settle:.0f} s settle:")
            print(f"  RSS   mean {sum(samples) / len(samples) / MIB:.1f} MiB, "
                  f"peak {peak / MIB:.1f} MiB (goal < 150 MiB)")
            print(f"  CPU   {used:.2f} s in {wall:.0f} s = {100 * used / wall:.2f}% of one core "
                  "(goal < 1%)")
            print(f"  threads {p.num_threads()}")
        finally:
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(20)
            print(f"  SIGTERM -> exit {rc}")


if __name__ == "__main__":
    main()
