"""A job's `secrets:` values: taken from the submitter's environment at submit, kept out
of the database and the logs.

SkyPilot's `secrets:` (names whose values are given at launch, e.g. ``sky launch --secret
HF_TOKEN`` reads HF_TOKEN from the caller's environment) works the same way here: the
job file names the secret, ``gpuopt submit`` reads its value from the environment it runs
in. The values go to ``<data dir>/secrets/<job id>.json`` (directory 0700, file 0600,
written atomically) -- never to the database, which keeps the names only (in the spec).
A daemon that cannot see that file (another machine, another user's data directory)
takes the value of the same *named* variable from its own environment, and nothing else
from it. The file is deleted when the job ends. Any log line stored in the database has
the values replaced by ``***``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from gpuopt.core.errors import UserError

REDACTED = "***"


def secrets_file(job_id: str) -> Path:
    from gpuopt.orchestrator.paths import data_dir

    return data_dir() / "secrets" / f"{job_id}.json"


def values_from_environment(names: Iterable[str], env: Mapping[str, str], source: str) -> dict[
        str, str]:
    """The named secrets' values from ``env``; a missing one is a UserError (exit 2)."""
    values: dict[str, str] = {}
    missing = []
    for name in names:
        value = env.get(name)
        if value is None or value == "":
            missing.append(name)
        elif "\x00" in value:
            raise UserError(f"{source}: secret {name} contains a NUL character", exit_code=2)
        else:
            values[name] = value
    if missing:
        raise UserError(
            f"{source}: secrets {', '.join(missing)} not set: export them in the environment "
            "you submit from (their values are never written to the job file or the database)",
            exit_code=2,
        )
    return values


def save_secrets(job_id: str, values: Mapping[str, str]) -> None:
    if not values:
        return
    from gpuopt.orchestrator.paths import ensure_private_dir

    path = secrets_file(job_id)
    ensure_private_dir(path.parent)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(dict(values), fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def load_secrets(job_id: str, names: Iterable[str],
                 env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The values for ``names``: the job's secrets file, else the variable of that name in
    ``env`` (the daemon's environment); names found nowhere are left out."""
    wanted = list(names)
    if not wanted:
        return {}
    try:
        saved = json.loads(secrets_file(job_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        saved = {}
    env = os.environ if env is None else env
    out: dict[str, str] = {}
    for name in wanted:
        value = saved.get(name) if isinstance(saved, dict) else None
        if not isinstance(value, str):
            value = env.get(name)
        if value:
            out[name] = value
    return out


def forget_secrets(job_id: str) -> None:
    secrets_file(job_id).unlink(missing_ok=True)


def redact(text: str | None, values: Iterable[str]) -> str | None:
    """``text`` with every secret value replaced by ***."""
    if not text:
        return text
    for value in sorted(set(values), key=len, reverse=True):
        if len(value) >= 4:  # shorter ones would blank out ordinary words
            text = text.replace(value, REDACTED)
    return text
