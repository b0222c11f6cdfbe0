"""Issue 13.6 (config): values that crashed or broke the daemon are refused with the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuopt.orchestrator.config import ConfigError, load_config


@pytest.mark.parametrize(("text", "where", "what"), [
    ("[daemon]\npoll_interval = 1e20\n", "[daemon] poll_interval", "at most 36600d"),
    ("[daemon]\npoll_interval = nan\n", "[daemon] poll_interval", "at most 36600d"),
    ("[daemon]\npoll_interval = inf\n", "[daemon] poll_interval", "at most 36600d"),
    ('[daemon]\npoll_interval = "99999999999999999999d"\n', "[daemon] poll_interval",
     "at most 36600d"),
    ("[daemon]\npoll_interval = true\n", "[daemon] poll_interval", "expected a duration"),
    ('[daemon]\nlease_renew = "0s"\n', "[daemon] lease_renew", "at least 100ms"),
    ('[daemon]\nreconcile_interval = "1ms"\n', "[daemon] reconcile_interval", "at least 100ms"),
    ("[daemon]\ncompaction_resolution = 0\n", "[daemon] compaction_resolution", "at least 1s"),
    ('[daemon]\ncompaction_after = "-5d"\n', "[daemon] compaction_after", "not a duration"),
    ("[daemon]\ncompaction_after = -5\n", "[daemon] compaction_after", "at least 0s"),
    ("[smtp]\nport = true\n", "[smtp] port", "not true/false"),
    ("[placement.preemption_rates]\naws = true\n", "[placement.preemption_rates] aws",
     "not true/false"),
    ('[report.team_budgets]\nnlp = 1e20\n', "[report] team_budgets", "at most"),
    ('[database]\nurl = "sqlite:////tmp/a\\u0000b"\n', "[database] url", "NUL"),
    ('[report]\ntimezone = "' + "9" * 400 + '"\n', "[report] timezone", "unknown time zone"),
    ('[[reserved]]\ncloud = "aws"\nregion = "x"\ninstance_type = "y"\ncount = true\n',
     "[[reserved]] entry 1: count", "not true/false"),
])
def test_nonsense_values_are_refused_naming_the_key(tmp_path: Path, text: str, where: str,
                                                   what: str) -> None:
    f = tmp_path / "config.toml"
    f.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(f, env={})
    assert re.search(rf"{re.escape(str(f))}:\d+ {re.escape(where)}", str(info.value)), \
        str(info.value)
    assert what in str(info.value)
    assert info.value.exit_code == 2


@pytest.mark.parametrize(("content", "what"), [
    (b"[daemon]\nx = " + b"[" * 100_000 + b"]" * 100_000 + b"\n", "nest too deeply"),
    (b'[smtp]\nhost = "caf\xe9"\n', "not UTF-8"),
    (b"#" * (2 << 20), "larger than"),
])
def test_unreadable_files_are_clean_errors(tmp_path: Path, content: bytes, what: str) -> None:
    f = tmp_path / "config.toml"
    f.write_bytes(content)
    with pytest.raises(ConfigError, match=what) as info:
        load_config(f, env={})
    assert info.value.exit_code == 2


def test_special_files_and_deep_env_json(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config(Path("/dev/zero"), env={})
    with pytest.raises(ConfigError, match="GPUOPT_RESERVED: unusable JSON"):
        load_config(env={"GPUOPT_HOME": str(tmp_path), "GPUOPT_RESERVED": "[" * 100_000})


def test_sane_short_intervals_still_accepted(tmp_path: Path) -> None:
    s = load_config(env={"GPUOPT_HOME": str(tmp_path), "GPUOPT_DAEMON_LEASE_RENEW": "1s",
                         "GPUOPT_DAEMON_LEASE_TTL": "3s", "GPUOPT_DAEMON_COMPACTION_AFTER": "0s"})
    assert s.daemon.lease_renew.total_seconds() == 1


def test_config_show_masks_the_database_password(tmp_path: Path) -> None:
    from gpuopt.orchestrator.config.render import to_toml

    settings = load_config(env={"GPUOPT_HOME": str(tmp_path), "GPUOPT_DATABASE_URL":
                                "postgresql+psycopg://u:db-pw@h/d?password=db-pw2"})
    shown = to_toml(settings)
    assert "db-pw" not in shown and "postgresql+psycopg://u:***@h/d?password=***" in shown
