from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gpuopt.jobs.executors.base import LOCAL_PLACEMENT
from gpuopt.jobs.executors.local import LocalExecutor
from gpuopt.jobs.executors.skypilot import SkyPilotExecutor
from tests.jobs.executors.fake_sky import FakeSkyClient, FakeSkyWorld
from tests.jobs.executors.harness import SKY_PLACEMENT, Harness


def _local(tmp: Path) -> Harness:
    base = tmp / "attempts"

    def launches(name: str) -> int:
        # One state.json per started attempt; a second start would need a second leader.
        return int((base / name / "state.json").exists())

    return Harness("local", tmp, lambda: LocalExecutor(base, stop_grace_seconds=2),
                   LOCAL_PLACEMENT, launches)


def _sky(tmp: Path) -> Harness:
    world = FakeSkyWorld(workdir=tmp)
    return Harness(
        "skypilot", tmp, lambda: SkyPilotExecutor(FakeSkyClient(world)), SKY_PLACEMENT,
        lambda name: sum(1 for n, _ in world.calls_named("launch") if n == name),
        extra={"world": world},
    )


@pytest.fixture(params=["local", "skypilot"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    h = _local(tmp_path) if request.param == "local" else _sky(tmp_path)
    yield h
    # Never leave a test's processes behind, whatever the test did.
    # A process may end between being listed and being killed (the attempt's supervisor
    # reaps its descendants as it exits): gone is what this wants.
    for proc in _processes_under(tmp_path):
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            continue


def _processes_under(tmp: Path) -> list[psutil.Process]:
    left = []
    for proc in psutil.process_iter(["pid"]):
        try:
            ckpt = proc.environ().get("GPUOPT_CHECKPOINT_DIR")
            if ckpt and Path(ckpt).is_relative_to(tmp):  # not a substring: test_n1/test_n10
                left.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return left

