"""Local executor: runs an attempt's ``setup`` and ``run`` as processes on this machine.

Each attempt lives in ``<base_dir>/<cluster name>/``:

- ``intent.json``  written (fsync'd) before anything is spawned: the attempt is claimed;
- ``state.json``   the wrapper's pid (= its process group), its create time, start time,
  planned preemption time: the attempt's identity, recorded before its program may run;
- ``gate.py``      the wrapper's first step: it waits for the workspace lock, which the
  launcher holds from the intent until state.json is written (or until it dies), and
  runs the program only if state.json exists; otherwise it marks the attempt
  ``abandoned`` and exits. So the program runs only once its identity is on disk (and
  its cgroup, where there is one: it is moved there while it waits);
- ``supervisor.py`` what the gate becomes (exec: same pid, the attempt's leader): a child
  subreaper that runs wrapper.sh, hides the job's secret values (``secret_names.json``:
  names only) in the log, and removes what the program left behind when it ends
  (local_proc: cgroup, subreaper and environment cookie);
- ``wrapper.sh``   runs setup.sh then run.sh and writes ``exit_code`` (``run 0``,
  ``setup 2``) atomically, so any process (a restarted daemon) can learn the exit code
  of a program it did not spawn; a multi-node attempt runs run.sh once per node
  (``nodes.py``: jobs/executors/local_nodes.py), every node a process of this attempt;
- ``attempt.log``  stdout + stderr, mode 0600 (or ``<log_dir>/<cluster name>.log``);
- ``progress.json`` the program's GPUOPT_PROGRESS_FILE;
- ``telemetry.py`` / ``telemetry.json`` the GPU sampler the wrapper runs beside the
  program when nvidia-smi exists, and its summary (jobs/telemetry); stopped, its last
  summary written, before the exit code is;
- ``preempted`` / ``cancelled`` / ``abandoned`` markers written *before* the group is
  signalled (``abandoned``: the launch never started it; a later launch refuses too).
  A preemption of a multi-node attempt names the node it hit (the last one) and takes
  all of them down: one preemption, and the next attempt restarts every node.

Every window of a launch has one owner: before the intent, nothing exists; between the
intent and state.json the launcher holds the lock (a poller that gets the lock there
knows the launcher is gone and abandons the attempt, which the gate then obeys); after
state.json the attempt is known by its recorded containment (local_proc.Contained: the
leader's pid and create time, its cgroup, its cookie). A preemption or a stop reaches
every process the attempt started, also those that left its process group, and waits
until none is left; a leader that died without an exit code (killed from outside) has
its processes stopped before the attempt is reported over, so its program never
outlives it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from gpuopt.core.buckets import is_bucket_url
from gpuopt.core.errors import UserError
from gpuopt.jobs.executors import local_proc
from gpuopt.jobs.executors.base import (
    AttemptSpec,
    AttemptState,
    AttemptStatus,
    FailureKind,
    LaunchError,
    LaunchResult,
    Progress,
    Provisioned,
)
from gpuopt.jobs.executors.contract import contract_env, inherited_env, read_progress
from gpuopt.jobs.executors.crash_points import crash_point
from gpuopt.jobs.executors.fault_injection import PreemptionSchedule
from gpuopt.jobs.executors.host import HostIdentity, current_host
from gpuopt.jobs.executors.local_nodes import NODES, free_loopback_port, local_node_env
from gpuopt.jobs.telemetry.script import node_script
from gpuopt.jobs.telemetry.summary import TelemetrySummary, parse_summary

DEFAULT_TELEMETRY_INTERVAL = 15.0  # seconds; configuration [telemetry] interval

_WRAPPER = """#!/bin/bash
ws={ws}
finish() {{
  printf '%s %d\\n' "$1" "$2" > "$ws/exit_code.tmp"
  mv -f "$ws/exit_code.tmp" "$ws/exit_code"
  exit "$2"
}}
if [ -f "$ws/setup.sh" ]; then
  bash "$ws/setup.sh"; rc=$?
  [ "$rc" -eq 0 ] || finish setup "$rc"
