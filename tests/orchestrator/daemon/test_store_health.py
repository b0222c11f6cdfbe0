"""The store under a running daemon (issue 13.9): a deleted or replaced SQLite file, an
unwritable one, a read-only data directory, PostgreSQL unreachable, and the one-daemon
lock reached through a symlink or a hard link.

Read-only: the tests run as root, so file modes stop nothing; an unwritable database is
made with ``chattr +i`` (ext4 and the like), and a read-only directory with a read-only
bind mount inside a private mount namespace (``unshare -m``), which disappears with the
process. Each is skipped with the reason where the machine cannot do it."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.client import HTTPException
from pathlib import Path

import pytest

from gpuopt.orchestrator.daemon.store_health import StoreHealth
from tests.net import free_port
from tests.orchestrator.daemon.conftest import daemon_env, gpuopt_cmd, start_daemon, wait_for
from tests.orchestrator.daemon.test_process import http_get, stop, task_runs

pytestmark = pytest.mark.slow


def health(port: int) -> tuple[int, dict[str, object]]:
    import json

    try:
        code, body = http_get(f"http://127.0.0.1:{port}/healthz")
    except HTTPException:  # not (yet) our server on that port
        return 0, {}
    return code, (json.loads(body) if body else {})


def _identity(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


# -- in-process ----------------------------------------------------------------------------

def test_deleted_replaced_and_unwritable_are_problems_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, request: pytest.FixtureRequest
) -> None:
    db = tmp_path / "gpuopt.db"
    db.write_bytes(b"")
    held = os.open(db, os.O_RDONLY)  # as the daemon holds it: its inode is not reused
    request.addfinalizer(lambda: os.close(held))
    h = StoreHealth(db, _identity(db))
    caplog.set_level(logging.WARNING, "gpuopt.daemon.store")
    assert h.problem() is None
    h.wrote("OperationalError: disk I/O error")
    for _ in range(3):
        problem = h.problem()
        assert problem is not None and problem.kind == "write-failed"
        assert "disk I/O error" in problem.message
    h.wrote(None)
    assert h.problem() is None
    db.unlink()
    for _ in range(3):
        problem = h.problem()
        assert problem is not None and problem.kind == "deleted" and str(db) in problem.message
    other = tmp_path / "other.db"
    other.write_bytes(b"")
    other.rename(db)  # another file under the same name
    problem = h.problem()
    assert problem is not None and problem.kind == "replaced"
    messages = [r.getMessage() for r in caplog.records]
    assert [m.split(":")[0] for m in messages] == [
        "store unhealthy", "store healthy again (was", "store unhealthy", "store unhealthy"]
    assert "deleted" in messages[2] and "replaced" in messages[3]


def test_a_symlinked_path_is_the_same_file(tmp_path: Path) -> None:
    db = tmp_path / "gpuopt.db"
    db.write_bytes(b"")
    link = tmp_path / "link.db"
    link.symlink_to(db)
    h = StoreHealth(link, _identity(db))
    assert h.problem() is None
    link.unlink()
    link.symlink_to(tmp_path / "elsewhere.db")
    problem = h.problem()
    assert problem is not None and problem.kind == "deleted"


# -- real daemons on SQLite ------------------------------------------------------------------


def test_deleted_database_file_makes_healthz_unhealthy_and_stops_the_work(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    db = tmp_path / "gpuopt.db"
    port = free_port()
    log = tmp_path / "daemon.log"
    proc = start_daemon(daemon_env(tmp_path, f"sqlite:///{db}", port), log)
    procs.append(proc)
    wait_for(lambda: health(port)[0] == 200, 60, "/healthz ok")
    wait_for(lambda: task_runs(port, "reconcile") >= 1, 30, "a reconcile run")
    db.unlink()
    wait_for(lambda: health(port)[0] == 503, 30, "/healthz unhealthy")
    _code, body = health(port)
    assert body["status"] == "unhealthy" and "was deleted" in str(body["store"])
    # No step runs on a file nobody will read again.
    runs = task_runs(port, "reconcile")
    time.sleep(3)  # three reconcile intervals
    assert task_runs(port, "reconcile") <= runs + 1  # at most the one already under way
    assert stop(proc) == 0
    text = log.read_text()
    assert text.count("store unhealthy") == 1 and "was deleted" in text
    assert "Traceback" not in text


def test_symlink_and_hard_link_to_the_database_hit_the_same_daemon_lock(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    db = tmp_path / "data" / "gpuopt.db"
    db.parent.mkdir()
    port = free_port()
    first = start_daemon(daemon_env(tmp_path, f"sqlite:///{db}", port), tmp_path / "first.log")
    procs.append(first)
    wait_for(lambda: health(port)[0] == 200, 60, "the first daemon's /healthz")
    (tmp_path / "link.db").symlink_to(db)
    os.link(db, tmp_path / "hard.db")
    for other in ("link.db", "hard.db", "data/../data/gpuopt.db"):
        second = subprocess.run(
            gpuopt_cmd("daemon", "run"),
            env=daemon_env(tmp_path, f"sqlite:///{tmp_path / other}", free_port()),
            capture_output=True, text=True, timeout=60,
        )
        assert second.returncode == 2, (other, second.stderr)
        assert "already running" in second.stderr and "Traceback" not in second.stderr
    assert f"pid {first.pid}" in second.stderr  # the holder, found beside the real path
    assert first.poll() is None
    assert stop(first) == 0


def _chattr(flag: str, *paths: Path) -> bool:
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True).returncode == 0


def test_unwritable_database_makes_healthz_unhealthy_until_it_is_writable_again(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    db = tmp_path / "gpuopt.db"
    port = free_port()
    log = tmp_path / "daemon.log"
    proc = start_daemon(daemon_env(tmp_path, f"sqlite:///{db}", port), log)
    procs.append(proc)
    wait_for(lambda: health(port)[0] == 200, 60, "/healthz ok")
    files = [db, db.with_name(db.name + "-wal")]
    if not _chattr("+i", *files):
        pytest.skip("chattr +i is not possible here (not root, or a file system without it)")
    try:
        wait_for(lambda: health(port)[0] == 503, 30, "/healthz unhealthy")
        assert "writing to the store failed" in str(health(port)[1]["store"])
    finally:
        _chattr("-i", *files)
    wait_for(lambda: health(port)[0] == 200, 30, "/healthz ok again")
    assert stop(proc) == 0
    text = log.read_text()
    assert text.count("store unhealthy") == 1 and text.count("store healthy again") == 1


def _read_only_mount_works(directory: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && ! touch "$0/probe"',
         str(directory)], capture_output=True)
    return probe.returncode == 0


@pytest.mark.parametrize("existing", [False, True], ids=["new-database", "existing-database"])
def test_read_only_data_directory_is_a_clear_error_with_exit_2(
    tmp_path: Path, existing: bool
) -> None:
    home = tmp_path / "home"
    data = home / "data"
    data.mkdir(parents=True)
    if not _read_only_mount_works(home):
        pytest.skip("no private read-only bind mount here (needs unshare -m and mount)")
    env = daemon_env(home, f"sqlite:///{data / 'gpuopt.db'}", free_port())
    if existing:
        from gpuopt.orchestrator.store import open_store

        open_store(env["GPUOPT_DATABASE_URL"]).close()
    for args in (("daemon", "run"), ("submit", "deploy/examples/quickstart.yaml")):
        res = subprocess.run(
            ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"',
             str(home), *gpuopt_cmd(*args)],
            env=env, capture_output=True, text=True, timeout=120,
            cwd=Path(__file__).resolve().parents[3],
        )
        assert res.returncode == 2, (args, res.stderr)
        assert "Traceback" not in res.stderr
        assert str(data / "gpuopt.db") in res.stderr, res.stderr
    if not existing:
        assert list(data.iterdir()) == []  # nothing half-written


# -- PostgreSQL unreachable ------------------------------------------------------------------

class Proxy:
    """A TCP forwarder to the PostgreSQL server that can be cut and restored."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self._conns: list[socket.socket] = []
        self._server: socket.socket | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        server = socket.create_server(("127.0.0.1", self.port))  # SO_REUSEADDR: re-bindable
        self._server = server
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """Refuse new connections and drop every open one."""
        if self._server is not None:
            with contextlib.suppress(OSError):  # wakes the blocked accept() (Linux)
                self._server.shutdown(socket.SHUT_RDWR)
            self._server.close()
            self._server = None
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    p = Proxy(("127.0.0.1", 5432))
    p.start()
    yield p
    p.cut()


