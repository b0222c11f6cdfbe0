"""Load on the team server, on loopback: N clients submitting and polling for a while.

    python benchmarks/api_load.py [--clients 50] [--seconds 60] [--kill-at 30]
                                  [--database sqlite|postgresql]

Starts a real `gpuopt daemon run` (its HTTP API on a free loopback port) in a
throwaway GPUOPT_HOME, with five users; the reconcile interval is long, so jobs stay
queued and what is measured is the API and the store, not the executor. Each client
(a thread, urllib) loops: every fifth request a submit (a small job; 201 = accepted),
else the status of one of its jobs or its job list. ``--kill-at S``: the daemon is
killed with SIGKILL S seconds in and started again on the same store; the clients keep
going (requests to a dead server fail and are retried later, never counted accepted).

Reports requests by kind and status, latency percentiles of status, and checks:
no 5xx; every accepted submission (201) is in the store exactly once, no job in the
store that no client was told was accepted (or that was in flight at the kill).
Exit 1 when a check fails. Goal: no 5xx, no lost or duplicated job, status p99 < 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

JOB = """\
name: load-{n}
run: "true"
model:
  name: gpt2
workload:
  type: finetune
  tokens: 1m
resources:
  gpus: [T4, L4]
  max_gpus_per_node: 1
"""
USERS = 5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gpuopt(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpuopt.orchestrator.cli.app", *args],
                          env=env, capture_output=True, text=True, timeout=120, check=True)


class Client(threading.Thread):
    def __init__(self, n: int, url: str, token: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.n, self.url, self.token, self.stop = n, url, token, stop
        self.accepted: list[str] = []
        self.codes: Counter[tuple[str, int]] = Counter()
        self.status_s: list[float] = []
        self.in_flight_failures = 0

    def call(self, method: str, path: str, body: bytes | None = None,
             ctype: str | None = None) -> tuple[int, bytes]:
        req = urllib.request.Request(self.url + path, data=body, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        if ctype:
            req.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                return res.status, res.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def submit(self, i: int) -> None:
        from urllib.parse import urlencode

        body = urlencode({"job_yaml": JOB.format(n=f"{self.n}-{i}"),
                          "filename": "load.yaml", "executor": "local"}).encode()
        code, data = self.call("POST", "/api/v1/jobs", body,
                               "application/x-www-form-urlencoded")
        self.codes[("submit", code)] += 1
        if code == 201:
            self.accepted.append(json.loads(data)["id"])

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            i += 1
            try:
                if i % 5 == 1 or not self.accepted:
                    self.submit(i)
                elif i % 5 == 3:
                    code, _ = self.call("GET", "/api/v1/jobs?limit=20")
                    self.codes[("jobs", code)] += 1
                else:
                    job = self.accepted[i % len(self.accepted)]
                    t0 = time.perf_counter()
                    code, _ = self.call("GET", f"/api/v1/jobs/{job}")
                    self.status_s.append(time.perf_counter() - t0)
                    self.codes[("status", code)] += 1
            except (urllib.error.URLError, OSError):  # the server is down (the kill)
                self.in_flight_failures += 1
                self.stop.wait(0.2)


def start(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "gpuopt.orchestrator.cli.app", "daemon", "run"], env=env,
            stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)


def wait_up(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + "/api/v1/openapi.json", timeout=2).close()
            return
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    raise SystemExit("the API did not come up")


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--kill-at", type=float, default=None)
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpuopt-load-") as tmp:
        home = Path(tmp)
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUOPT_")}
        env.update(GPUOPT_HOME=str(home), GPUOPT_CLOUDS_ENABLED="[]",
                   GPUOPT_API_ADDRESS=f"127.0.0.1:{port}",
                   GPUOPT_DAEMON_METRICS_ADDRESS=f"127.0.0.1:{free_port()}",
                   GPUOPT_DAEMON_RECONCILE_INTERVAL="1h", GPUOPT_DAEMON_POLL_INTERVAL="1h",
                   AWS_EC2_METADATA_DISABLED="true")
        if args.database == "postgresql":
            env["GPUOPT_DATABASE_URL"] = _pg_database()
        tokens = [json.loads(gpuopt("users", "add", f"user{u}", "--team", f"t{u % 2}",
                                    "--json", env=env).stdout)["token"]
                  for u in range(USERS)]
        url = f"http://127.0.0.1:{port}"
        daemon = start(env, home / "daemon.log")
        wait_up(url)
        stop = threading.Event()
        clients = [Client(n, url, tokens[n % USERS], stop) for n in range(args.clients)]
        t0 = time.monotonic()
        for c in clients:
            c.start()
        killed_at = None
        try:
            if args.kill_at is not None:
                time.sleep(args.kill_at)
                os.kill(daemon.pid, signal.SIGKILL)
                daemon.wait(10)
                killed_at = time.monotonic() - t0
                daemon = start(env, home / "daemon.log")
                wait_up(url)
            time.sleep(max(0.0, args.seconds - (time.monotonic() - t0)))
        finally:
            stop.set()
            for c in clients:
                c.join(60)
            elapsed = time.monotonic() - t0
            daemon.terminate()
            daemon.wait(30)
        stored = _stored_ids(env)
        if args.database == "postgresql":
            _drop_pg(env["GPUOPT_DATABASE_URL"])
        _report(args, clients, stored, elapsed, killed_at)


def _pg_database() -> str:
    import secrets

    import sqlalchemy as sa

    name = f"gpuopt_load_{secrets.token_hex(4)}"
    admin = sa.create_engine("postgresql+psycopg://postgres@127.0.0.1:5432/test",
                             isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"


def _drop_pg(url: str) -> None:
    import sqlalchemy as sa

    name = url.rsplit("/", 1)[1]
    admin = sa.create_engine("postgresql+psycopg://postgres@127.0.0.1:5432/test",
                             isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def _stored_ids(env: dict[str, str]) -> list[str]:
    out = gpuopt("jobs", "--json", env=env).stdout
    return [j["id"] for j in json.loads(out)]


def _report(args: argparse.Namespace, clients: list[Client], stored: list[str],
            elapsed: float, killed_at: float | None) -> None:
    codes: Counter[tuple[str, int]] = Counter()
    for c in clients:
        codes.update(c.codes)
    accepted = [j for c in clients for j in c.accepted]
    status = sorted(s for c in clients for s in c.status_s)
    total = sum(codes.values())
    print(f"{args.clients} clients, {elapsed:.0f} s, {args.database}: {total:,} requests "
          f"({total / elapsed:,.0f}/s)"
          + (f"; daemon killed -9 at {killed_at:.0f} s and restarted" if killed_at else ""))
    for (kind, code), n in sorted(codes.items()):
        print(f"  {kind:6} {code}: {n:,}")
    failed = sum(c.in_flight_failures for c in clients)
    if failed:
        print(f"  requests that reached no server (the kill): {failed:,}")
    if status:
        print(f"  status latency: p50 {pct(status, 50) * 1000:.0f} ms, p95 "
              f"{pct(status, 95) * 1000:.0f} ms, p99 {pct(status, 99) * 1000:.0f} ms, "
              f"max {status[-1] * 1000:.0f} ms")
    server_errors = sum(n for (_, code), n in codes.items() if code >= 500)
    counted = Counter(stored)
    lost = sorted(set(accepted) - set(stored))
    duplicated = sorted(j for j, n in counted.items() if n > 1)
    unknown = sorted(set(stored) - set(accepted))
    print(f"  accepted submissions {len(accepted):,}; stored jobs {len(stored):,}; lost "
          f"{len(lost)}; duplicated {len(duplicated)}; stored but never acknowledged "
          f"{len(unknown)} (in flight at the kill)")
    ok = not server_errors and not lost and not duplicated and \
        (killed_at is not None or not unknown)
    print("OK" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