fi
tel=
if [ -f "$ws/telemetry.py" ] && command -v nvidia-smi >/dev/null 2>&1; then
  {python} -I "$ws/telemetry.py" "$ws/telemetry.json" {interval} "$ws/progress.json" &
  tel=$!
fi
{run}; rc=$?
if [ -n "$tel" ]; then
  kill -TERM "$tel" 2>/dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$tel" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$tel" 2>/dev/null; wait "$tel" 2>/dev/null
fi
finish run "$rc"
"""
# Held at the gate until the launcher recorded the wrapper's identity (or died).
_GATE = """import fcntl, json, os, sys, time
ws = sys.argv[1]
with open(os.path.join(ws, ".lock"), "a+") as fh:
    fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
    go = os.path.exists(os.path.join(ws, "state.json")) and not os.path.exists(
        os.path.join(ws, "abandoned"))
    if not go and not os.path.exists(os.path.join(ws, "abandoned")):
        with open(os.path.join(ws, "abandoned"), "w") as out:
            json.dump({"at": time.time(), "by": "gate"}, out)
if not go:
    sys.exit(0)
names = os.path.join(ws, "secret_names.json")
os.execv(sys.executable, [sys.executable, "-I", os.path.join(ws, "supervisor.py"),
                          names if os.path.exists(names) else "", "--",
                          "bash", os.path.join(ws, "wrapper.sh")])
"""
_MARKERS = ("exit_code", "preempted", "cancelled", "abandoned")


def _utc(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def job_environment(spec: AttemptSpec, *, checkpoint_dir: str,
                    progress_file: str) -> dict[str, str]:
    """A local job's whole environment: the allow-listed host variables (PATH, HOME,
    locale, ...), its ``envs`` and ``secrets``, then the checkpoint contract -- never the
    rest of the daemon's environment (its database URL, SMTP password, cloud keys)."""
    env = inherited_env(os.environ)
    env.update(spec.secrets)
    env.update(contract_env(spec, checkpoint_dir=checkpoint_dir, progress_file=progress_file))
    return env


PROGRESS_LOG_TAIL = 200  # log lines searched for the newest `[gpuopt] progress` line


def attempt_progress(ws: Path, log: Path) -> Progress | None:
    """What the attempt last reported: the contract's progress file, else the newest
    `[gpuopt] progress {...}` line in its log's tail (the form SkyPilot attempts use,
    which a program may print itself). Read-only: `status` reads it between watches."""
    from gpuopt.jobs.executors.sky_task import progress_from_lines

    return read_progress(ws / "progress.json") or progress_from_lines(
        tail_lines(log, PROGRESS_LOG_TAIL))


def peek_progress(base_dir: Path, cluster_name: str) -> Progress | None:
    """``attempt_progress`` of a local attempt's workspace under ``base_dir`` (None when
    this host has no such workspace)."""
    ws = base_dir / cluster_name
    if not ws.is_dir():
        return None
    pointer = ws / "log_path"
    log = Path(pointer.read_text(encoding="utf-8")) if pointer.exists() else ws / "attempt.log"
    return attempt_progress(ws, log)


