"""The sampler as the node runs it (the standalone script), and both run wrappers, with
a fake nvidia-smi on PATH that prints the real CSV format."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuopt.jobs.executors.base import AttemptSpec, AttemptState
from gpuopt.jobs.executors.local import LocalExecutor
from gpuopt.jobs.executors.skypilot import SkyPilotExecutor
from gpuopt.jobs.telemetry.script import node_script
from gpuopt.jobs.telemetry.summary import TELEMETRY_MARKER, parse_summary
from tests.jobs.executors.fake_sky import FakeSkyClient, FakeSkyWorld
from tests.jobs.executors.harness import SKY_PLACEMENT, wait_terminal
from tests.jobs.telemetry.fake_nvsmi import install_fake_nvidia_smi, path_with

ROWS = [(0, 30_000, 81_559, 40, 250.0), (1, 31_000, 81_559, 30, None)]


def _until(ok: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout}s")
        time.sleep(0.05)


def _script(tmp: Path) -> Path:
    path = tmp / "telemetry.py"
    path.write_text(node_script(), encoding="utf-8")
    return path


def _env(bin_dir: Path) -> dict[str, str]:
    return {"PATH": path_with(bin_dir), "HOME": os.environ.get("HOME", "/tmp")}


def test_the_node_script_stands_alone() -> None:
    text = node_script()
    assert text.startswith("from __future__ import annotations\n")
    assert text.count("from __future__") == 1
    compile(text, "telemetry.py", "exec")
    # The node has no gpuopt: an import of it is allowed only where ImportError is caught
    # (a `class _Stop(GpuoptError)` once made the script die there at its first line).
    tree = ast.parse(text)
    guarded = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try)
               and any(isinstance(h.type, ast.Name) and h.type.id == "ImportError"
                       for h in t.handlers)
               for stmt in t.body for n in ast.walk(stmt)}
    bare = [ast.unparse(n) for n in ast.walk(tree)
            if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in guarded
            and any(name.startswith("gpuopt") for name in
                    ([n.module or ""] if isinstance(n, ast.ImportFrom)
                     else [a.name for a in n.names]))]
    assert bare == []


def test_script_samples_and_writes_its_summary_on_sigterm(tmp_path: Path) -> None:
    install_fake_nvidia_smi(tmp_path / "bin", ROWS)
    progress = tmp_path / "progress.json"
    progress.write_text('{"step": 1, "total": 10, "tokens": 500}')
    out = tmp_path / "t.json"
    proc = subprocess.Popen([sys.executable, "-I", str(_script(tmp_path)), str(out), "0.1",
                             str(progress)], env=_env(tmp_path / "bin"))
    try:
        _until(out.exists)
        progress.write_text('{"step": 2, "total": 10, "tokens": 1500}')
        _until(lambda: (parse_summary(out.read_text()) or _none()).tokens == 1500)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    s = parse_summary(out.read_text())
    assert s is not None and s.samples >= 2
    assert s.peak_memory_mib == (30_000, 31_000)
    assert s.memory_total_mib == (81_559, 81_559)
    assert s.mean_utilization_pct == 35.0
    assert s.tokens_per_second is not None and s.tokens_per_second > 0


class _none:  # a stand-in with the attribute the wait reads
    tokens = None


def test_without_nvidia_smi_the_script_exits_at_once(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run([sys.executable, "-I", str(_script(tmp_path)), str(out), "0.1"],
                          env={"PATH": str(empty)}, timeout=20, check=False)
    assert done.returncode == 0 and not out.exists()


@pytest.mark.parametrize("kind", ["hang", "fail"])
def test_a_broken_nvidia_smi_is_logged_once_and_never_breaks_anything(
        tmp_path: Path, kind: str) -> None:
    install_fake_nvidia_smi(tmp_path / "bin", ROWS, hang=kind == "hang",
                            exit_code=9 if kind == "fail" else 0)
    out, err_file = tmp_path / "t.json", tmp_path / "stderr"
    with open(err_file, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-I", str(_script(tmp_path)), str(out), "1"],
                                env=_env(tmp_path / "bin"), stderr=err)
    try:
        _until(lambda: err_file.stat().st_size > 0)  # the first failed tick
        time.sleep(2.5)  # more failed ticks (a hung call is cut after 1 s at this interval)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    assert not out.exists()
    lines = err_file.read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith("[gpuopt] telemetry: nvidia-smi")


def _spec(tmp: Path, run: str) -> AttemptSpec:
    return AttemptSpec(job_id="tel", attempt=1, run=run, checkpoint_dir=str(tmp / "ck"))


RUN = ('echo \'{"step": 1, "total": 2, "tokens": 0}\' > "$GPUOPT_PROGRESS_FILE"; sleep 1; '
       'echo \'{"step": 2, "total": 2, "tokens": 4000}\' > "$GPUOPT_PROGRESS_FILE"; sleep 0.5')


def test_local_run_wrapper_samples_while_the_job_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_nvidia_smi(tmp_path / "bin", ROWS)
    monkeypatch.setenv("PATH", path_with(tmp_path / "bin"))
    ex = LocalExecutor(tmp_path / "a", telemetry_interval=0.1)
    spec = _spec(tmp_path, RUN)
    ex.launch(spec)
    status, _ = wait_terminal(ex, spec.cluster_name)
    assert status.state is AttemptState.SUCCEEDED
    t = status.telemetry
    assert t is not None and t.samples >= 3
    assert t.peak_memory_mib == (30_000, 31_000) and t.mean_utilization_pct == 35.0
    assert t.energy_wh is not None and t.energy_wh > 0
    assert t.tokens == 4000 and t.tokens_per_second is not None


def test_local_run_without_nvidia_smi_behaves_as_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}{os.pathsep}/usr/bin{os.pathsep}/bin")
    ex = LocalExecutor(tmp_path / "a", telemetry_interval=0.1)
    spec = _spec(tmp_path, "echo hi")
    ex.launch(spec)
    status, _ = wait_terminal(ex, spec.cluster_name)
    assert status.state is AttemptState.SUCCEEDED and status.telemetry is None
    assert not (ex.workspace(spec.cluster_name) / "telemetry.json").exists()
    assert list(ex.logs(spec.cluster_name)) == ["hi"]


def test_skypilot_wrapper_echoes_the_summary_into_the_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_nvidia_smi(tmp_path / "bin", ROWS)
    monkeypatch.setenv("PATH", path_with(tmp_path / "bin"))
    world = FakeSkyWorld(workdir=tmp_path)
    ex = SkyPilotExecutor(FakeSkyClient(world), telemetry_interval=0.1, progress_echo_s=0.2)
    spec = AttemptSpec(job_id="tel", attempt=1, run=RUN, checkpoint_dir=str(tmp_path / "ck"),
                       placement=SKY_PLACEMENT)
    ex.launch(spec)
    status, _ = wait_terminal(ex, spec.cluster_name)
    assert status.state is AttemptState.SUCCEEDED
    t = status.telemetry
    assert t is not None and t.peak_memory_mib == (30_000, 31_000) and t.tokens == 4000
    # read back from the log's "[gpuopt] telemetry {...}" line, which the user's view of
    # the log does not show
    assert not any(ln.startswith(TELEMETRY_MARKER) for ln in ex.logs(spec.cluster_name))
