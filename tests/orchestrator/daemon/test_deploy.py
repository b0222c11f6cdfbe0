"""deploy/: what can be checked without a container engine or systemd as init.

- config.example.toml names every option of the Settings model (and nothing else), and
  uncommenting all of it gives a configuration the model accepts;
- compose.yaml parses, has the daemon + PostgreSQL + a mail catcher, and the daemon's
  environment is a valid gpuopt configuration pointing at those services;
- the Dockerfile is slim, non-root, installs the package and runs `gpuopt daemon`
  (hadolint when it is on PATH);
- the systemd unit has its own user, Restart=on-failure, the hardening options, and
  passes `systemd-analyze verify` when that is installed.
"""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from gpuopt.orchestrator.config import Settings, load_config
from tests.conftest import CONFIG_EXAMPLE

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
EXAMPLE = CONFIG_EXAMPLE
_HEADER = re.compile(r"^#?\s?\[(\[?)([a-z_.]+)\]?\]$")
_KEY = re.compile(r"^#?\s?([a-z_][a-z0-9_-]*)\s*=\s*(.+)$")
# Never written in a file (GPUOPT_SMTP_PASSWORD or password_file).
NOT_IN_FILES = {("smtp", "password")}


Options = tuple[set[str], set[tuple[str, str]]]


def model_options(model: type[BaseModel], prefix: str = "") -> Options:
    """(table names, (table, key) pairs) of the configuration model."""
    tables: set[str] = set()
    keys: set[tuple[str, str]] = set()
    for name, info in model.model_fields.items():
        ann = info.annotation
        args = getattr(ann, "__args__", ())
        sub = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
        if getattr(ann, "__origin__", None) is list and args and isinstance(args[0], type) \
                and issubclass(args[0], BaseModel):
            sub = args[0]
        path = f"{prefix}.{name}" if prefix else name
        if sub is not None:
            tables.add(path)
            t, k = model_options(sub, path)
            tables |= t
            keys |= k
        elif getattr(ann, "__origin__", None) is dict:
            tables.add(path)  # written as a [table] of entries
        else:
            keys.add((prefix, name))
    return tables, keys


def example_options(text: str) -> Options:
    tables: set[str] = set()
    keys: set[tuple[str, str]] = set()
    table = ""
    dict_tables = {"placement.preemption_rates", "report.recipients", "report.team_budgets"}
    for line in text.splitlines():
        if m := _HEADER.match(line.strip()):
            table = m.group(2)
            tables.add(table)
        elif (m := _KEY.match(line.strip())) and table not in dict_tables:
            keys.add((table, m.group(1)))
    return tables, keys


def test_example_config_names_every_option_and_only_those() -> None:
    model_tables, model_keys = model_options(Settings)
    tables, keys = example_options(EXAMPLE.read_text())
    assert tables == model_tables
    assert keys == model_keys - NOT_IN_FILES


def test_example_config_uncommented_is_valid(tmp_path: Path) -> None:
    secret = tmp_path / "smtp-password"
    secret.write_text("not-a-real-password\n")
    secret.chmod(0o600)
    lines = []
    for line in EXAMPLE.read_text().splitlines():
        s = line.strip()
        if _HEADER.match(s) or _KEY.match(s):
            s = s.removeprefix("#").strip()
            if s.startswith("password_file"):
                s = f'password_file = "{secret}"'
            lines.append(s)
    uncommented = tmp_path / "config.toml"
    uncommented.write_text("\n".join(lines) + "\n")
    data = tomllib.loads(uncommented.read_text())
    assert data["daemon"]["metrics_address"] == "127.0.0.1:9464"
    settings = load_config(uncommented, env={})
    defaults = Settings()
    # The commented daemon values are the real defaults.
    assert settings.daemon == defaults.daemon
    assert settings.report.weekday == defaults.report.weekday
    assert settings.smtp.password is not None  # read from password_file