@pytest.mark.postgres
def test_unreachable_postgres_makes_healthz_unhealthy_until_it_is_back(
    pg_url: str, tmp_path: Path, proxy: Proxy, procs: list[subprocess.Popen[bytes]]
) -> None:
    url = pg_url.replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}")
    assert url != pg_url
    port = free_port()
    log = tmp_path / "daemon.log"
    proc = start_daemon(daemon_env(tmp_path, url, port), log)
    procs.append(proc)
    wait_for(lambda: health(port)[0] == 200 and health(port)[1]["role"] == "leader", 60,
             "/healthz ok, leading")
    proxy.cut()
    wait_for(lambda: health(port)[0] == 503, 30, "/healthz unhealthy")
    assert "writing to the store failed" in str(health(port)[1]["store"])
    wait_for(lambda: "cannot reach PostgreSQL for the leadership" in log.read_text(), 30,
             "the stand-by's first failed try")
    time.sleep(3)  # three more tries (every second here), which must not be logged again
    proxy.start()
    wait_for(lambda: health(port)[0] == 200, 60, "/healthz ok again")
    assert stop(proc) == 0
    text = log.read_text()
    assert text.count("store unhealthy") == 1 and text.count("store healthy again") == 1
    assert text.count("cannot reach PostgreSQL for the leadership") == 1  # once per outage
