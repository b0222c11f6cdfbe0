"""Two users on one daemon, one of them remote (a laptop: its own GPUOPT_HOME, no
store): `gpuopt daemon run` serves the API over HTTPS (a self-signed CA the laptop
trusts through SSL_CERT_FILE); the remote CLI submits a job with a workdir the control
node never saw, which runs there to success; each user sees only its own jobs, the
admin both; the wrong user's cancel exits 2 with the server's message; the remote
`jobs` prints what the control node's local `jobs` prints."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.cli import gpuopt_command
from tests.net import free_port, write_self_signed
from tests.orchestrator.daemon.conftest import daemon_env, start_daemon, wait_for

JOB = """\
name: {name}
run: python3 train.py
workdir: ./src
model:
  name: gpt2
workload:
  type: finetune
  tokens: 1m
resources:
  gpus: [T4, L4]
  max_gpus_per_node: 1
"""


def _cli(env: dict[str, str], *args: str, cwd: Path | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*gpuopt_command(), *args], capture_output=True, text=True,
                          timeout=120, env={**env, "COLUMNS": "100"}, cwd=cwd)


@pytest.fixture
def server(tmp_path: Path) -> object:
    home = tmp_path / "control"
    cert, key = write_self_signed(tmp_path)
    port = free_port()
    env = daemon_env(home, f"sqlite:///{home / 'data' / 'gpuopt.db'}", free_port(),
                     GPUOPT_API_ADDRESS=f"127.0.0.1:{port}", GPUOPT_API_TLS_CERT=str(cert),
                     GPUOPT_API_TLS_KEY=str(key), GPUOPT_EXECUTOR_DEFAULT="local")
    tokens = {}
    for name, extra in (("alice", ["--team", "nlp"]), ("bob", ["--team", "cv"]),
                        ("root", ["--admin"])):
        res = _cli(env, "users", "add", name, *extra, "--json")
        assert res.returncode == 0, res.stderr
        tokens[name] = json.loads(res.stdout)["token"]
    proc = start_daemon(env, tmp_path / "daemon.log")
    url = f"https://localhost:{port}"
    try:
        laptop = {k: v for k, v in os.environ.items() if not k.startswith("GPUOPT_")}
        laptop.update(GPUOPT_HOME=str(tmp_path / "laptop"), SSL_CERT_FILE=str(cert))

        def as_user(name: str) -> dict[str, str]:
            return {**laptop, "GPUOPT_API_URL": url, "GPUOPT_API_TOKEN": tokens[name]}

        wait_for(lambda: _cli(as_user("root"), "jobs").returncode == 0, 60, "the API")
        yield env, as_user, tmp_path
    finally:
        proc.terminate()
        proc.wait(20)
    log = (tmp_path / "daemon.log").read_text()
    for token in tokens.values():
        assert token not in log


def test_two_users_one_remote(server: object) -> None:
    env, as_user, tmp = server  # type: ignore[misc]
    ids = {}
    for name in ("alice", "bob"):
        project = tmp / f"{name}-laptop"
        (project / "src").mkdir(parents=True)
        (project / "src" / "train.py").write_text(f"print('trained by {name}')\n")
        (project / "job.yaml").write_text(JOB.format(name=f"{name}-job"))
        res = _cli(as_user(name), "submit", "job.yaml", cwd=project)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "cheapest placements" in res.stdout
        ids[name] = res.stdout.split("submitted ", 1)[1].split()[0]

    def listed(name: str) -> list[str]:
        res = _cli(as_user(name), "jobs", "--json")
        assert res.returncode == 0, res.stderr
        return [j["id"] for j in json.loads(res.stdout)]

    assert listed("alice") == [ids["alice"]] and listed("bob") == [ids["bob"]]
    assert sorted(listed("root")) == sorted(ids.values())
    refused = _cli(as_user("bob"), "cancel", ids["alice"])
    assert refused.returncode == 2
    assert (f"job {ids['alice']} belongs to alice: only its owner or an admin may cancel "
            "it") in refused.stderr and "Traceback" not in refused.stderr
    for name in ("alice", "bob"):
        def done(n: str = name) -> bool:
            res = _cli(as_user(n), "status", ids[n], "--json")
            return res.returncode == 0 and json.loads(res.stdout)["status"] == "succeeded"

        wait_for(done, 90, f"{name}'s job to succeed", step=1.0)
        logs = _cli(as_user(name), "logs", ids[name])
        assert logs.returncode == 0 and f"trained by {name}" in logs.stdout
    # the same table remotely (admin) as on the control node's own store
    remote = _cli(as_user("root"), "jobs")
    local = _cli(env, "jobs")
    assert remote.returncode == local.returncode == 0
    assert remote.stdout == local.stdout and ids["alice"] in remote.stdout
    # plan, prices and report: the remote CLI prints what the control node prints
    project = tmp / "alice-laptop"
    for args in (("plan", "job.yaml", "--top", "4"), ("prices", "--limit", "5"),
                 ("report",), ("report", "--format", "json"),
                 ("estimate", "job.yaml", "--gpu", "L4")):
        there = _cli(as_user("root"), *args, cwd=project)
        here = _cli(env, *args, cwd=project)
        assert there.returncode == here.returncode == 0, (args, there.stderr, here.stderr)
        assert there.stdout == here.stdout, args
    no_token = _cli({**as_user("root"), "GPUOPT_API_TOKEN": "gpuopt_wrong"}, "jobs")
    assert no_token.returncode == 2 and "not valid" in no_token.stderr
    # `gpuopt login` keeps the URL and token (0600); the commands then need no variables
    user = as_user("alice")
    laptop = {k: v for k, v in user.items() if k not in ("GPUOPT_API_URL", "GPUOPT_API_TOKEN")}
    login = subprocess.run([*gpuopt_command(), "login", user["GPUOPT_API_URL"],
                            "--token-stdin"], input=user["GPUOPT_API_TOKEN"] + "\n",
                           capture_output=True, text=True, timeout=60, env=laptop)
    assert login.returncode == 0 and "as alice (member of team nlp)" in login.stdout
    saved = Path(laptop["GPUOPT_HOME"]) / "login.json"
    assert saved.stat().st_mode & 0o777 == 0o600
    assert _cli(laptop, "jobs", "--json").stdout.count(ids["alice"]) == 1
    assert _cli(laptop, "logout").returncode == 0 and not saved.exists()
