from __future__ import annotations

import re
import tomllib
from datetime import timedelta
from pathlib import Path

import pytest

from gpuopt.orchestrator.config import ConfigError, ExecutorKind, Settings, load_config
from gpuopt.orchestrator.config.render import MASK, starter_text, to_toml
from gpuopt.providers.clouds import adapter_cloud_names


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "config.toml"
    p.write_text(text)
    return p


def test_missing_default_file_gives_defaults(tmp_path: Path) -> None:
    s = load_config(env={"GPUOPT_HOME": str(tmp_path)})
    assert s == Settings()
    assert s.daemon.poll_interval == timedelta(minutes=10)
    assert s.daemon.reconcile_interval == timedelta(seconds=20)
    assert s.daemon.metrics_address == "127.0.0.1:9464"
    assert (s.report.weekday, s.report.time) == ("monday", "08:00")


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml", env={})


def test_file_values_and_durations(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        """
[clouds]
enabled = ["aws", "gcp"]
[clouds.aws]
regions = ["us-east-1"]
[daemon]
poll_interval = "1h30m"
log_format = "json"
[[reserved]]
cloud = "aws"
region = "us-east-1"
instance_type = "p4d.24xlarge"
count = 2
[report]
timezone = "Europe/Paris"
weekday = "Friday"
time = "7:05"
[report.recipients]
ml = ["a@example.com"]
""",
    )
    s = load_config(f, env={})
    assert s.clouds.poll_clouds() == ("aws", "gcp")
    assert s.clouds.regions_for("aws") == ["us-east-1"]
    assert s.clouds.regions_for("gcp") is None
    assert s.daemon.poll_interval == timedelta(minutes=90)
    assert s.reserved[0].count == 2
    assert (s.report.weekday, s.report.time) == ("friday", "07:05")
    assert s.executor.resolved(s.clouds) is ExecutorKind.SKYPILOT


def test_executor_auto_is_local_without_clouds() -> None:
    s = Settings()
    assert s.executor.resolved(s.clouds) is ExecutorKind.LOCAL
    assert s.clouds.poll_clouds() == adapter_cloud_names()  # every cloud with an adapter


def test_env_overrides_file(tmp_path: Path) -> None:
    f = write(tmp_path, '[database]\nurl = "sqlite:////tmp/a.db"\n[daemon]\npoll_interval = "5m"\n')
    s = load_config(
        f,
        env={
            "GPUOPT_DATABASE_URL": "postgresql://u@db:5432/g",
            "GPUOPT_DAEMON_POLL_INTERVAL": "2m",
            "GPUOPT_CLOUDS_ENABLED": "aws, azure",
            "GPUOPT_CLOUDS_AZURE_REGIONS": "eastus,westeurope",
            "GPUOPT_REPORT_RECIPIENTS": '{"ml": ["x@example.com"]}',
            "GPUOPT_SMTP_PORT": "465",
            "GPUOPT_HOME": "/ignored",
        },
    )
    assert s.database.url == "postgresql+psycopg://u@db:5432/g"
    assert s.daemon.poll_interval == timedelta(minutes=2)
    assert s.clouds.enabled == ["aws", "azure"]
    assert s.clouds.azure.regions == ["eastus", "westeurope"]
    assert s.report.recipients == {"ml": ["x@example.com"]}
    assert s.smtp.port == 465


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ('[daemon]\npoll_intervall = "5m"\n', "[daemon] poll_intervall", "unknown key"),
        ('[daemon]\npoll_interval = "soon"\n', "[daemon] poll_interval", "not a duration"),
        ('[smtp]\nsecurity = "ssl"\n', "[smtp] security", "starttls"),
        ('[report]\ntimezone = "Mars/Base"\n', "[report] timezone", "IANA"),
        ('[clouds]\nenabled = ["aws", "oracle"]\n', "[clouds] enabled", "oracle"),
        (
            '[[reserved]]\ncloud = "aws"\nregion = "x"\ninstance_type = "y"\ncount = 0\n',
            "[[reserved]] entry 1: count",
            "greater than or equal to 1",
        ),
        ('[daemon]\nmetrics_address = "9464"\n', "[daemon] metrics_address", "HOST:PORT"),
    ],
)
def test_errors_name_file_key_and_fix(tmp_path: Path, text: str, where: str, what: str) -> None:
    f = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(f, env={})
    message = str(info.value)
    assert re.search(rf"{re.escape(str(f))}:\d+ {re.escape(where)}", message), message
    assert what in message
    assert info.value.exit_code == 2


