"""`gpuopt submit EXAMPLE --executor skypilot --dry-run`, the real CLI and real SkyPilot:

- with the session's real API server (clouds enabled, catalog cached): exit 0, the task,
  and SkyPilot's own optimizer's choice for it, which is the placement gpuopt pinned (the
  table SkyPilot logged for that optimize request on the server says so too);
- with SkyPilot installed but no API server (and no network): exit 0, the task, and one
  line saying why SkyPilot's own check was skipped; no server is started.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cli import gpuopt_command

REPO = Path(__file__).resolve().parents[2]
# full-70b-multinode: its cheapest place on the snapshot is AWS eu-south-2, an opt-in
# region missing from the test account's zone mapping; gpuopt plans only where SkyPilot
# can launch (placement_inputs.executor_regions), so SkyPilot's pick equals gpuopt's.
SKY_EXAMPLES = ("qlora-7b", "full-13b-zero3", "inference-70b", "full-70b-multinode")
ALL_EXAMPLES = SKY_EXAMPLES
HEADER = re.compile(r"# SkyPilot task of attempt 1 on (?:\d+ x )?(\S+), cluster (\S+) ")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _dry_run(example: str, env: dict[str, str], gpuopt_home: Path
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*gpuopt_command(), "submit", str(REPO / "deploy" / "examples" / f"{example}.yaml"),
         "--executor", "skypilot", "--dry-run"],
        capture_output=True, text=True, timeout=600, cwd=REPO,
        env={**env, "GPUOPT_HOME": str(gpuopt_home)})


def _chosen_rows(server: Any) -> list[str]:
    """The CHOSEN row of the table SkyPilot's optimizer logged for each optimize request
    on the server, newest last (read back through SkyPilot's own SDK)."""
    script = (
        "import io\n"
        "from sky.client import sdk\n"
        "reqs = sorted((r for r in sdk.api_status(all_status=True) "
        "if r.name == 'sky.optimize'), key=lambda r: r.created_at)\n"
        "for r in reqs:\n"
        "    out = io.StringIO()\n"
        "    sdk.stream_and_get(r.request_id, follow=False, output_stream=out)\n"
        "    rows = [l for l in out.getvalue().splitlines() if '\\u2714' in l]\n"
        "    print(rows[0] if rows else 'NONE')\n")
    done = server.run("-c", script)
    assert done.returncode == 0, done.stderr[-2000:]
    return [ANSI.sub("", line).strip() for line in done.stdout.splitlines()]


@pytest.mark.parametrize("example", SKY_EXAMPLES)
def test_the_dry_run_shows_skypilots_choice_equal_to_gpuopts(
        example: str, sky_api_server: Any, tmp_path: Path) -> None:
    res = _dry_run(example, sky_api_server.env, tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    where = HEADER.search(res.stdout)
    assert where is not None, res.stdout
    cloud, region, instance = where.group(1).split("/")  # cloud/region-or-zone/instance
    assert "\nresources:\n  infra: " in res.stdout and "\nrun: " in res.stdout
    market = "spot" if "use_spot: true" in res.stdout else "on-demand"
    assert (f"SkyPilot's optimizer picks the placement gpuopt pinned:\n"
            f"  {cloud}/{region} {instance} {market}\n") in res.stdout
    assert "SkyPilot's own check skipped" not in res.stdout
    # what SkyPilot's optimizer itself logged on the server for this request
    chosen = _chosen_rows(sky_api_server)[-1]
    names = {"gcp": "GCP", "aws": "AWS", "azure": "Azure"}
    assert chosen.startswith(f"{names[cloud]} ({region}")
    assert f" {instance}{'[Spot]' if market == 'spot' else ''} " in chosen


@pytest.fixture(scope="module")
def offline_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """SkyPilot installed, its catalog cached, no API server on the port it would use."""
    pytest.importorskip("sky", reason="SkyPilot is not installed (the skypilot extra)")
    from tests import sky_server

    home = tmp_path_factory.mktemp("sky-offline-home")
    server = sky_server.SkyServer(home, sky_server.free_port(), {})
    server.env = sky_server.client_env(home, server.port)
    done = server.run("-m", "tests.sky_server_home", "prepare", "AWS", "GCP", "Azure")
    assert done.returncode == 0, done.stderr[-2000:]
    return server.env


@pytest.mark.parametrize("example", ALL_EXAMPLES)
def test_without_an_api_server_the_dry_run_says_why_in_one_line(
        example: str, offline_env: dict[str, str], tmp_path: Path) -> None:
    res = _dry_run(example, offline_env, tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert HEADER.search(res.stdout) and "dry run: nothing stored" in res.stdout
    url = f"http://127.0.0.1:{offline_env['SKYPILOT_API_SERVER_LOCAL_PORT']}"
    skipped = [line for line in res.stdout.splitlines() if "SkyPilot's own check" in line]
    assert skipped == [f"SkyPilot's own check skipped: no SkyPilot API server runs at {url}; "
                       "`sky api start` starts one"]
    assert "Traceback" not in res.stdout + res.stderr
    assert not (Path(offline_env["HOME"]) / ".sky" / "api_server").exists()  # none started
    if example == "full-70b-multinode":  # the nodes are one task of SkyPilot's
        assert re.search(r"^num_nodes: [2-9]$", res.stdout, re.M), res.stdout


def test_a_submit_asks_the_real_server_which_clouds_it_may_use(
        sky_api_server: Any, tmp_path: Path) -> None:
    """Not a dry run: SkyPilot's enabled clouds (AWS, GCP, Azure on the session's server)
    narrow the plan, and the job is queued."""
    res = subprocess.run(
        [*gpuopt_command(), "submit", str(REPO / "deploy" / "examples" / "qlora-7b.yaml"),
         "--executor", "skypilot"], capture_output=True, text=True, timeout=600, cwd=REPO,
        env={**sky_api_server.env, "GPUOPT_HOME": str(tmp_path)})
    assert res.returncode == 0, res.stdout + res.stderr
    assert "(queued, executor skypilot)" in res.stdout
