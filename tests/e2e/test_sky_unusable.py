"""An unusable SkyPilot is named by its real cause, with the fix, and never sends the user
to `sky check` when clouds are not the problem. Driven through the real CLI and SkyPilot's
real client: an API server endpoint where nothing listens (127.0.0.1, a free port)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.cli import gpuopt_command

REPO = Path(__file__).resolve().parents[2]
QLORA = REPO / "deploy" / "examples" / "qlora-7b.yaml"


@pytest.fixture
def nowhere(tmp_path: Path) -> tuple[dict[str, str], str]:
    """SkyPilot pointed at an API server endpoint nobody serves (not its local default,
    so SkyPilot does not start one itself)."""
    pytest.importorskip("sky", reason="SkyPilot is not installed (the skypilot extra)")
    from tests import sky_server

    url = f"http://127.0.0.1:{sky_server.free_port()}"
    env = sky_server.client_env(tmp_path / "home", sky_server.free_port())
    env.update(SKYPILOT_API_SERVER_ENDPOINT=url, GPUOPT_HOME=str(tmp_path / "gpuopt"))
    return env, url


def _submit(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*gpuopt_command(), "submit", str(QLORA), "--executor", "skypilot",
                           *extra], capture_output=True, text=True, timeout=300, cwd=REPO,
                          env=env)


def test_no_api_server_is_named_with_its_fix(nowhere: tuple[dict[str, str], str]) -> None:
    env, url = nowhere
    res = _submit(env)
    assert res.returncode == 2, res.stdout + res.stderr
    err = " ".join(res.stderr.split())
    assert (f"--executor skypilot: cannot ask SkyPilot which clouds it may use: no SkyPilot "
            f"API server answers at {url}: start one with `sky api start`, or point "
            "SkyPilot at yours with `sky api login -e URL`; or use --executor local") in err
    assert "sky check" not in err and "Traceback" not in err


def test_offline_without_a_catalog_the_dry_run_shows_the_task_and_says_why(
        nowhere: tuple[dict[str, str], str]) -> None:
    """No API server, no catalog cached, no network: the task, its resources as gpuopt
    pins them, exit 0, and one line why SkyPilot could not check it."""
    env, _ = nowhere
    res = _submit(env, "--dry-run")
    assert res.returncode == 0, res.stdout + res.stderr
    skipped = [line for line in res.stdout.splitlines() if "SkyPilot's own check" in line]
    assert skipped == ["SkyPilot's own check skipped: SkyPilot's catalog is not cached here "
                       "and cannot be downloaded (ConnectionError), so the resources are "
                       "shown as gpuopt pins them; `sky show-gpus` fetches the catalog when "
                       "online"]
    task = res.stdout.split("# SkyPilot task of attempt 1 on ", 1)[1]
    # the task pins the placement gpuopt chose (its header names it: cloud/region/type);
    # which region that is follows the embedded snapshot, so it is read, not hard-coded
    cloud, region, instance = task.split(",", 1)[0].split("/")
    assert (cloud, instance) == ("gcp", "a2-highgpu-1g")
    assert (f"\nresources:\n  infra: gcp/{region}\n  instance_type: a2-highgpu-1g\n"
            "  accelerators:\n    A100: 1\n  use_spot: true\n") in task
    assert "\nrun: " in task and "source: s3://example-ml-checkpoints\n" in task


def test_with_a_catalog_the_dry_run_names_the_missing_server(
        nowhere: tuple[dict[str, str], str]) -> None:
    env, url = nowhere
    done = subprocess.run([sys.executable, "-m", "tests.sky_server_home", "prepare", "AWS",
                           "GCP", "Azure"], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    res = _submit(env, "--dry-run")
    assert res.returncode == 0, res.stdout + res.stderr
    skipped = [line for line in res.stdout.splitlines() if "SkyPilot's own check" in line]
    assert skipped == [f"SkyPilot's own check skipped: the SkyPilot API server at {url} does "
                       "not answer; start it, or `sky api login -e URL` points SkyPilot at "
                       "another"]


def test_each_cause_has_its_own_text() -> None:
    """SkyPilot's own exception types, as its client raises them."""
    pytest.importorskip("sky", reason="SkyPilot is not installed (the skypilot extra)")
    from sky import exceptions

    from gpuopt.jobs.executors.sky_sdk import server_url, version, why_unusable

    url = server_url()
    mismatch = why_unusable(exceptions.APIVersionMismatchError(
        "Client and local API server version mismatch:\nserver 0.13.0, client 0.14.1"))
    assert mismatch.startswith(f"SkyPilot {version()} here and the API server at {url} are "
                               "versions that do not work together (Client and local API "
                               "server version mismatch:)")
    assert "`sky api stop` and `sky api start`" in mismatch
    login = why_unusable(exceptions.ApiServerAuthenticationError(url))
    assert login == f"the SkyPilot API server at {url} needs a login: `sky api login -e {url}`"
    assert why_unusable(exceptions.ApiServerConnectionError(url)).startswith(
        f"no SkyPilot API server answers at {url}")
    other = why_unusable(RuntimeError("\x1b[1mboom\x1b[0m\nmore"))
    assert other == "SkyPilot failed (RuntimeError: boom)"
    assert all("sky check" not in t for t in (mismatch, login, other))