def test_env_error_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="GPUOPT_SMTP_PORT"):
        load_config(env={"GPUOPT_HOME": str(tmp_path), "GPUOPT_SMTP_PORT": "mail"})
    with pytest.raises(ConfigError, match="GPUOPT_DAEMON_POL_INTERVAL is not a setting"):
        load_config(env={"GPUOPT_HOME": str(tmp_path), "GPUOPT_DAEMON_POL_INTERVAL": "1m"})


def test_toml_syntax_error(tmp_path: Path) -> None:
    f = write(tmp_path, "[daemon\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(f, env={})


def test_password_refused_in_file(tmp_path: Path) -> None:
    f = write(tmp_path, '[smtp]\npassword = "hunter2"\n')
    with pytest.raises(ConfigError, match="GPUOPT_SMTP_PASSWORD") as info:
        load_config(f, env={})
    assert "hunter2" not in str(info.value)


def test_password_from_env_or_file_and_masked(tmp_path: Path) -> None:
    secret_file = tmp_path / "pw"
    secret_file.write_text("from-file\n")
    f = write(tmp_path, f'[smtp]\nusername = "u"\npassword_file = "{secret_file}"\n')
    s = load_config(f, env={})
    assert s.smtp.password is not None
    assert s.smtp.password.get_secret_value() == "from-file"
    s2 = load_config(f, env={"GPUOPT_SMTP_PASSWORD": "from-env"})
    assert s2.smtp.password is not None
    assert s2.smtp.password.get_secret_value() == "from-env"
    for settings, secret in ((s, "from-file"), (s2, "from-env")):
        rendered = to_toml(settings)
        assert (
            secret not in rendered and secret not in repr(settings) and secret not in str(settings)
        )
        assert f'password = "{MASK}"' in rendered


def test_show_output_is_valid_toml_and_round_trips(tmp_path: Path) -> None:
    s = load_config(
        env={
            "GPUOPT_HOME": str(tmp_path),
            "GPUOPT_CLOUDS_ENABLED": "gcp",
            "GPUOPT_DAEMON_LEASE_TTL": "90s",
        }
    )
    parsed = tomllib.loads(to_toml(s))
    assert Settings.model_validate(parsed) == s


def test_starter_file_parses_and_every_example_key_is_valid() -> None:
    starter = starter_text()
    assert Settings.model_validate(tomllib.loads(starter)) == Settings()
    # Uncomment every "# key = value" line (and the [[reserved]] example): still valid.
    uncommented = re.sub(r"(?m)^# (\[\[reserved\]\]|[a-z_\-]+ = .*)$", r"\1", starter)
    uncommented = re.sub(r"(?m)\s+# [^\"\n]*$", "", uncommented)
    settings = Settings.model_validate(tomllib.loads(uncommented))
    assert settings.reserved and settings.smtp.password_file


def test_preemption_rates_partial_table_keeps_other_defaults(tmp_path: Path) -> None:
    f = write(tmp_path, "[placement.preemption_rates]\ngcp = 0.2\n")
    rates = load_config(f, env={}).placement.preemption_rates
    # Lambda sells no spot (providers/clouds.py: sells_spot=False), so no preemptions
    assert rates == {"aws": 0.05, "gcp": 0.2, "azure": 0.08, "lambda": 0.0,
                     "runpod": 0.3, "vast": 0.3, "nebius": 0.1, "oci": 0.08, "cudo": 0.1}
    with pytest.raises(ConfigError, match="between 0 and 1"):
        load_config(write(tmp_path, "[placement.preemption_rates]\naws = 3\n"), env={})