def tail_lines(path: Path, n: int) -> tuple[str, ...]:
    """The last ``n`` lines of a (possibly large) text file."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read()
    except OSError:
        return ()
    lines = data.decode("utf-8", errors="replace").splitlines()
    return tuple(lines[-n:]) if n > 0 else ()


def read_telemetry(path: Path) -> TelemetrySummary | None:
    try:
        with open(path, "rb") as f:
            raw = f.read(64 * 1024)
    except OSError:
        return None
    return parse_summary(raw.decode("utf-8", errors="replace"))


class LocalExecutor:
    kind = "local"

    def __init__(
        self,
        base_dir: Path,
        *,
        preemption: PreemptionSchedule | None = None,
        stop_grace_seconds: float = 10.0,
        last_lines: int = 20,
        watch_interval: float = 0.05,
        telemetry_interval: float | None = DEFAULT_TELEMETRY_INTERVAL,
        cgroup_parent: Path | Literal["auto"] | None = "auto",
        host: HostIdentity | None = None,
    ) -> None:
        self.base_dir = Path(base_dir)
        # the host whose processes this executor sees: recorded with each attempt
        self.host = host or current_host()
        # where each attempt's cgroup is made ("auto": under this process's own cgroup
        # v2, where writable; None: no cgroups, the supervisor and cookie contain it)
        self.cgroup_parent = (local_proc.own_cgroup_dir() if cgroup_parent == "auto"
                              else cgroup_parent)
        self.preemption = preemption
        self.stop_grace_seconds = stop_grace_seconds
        self.last_lines = last_lines
        self.watch_interval = watch_interval
        self.telemetry_interval = telemetry_interval  # None: no sampling
        self._watchers: dict[str, threading.Thread] = {}
        self._watch_lock = threading.Lock()

    # -- paths and on-disk state ------------------------------------------------------
    def workspace(self, cluster_name: str) -> Path:
        return self.base_dir / cluster_name

    def _log_path(self, ws: Path) -> Path:
        pointer = ws / "log_path"
        return Path(pointer.read_text(encoding="utf-8")) if pointer.exists() else ws / "attempt.log"

    @staticmethod
    def _load_state(ws: Path) -> dict[str, Any] | None:
        try:
            state: dict[str, Any] = json.loads((ws / "state.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return state

    @contextmanager
    def _locked(self, ws: Path) -> Iterator[None]:
        ws.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(ws / ".lock", "a+") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    # -- launch -----------------------------------------------------------------------
    def launch(self, spec: AttemptSpec) -> LaunchResult:
        if is_bucket_url(spec.checkpoint_dir):
            raise UserError(
                f"the local executor needs a local checkpoint directory, got "
                f"{spec.checkpoint_dir!r}: set checkpoint.dir to a path"
            )
        if spec.workdir and not Path(spec.workdir).expanduser().is_dir():
            raise LaunchError(f"workdir {spec.workdir} is not a directory on this machine",
                              FailureKind.REFUSED)
        bad = [k for k in spec.envs if not k or "=" in k or "\0" in k]
        if bad or any("\0" in v for v in spec.envs.values()):
            raise LaunchError(f"invalid environment variable name(s) or value(s) in envs: "
                              f"{', '.join(repr(k) for k in bad) or 'a NUL in a value'}",
                              FailureKind.REFUSED)
        name = spec.cluster_name
        ws = self.workspace(name)
        try:
            with self._locked(ws):
                if self._load_state(ws) is not None or (ws / "abandoned").exists():
                    # Started before (adopt it), or given up on: never started twice.
                    self._watch(name, None)
                    return LaunchResult(cluster_name=name, adopted=True)
                proc = self._start(spec, ws)
        except OSError as err:  # e.g. a full disk: may pass
            raise LaunchError(f"{type(err).__name__}: {err}", FailureKind.LAUNCH) from err
        self._watch(name, proc)
        return LaunchResult(cluster_name=name, adopted=False)

    # -- probes (make before break: jobs.executors.base.Provisioner) --------------------
    def provision(self, spec: AttemptSpec) -> Provisioned:
        """Reserve the attempt's "node" (its workspace, marked ``provisioned``) and run
        nothing: the program starts only at :meth:`start`. A workspace given up on (stopped
        before it started) is never provisioned again."""
        ws = self.workspace(spec.cluster_name)
        try:
            with self._locked(ws):
                if (ws / "abandoned").exists():
                    raise LaunchError(f"{spec.cluster_name} was torn down before it started",
                                      FailureKind.LAUNCH)
                marker = ws / "provisioned"
                if not marker.exists():
                    _write_atomic(marker, json.dumps({"at": time.time()}))
        except OSError as err:  # e.g. a full disk: may pass
            raise LaunchError(f"{type(err).__name__}: {err}", FailureKind.LAUNCH) from err
        at = self._marker_time(marker)
        return Provisioned(spec.cluster_name, at or datetime.now(UTC))

    def start(self, spec: AttemptSpec) -> LaunchResult:
        """Run the attempt on its reserved node (the launch itself: idempotent, adopts)."""
        return self.launch(spec)

    def _start(self, spec: AttemptSpec, ws: Path) -> subprocess.Popen[bytes]:
        """Called with the workspace lock held: intent, spawn (held at the gate), identity.
        The gate opens when the lock is released, after state.json is written."""
        _write_atomic(ws / "intent.json", json.dumps(
            {"cluster_name": spec.cluster_name, "job_id": spec.job_id,
             "attempt": spec.attempt, "at": time.time()}))
        crash_point("intent")
        ckpt = Path(spec.checkpoint_dir).expanduser().resolve()
        ckpt.mkdir(parents=True, exist_ok=True)
        log_path = ws / "attempt.log"
        if spec.log_dir:
            Path(spec.log_dir).mkdir(parents=True, exist_ok=True)
            log_path = Path(spec.log_dir) / f"{spec.cluster_name}.log"
            (ws / "log_path").write_text(str(log_path), encoding="utf-8")
        if spec.setup:
            (ws / "setup.sh").write_text(spec.setup + "\n", encoding="utf-8")
        (ws / "run.sh").write_text(spec.run + "\n", encoding="utf-8")
        nodes = max(1, spec.placement.num_nodes)
        run = 'bash "$ws/run.sh"'
        if nodes > 1:  # one process a node (local_nodes)
            (ws / "nodes.py").write_text(NODES, encoding="utf-8")
            run = f'{shlex.quote(sys.executable)} -I "$ws/nodes.py" {nodes} "$ws/run.sh"'
        (ws / "wrapper.sh").write_text(_WRAPPER.format(
            ws=shlex.quote(str(ws)), python=shlex.quote(sys.executable),
            interval=f"{self.telemetry_interval or 0:g}", run=run), encoding="utf-8")
        if self.telemetry_interval:
            (ws / "telemetry.py").write_text(node_script(), encoding="utf-8")
        (ws / "gate.py").write_text(_GATE, encoding="utf-8")
        env = job_environment(spec, checkpoint_dir=str(ckpt),
                              progress_file=str(ws / "progress.json"))
        master_port = free_loopback_port()
        env.update(local_node_env(nodes, master_port))
        cwd = Path(spec.workdir).expanduser() if spec.workdir else ws
        launched = time.time()
        kill_after = (
            self.preemption.kill_after(spec, _utc(launched)) if self.preemption else None
        )
        (ws / "supervisor.py").write_text(local_proc.SUPERVISOR, encoding="utf-8")
        if spec.secrets:  # names only: the supervisor hides their values in the log
            (ws / "secret_names.json").write_text(json.dumps(sorted(spec.secrets)),
                                                  encoding="utf-8")
        proc, contained = local_proc.spawn(
            [sys.executable, "-I", str(ws / "gate.py"), str(ws)], cwd=cwd, env=env,
            log_path=log_path, cgroup_parent=self.cgroup_parent, name=spec.cluster_name)
        crash_point("spawned")
        state = {
            "cluster_name": spec.cluster_name,
            "job_id": spec.job_id,
            "attempt": spec.attempt,
            "host": self.host.host_id,
            "boot_id": self.host.boot_id,
            **contained.to_state(),
            "started_at": launched,
            "kill_at": launched + kill_after if kill_after is not None else None,
            "nodes": nodes,
            "master_port": master_port,
        }
        _write_atomic(ws / "state.json", json.dumps(state))
        crash_point("recorded")
        return proc

    # -- watching ---------------------------------------------------------------------
    def _watch(self, name: str, proc: subprocess.Popen[bytes] | None) -> None:
        with self._watch_lock:
            running = self._watchers.get(name)
            if running is not None and running.is_alive():
                return
            thread = threading.Thread(
                target=self._watch_loop, args=(name, proc), name=f"watch-{name}", daemon=True
            )
            self._watchers[name] = thread
            thread.start()

    def _watch_loop(self, name: str, proc: subprocess.Popen[bytes] | None) -> None:
        """Carries out planned preemptions on time and reaps the child it spawned."""
        while True:
            if proc is not None:
                proc.poll()
            if self.poll(name).state.is_terminal:
                break
            time.sleep(self.watch_interval)
        if proc is not None:
            proc.wait()

    def _enforce_preemption(self, ws: Path, state: dict[str, Any]) -> None:
        kill_at = state.get("kill_at")
        if kill_at is None or time.time() < kill_at:
            return
        with self._locked(ws):
            if any((ws / f).exists() for f in _MARKERS):
                return
            if not local_proc.leader_alive(state["pid"], state["create_time"]):
                return
            # one node reclaimed (the last): the attempt is preempted once, every node
            # stops, and the job restarts all of them from its checkpoint
            nodes = int(state.get("nodes") or 1)
            _write_atomic(ws / "preempted", json.dumps({"at": time.time(),
                                                        "node": nodes - 1}))
            # a reclaimed spot VM takes every process with it: all of them, not its group
            local_proc.kill_all(local_proc.Contained.from_state(state))

    # -- poll -------------------------------------------------------------------------
    def poll(self, cluster_name: str) -> AttemptStatus:
        ws = self.workspace(cluster_name)
        state = self._load_state(ws)
        if state is None:
            return self._unstarted(cluster_name, ws)
        self._enforce_preemption(ws, state)
        started = _utc(state["started_at"])
        progress = attempt_progress(ws, self._log_path(ws))
        common: dict[str, Any] = {"started_at": started, "progress": progress,
                                  "telemetry": read_telemetry(ws / "telemetry.json")}
        if (ws / "cancelled").exists():
            return AttemptStatus(
                cluster_name, AttemptState.CANCELLED,
                ended_at=self._marker_time(ws / "cancelled"), **common,
            )
        finished = self._finished(cluster_name, ws, common)
        if finished is not None:
            return finished
        if (ws / "preempted").exists():
            nodes = int(state.get("nodes") or 1)
            hit = (f"node {nodes - 1} of {nodes} preempted by the preemption drill: all stopped"
                   if nodes > 1 else "by the preemption drill (--preempt-after)")
            return AttemptStatus(
                cluster_name, AttemptState.PREEMPTED,
                ended_at=self._marker_time(ws / "preempted"), detail=hit, **common,
            )
        if local_proc.leader_alive(state["pid"], state["create_time"]):
            return AttemptStatus(cluster_name, AttemptState.RUNNING, **common)
        # The wrapper may have written exit_code between the two checks.
        finished = self._finished(cluster_name, ws, common)
        if finished is not None:
            return finished
        # The wrapper was killed from outside: what it started must not run on alone.
        local_proc.stop_all(local_proc.Contained.from_state(state), self.stop_grace_seconds)
        return AttemptStatus(
            cluster_name, AttemptState.UNKNOWN,
            last_lines=tail_lines(self._log_path(ws), self.last_lines),
            detail="the process ended without writing an exit code (killed from outside?); "
                   "its process group was stopped",
            **common,
        )

    def _unstarted(self, cluster_name: str, ws: Path) -> AttemptStatus:
        """No state.json: never started, being launched right now, or launched by a
        process that died before recording it (then it is abandoned here, for good)."""
        if (ws / "abandoned").exists():
            return AttemptStatus(cluster_name, AttemptState.FAILED,
                                 failure=FailureKind.NOT_STARTED,
                                 ended_at=self._marker_time(ws / "abandoned"),
                                 detail="abandoned before it started")
        if not (ws / "intent.json").exists():
            if (ws / "provisioned").exists():  # a probe's node: up, running nothing yet
                return AttemptStatus(cluster_name, AttemptState.PROVISIONED,
                                     started_at=self._marker_time(ws / "provisioned"),
                                     detail="provisioned; the job is not started on it")
            return AttemptStatus(cluster_name, AttemptState.UNKNOWN, detail="no such attempt")
        with open(ws / ".lock", "a+") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # its launcher holds it: the launch is under way
                return AttemptStatus(cluster_name, AttemptState.PENDING, detail="launching")
            try:
                if self._load_state(ws) is not None:
                    return AttemptStatus(cluster_name, AttemptState.PENDING,
                                         detail="launching")
                if not (ws / "abandoned").exists():
                    _write_atomic(ws / "abandoned", json.dumps({"at": time.time()}))
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        return AttemptStatus(cluster_name, AttemptState.FAILED, failure=FailureKind.NOT_STARTED,
                             ended_at=datetime.now(UTC),
                             detail="its launcher stopped before it started")

    def _finished(
        self, cluster_name: str, ws: Path, common: dict[str, Any]
    ) -> AttemptStatus | None:
        path = ws / "exit_code"
        try:
            phase, code_text = path.read_text(encoding="utf-8").split()
            code = int(code_text)
            ended = _utc(path.stat().st_mtime)
        except (OSError, ValueError):
            return None
        if code == 0 and phase == "run":
            return AttemptStatus(
                cluster_name, AttemptState.SUCCEEDED, exit_code=0, ended_at=ended, **common
            )
        return AttemptStatus(
            cluster_name,
            AttemptState.FAILED,
            exit_code=code,
            failure=FailureKind.SETUP if phase == "setup" else FailureKind.PROGRAM,
            last_lines=tail_lines(self._log_path(ws), self.last_lines),
            ended_at=ended,
            detail=f"{phase} exited with code {code}",
            **common,
        )

    @staticmethod
    def _marker_time(path: Path) -> datetime | None:
        try:
            return _utc(float(json.loads(path.read_text(encoding="utf-8"))["at"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    # -- stop, logs, discovery --------------------------------------------------------
    def stop(self, cluster_name: str) -> AttemptStatus:
        """Mark the attempt cancelled (or abandoned, when it never started: a late launch
        then refuses it) and stop its whole process group, waiting until it is gone."""
        ws = self.workspace(cluster_name)
        with self._locked(ws):
            state = self._load_state(ws)
            if state is None:
                if not (ws / "abandoned").exists():
                    _write_atomic(ws / "abandoned", json.dumps({"at": time.time()}))
            elif not any((ws / f).exists() for f in _MARKERS):
                _write_atomic(ws / "cancelled", json.dumps({"at": time.time()}))
        if state is not None:
            # Even after a normal exit, what the program left behind (in its group or
            # not: setsid, double fork, nohup) is removed, and waited for.
            contained = local_proc.Contained.from_state(state)
            local_proc.stop_all(contained, self.stop_grace_seconds)
            local_proc.release(contained)
        return self.poll(cluster_name)

    def logs(self, cluster_name: str, follow: bool = False) -> Iterator[str]:
        ws = self.workspace(cluster_name)
        if self._load_state(ws) is None:
            return
        path = self._log_path(ws)
        with open(path, encoding="utf-8", errors="replace") as f:
            pending = ""
            while True:
                chunk = f.readline()
                if chunk:
                    pending += chunk
                    if pending.endswith("\n"):
                        yield pending.rstrip("\n")
                        pending = ""
                    continue
                if not follow or self.poll(cluster_name).state.is_terminal:
                    rest = f.read()
                    pending += rest
                    yield from pending.splitlines()
                    return
                time.sleep(0.1)

    def list_running(self) -> list[str]:
        if not self.base_dir.is_dir():
            return []
        names = []
        for ws in sorted(self.base_dir.iterdir()):
            if (ws / "state.json").exists() and not self.poll(ws.name).state.is_terminal:
                names.append(ws.name)
        return names

    def adopt(self, cluster_name: str) -> AttemptStatus:
        status = self.poll(cluster_name)
        if not status.state.is_terminal and status.state is not AttemptState.UNKNOWN:
            self._watch(cluster_name, None)
        return status