def test_compose_file_has_the_daemon_postgres_and_a_mail_catcher() -> None:
    import yaml

    doc: dict[str, Any] = yaml.safe_load((DEPLOY / "docker" / "compose.yaml").read_text())
    services = doc["services"]
    assert {"gpuopt", "postgres", "mailpit"} <= set(services)
    assert services["postgres"]["image"] == "postgres:16"
    daemon = services["gpuopt"]
    build = daemon["build"]
    assert (DEPLOY / "docker" / build["context"] / build["dockerfile"]).resolve() == (
        DEPLOY / "docker" / "Dockerfile").resolve()
    assert daemon["depends_on"]["postgres"]["condition"] == "service_healthy"
    env = {k: str(v) for k, v in daemon["environment"].items()}
    assert {"GPUOPT_DATABASE_URL", "GPUOPT_SMTP_HOST", "GPUOPT_SMTP_PORT"} <= set(env)
    settings = load_config(env=env)  # the container's configuration is valid
    assert settings.database.url is not None and "@postgres:5432/" in settings.database.url
    assert settings.smtp.host == "mailpit" and settings.smtp.port == 1025
    assert settings.report.recipients
    pg_env = services["postgres"]["environment"]
    assert f"{pg_env['POSTGRES_USER']}:{pg_env['POSTGRES_PASSWORD']}@" in env[
        "GPUOPT_DATABASE_URL"]
    port = settings.daemon.metrics_address.rpartition(":")[2]
    assert any(str(p).endswith(f":{port}") for p in daemon["ports"])


def test_dockerfile_is_slim_non_root_and_runs_the_daemon() -> None:
    text = (DEPLOY / "docker" / "Dockerfile").read_text()
    froms = re.findall(r"^FROM (\S+)", text, re.M)
    assert froms and all(f == "python:3.11-slim" for f in froms)
    user = re.findall(r"^USER (\S+)", text, re.M)
    assert user and not user[-1].startswith(("root", "0"))
    assert 'ENTRYPOINT ["gpuopt", "daemon"]' in text
    assert "pip install '.[all]'" in text  # the daemon polls every cloud, runs SkyPilot
    repo = DEPLOY.parent
    for src in re.findall(r"^COPY (?!--from)(.+) \S+$", text, re.M):
        for part in src.split():
            assert (repo / part).exists(), f"COPY {part}: not in the repository"
    hadolint = shutil.which("hadolint")
    if hadolint:
        res = subprocess.run([hadolint, str(DEPLOY / "docker" / "Dockerfile")],
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stdout + res.stderr


def _unit() -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(DEPLOY / "systemd" / "gpuopt.service")
    return parser


def test_systemd_unit_runs_as_its_own_user_hardened() -> None:
    svc = _unit()["Service"]
    assert svc["User"] == "gpuopt" and svc["Restart"] == "on-failure"
    assert svc["ExecStart"].split()[1:3] == ["daemon", "run"]
    for key, value in {"NoNewPrivileges": "yes", "ProtectSystem": "strict",
                       "ProtectHome": "yes", "PrivateTmp": "yes",
                       "KillMode": "process"}.items():
        assert svc[key] == value, key
    assert "/var/lib/gpuopt" in svc["ReadWritePaths"]
    assert svc["Environment"]  # GPUOPT_HOME / GPUOPT_CONFIG
    assert "2" in svc["RestartPreventExitStatus"].split()


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze absent")
def test_systemd_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    import sys

    exe = Path(sys.executable).with_name("gpuopt")
    if not exe.exists():
        pytest.skip("no gpuopt console script beside the interpreter")
    text = (DEPLOY / "systemd" / "gpuopt.service").read_text()
    unit = tmp_path / "gpuopt.service"
    unit.write_text(text.replace("/opt/gpuopt/bin/gpuopt", str(exe)))
    res = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0 and not res.stderr.strip(), res.stderr


def test_deploy_example_config_is_the_packaged_file() -> None:
    """deploy/config.example.toml is a link to the file `gpuopt config init` writes (in a
    checkout without symlinks git leaves a one-line text file in its place)."""
    link = DEPLOY / "config.example.toml"
    if not link.is_symlink():
        pytest.skip("a checkout without symlinks: deploy/config.example.toml is not a link")
    assert link.resolve() == EXAMPLE.resolve()
