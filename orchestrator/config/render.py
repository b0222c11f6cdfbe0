"""Rendering the configuration as TOML (secrets masked) and the commented starter file."""

from __future__ import annotations

import json
import re
from typing import Any

from orchestrator.config.model import Settings

MASK = "**********"
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE_KEY.match(k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot render {v!r} as TOML")


def _table(name: str, body: dict[str, Any], out: list[str], *, array: bool = False) -> None:
    out.append(f"[[{name}]]" if array else f"[{name}]")
    nested: list[tuple[str, Any]] = []
    for k, v in body.items():
        if v is None:
            out.append(f"# {_key(k)} is not set")
        elif isinstance(v, dict) or (v and isinstance(v, list) and isinstance(v[0], dict)):
            nested.append((k, v))
        else:
            out.append(f"{_key(k)} = {_value(v)}")
    for k, v in nested:
        out.append("")
        if isinstance(v, dict):
            _table(f"{name}.{_key(k)}", v, out)
        else:
            for item in v:
                _table(f"{name}.{_key(k)}", item, out, array=True)
                out.append("")


def to_toml(settings: Settings) -> str:
    """The settings as TOML; every secret is replaced by ``**********``."""
    data = settings.model_dump(mode="json")  # SecretStr dumps as "**********"
    smtp = data.get("smtp", {})
    if smtp.get("password") is not None:
        smtp["password"] = MASK
    out: list[str] = []
    for section, body in data.items():
        if isinstance(body, list):
            if not body:
                out.append(f"# [[{section}]]: none")
            for item in body:
                _table(section, item, out, array=True)
                out.append("")
        else:
            _table(section, body, out)
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


STARTER = """\
# gpuopt configuration. Every key is optional; the commented values are the defaults
# (or examples). Each key can be overridden by an environment variable
# GPUOPT_<SECTION>_<KEY>, e.g. GPUOPT_DATABASE_URL or GPUOPT_DAEMON_POLL_INTERVAL.
# Check the result with `gpuopt config show`.

[database]
# SQLAlchemy URL. Unset = SQLite in the data directory.
# url = "postgresql+psycopg://gpuopt@localhost:5432/gpuopt"

[clouds]
# Clouds this installation uses. Unset = poll every cloud whose SDK finds credentials
# (prices only) and run jobs locally.
# enabled = ["aws", "gcp", "azure"]

[clouds.aws]
# Regions to poll and place in; empty = the adapter's default list.
# regions = ["us-east-1", "us-west-2"]

[clouds.gcp]
# regions = ["us-central1", "europe-west4"]

[clouds.azure]
# regions = ["eastus", "westeurope"]

[executor]
# "auto" (local when [clouds] enabled is unset or empty, else skypilot), "local" or "skypilot".
# default = "auto"

# Reserved capacity you already own (used before buying more). Repeat per instance type.
# [[reserved]]
# cloud = "aws"
# region = "us-east-1"
# instance_type = "p4d.24xlarge"
# count = 1

[placement]
# After a preemption, avoid that cloud/region/instance type/market for this long.
# avoid_window = "30m"

[placement.preemption_rates]
# Expected spot interruptions per instance-hour when the cloud publishes no risk data.
# aws = 0.05
# gcp = 0.08
# azure = 0.08

[daemon]
# poll_interval = "10m"
# reconcile_interval = "20s"
# Price-history compaction: how often, from what age, to what resolution.
# compaction_interval = "1d"
# compaction_after = "90d"
# compaction_resolution = "1h"
# metrics_address = "127.0.0.1:9464"
# log_format = "text"            # or "json"
# Leadership between daemons on PostgreSQL.
# lease_ttl = "1m"
# lease_renew = "20s"

[report]
# timezone = "UTC"               # IANA name, e.g. "Europe/Paris"
# weekday = "monday"
# time = "08:00"
# from_address = "gpuopt@localhost"

[report.recipients]
# Team name = addresses that receive that team's weekly report.
# ml-research = ["ml-leads@example.com"]

[smtp]
# host = "localhost"
# port = 587
# security = "starttls"          # "starttls", "tls" or "none"
# username = "gpuopt"
# The password is never written here: set GPUOPT_SMTP_PASSWORD, or point to a file
# readable only by gpuopt:
# password_file = "/etc/gpuopt/smtp-password"
"""
