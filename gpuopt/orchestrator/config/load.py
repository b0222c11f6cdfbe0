"""Loading the configuration: TOML file, then GPUOPT_* environment overrides, then validation.

Environment mapping: ``GPUOPT_<SECTION>_<KEY>`` sets ``[section] key`` (upper-case, dots
and nesting as underscores), for example::

    GPUOPT_DATABASE_URL=postgresql+psycopg://gpuopt@db:5432/gpuopt   -> [database] url
    GPUOPT_DAEMON_POLL_INTERVAL=5m                                    -> [daemon] poll_interval
    GPUOPT_CLOUDS_ENABLED=aws,gcp                                     -> [clouds] enabled
    GPUOPT_CLOUDS_AWS_REGIONS=us-east-1,us-west-2                     -> [clouds.aws] regions
    GPUOPT_REPORT_RECIPIENTS='{"ml": ["ml-leads@example.com"]}'      -> [report] recipients
    GPUOPT_RESERVED='[{"cloud": "aws", ...}]'                         -> [[reserved]]
    GPUOPT_SMTP_PASSWORD=...                                          -> [smtp] password

Lists take a comma-separated value or JSON; tables take JSON. ``GPUOPT_HOME`` and
``GPUOPT_CONFIG`` are not settings (paths, see orchestrator.paths / the --config option).
The SMTP password is only accepted from GPUOPT_SMTP_PASSWORD or ``[smtp] password_file``,
never from the file itself.
"""

from __future__ import annotations

import json
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gpuopt.core.errors import UserError
from gpuopt.orchestrator.config.model import Settings

ENV_PREFIX = "GPUOPT_"
MAX_CONFIG_BYTES = 1 << 20  # a configuration file is a page of TOML
# GPUOPT_API_URL / GPUOPT_API_TOKEN: the remote CLI's server and token (cli/remote.py),
# not the server's [api] section.
NOT_SETTINGS = frozenset({"GPUOPT_HOME", "GPUOPT_CONFIG", "GPUOPT_API_URL",
                          "GPUOPT_API_TOKEN"})


class ConfigError(UserError):
    """gpuopt's own configuration (TOML file or GPUOPT_* variables) is invalid; the
    message names the file and key or the variable. (A job's model config.json has its
    own error, jobs.hfconfig.HfConfigError.)"""

    exit_code = 2


def load_config(
    path: Path | str | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """The effective configuration. ``path`` None = the default file (missing = defaults)."""
    return load_config_with_sources(path, env)[0]


def load_config_with_sources(
    path: Path | str | None = None, env: Mapping[str, str] | None = None
) -> tuple[Settings, Path, bool, list[str]]:
    """(settings, file path, whether the file exists, env variables that were applied)."""
    from gpuopt.orchestrator.paths import default_config_file

    explicit = path is not None
    file = Path(path).expanduser() if path is not None else default_config_file()
    env = os.environ if env is None else env
    data: dict[str, Any] = {}
    text = ""
    exists = file.is_file()
    if exists:
        data, text = _read_toml(file)
    elif explicit and file.exists():
        raise ConfigError(f"config file {file} is not a regular file")
    elif explicit:
        raise ConfigError(
            f"config file {file} does not exist: create it with `gpuopt config init "
            f"--config {file}` or drop --config to use the defaults"
        )
    smtp = data.get("smtp")
    if isinstance(smtp, dict) and "password" in smtp:
        raise ConfigError(
            f"{file}: [smtp] password must not be written in the file; set the "
            "GPUOPT_SMTP_PASSWORD environment variable or [smtp] password_file instead"
        )
    origins: dict[tuple[str, ...], str] = {}
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or name in NOT_SETTINGS:
            continue
        target = _env_target(name)
        if target is None:
            continue
        loc, annotation = target
        _set_path(data, loc, _env_value(name, env[name], annotation))
        origins[loc] = name
    _read_password_file(data, file, origins)
    where = _Where(file, origins, text)
    try:
        _refuse_control(data, (), where)
        settings = Settings.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_describe(err, where)) from None
    except RecursionError:
        raise ConfigError(f"{file}: a value nests too deeply") from None
    return settings, file, exists, sorted(origins.values())


def _read_toml(file: Path) -> tuple[dict[str, Any], str]:
    from gpuopt.jobs.bounded_read import UnreadableFile, read_bounded

    try:
        text = read_bounded(file, MAX_CONFIG_BYTES).decode("utf-8")
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{file}: invalid TOML ({err}); fix the syntax there") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{file}: not UTF-8 text (byte {err.start}); TOML files are UTF-8") \
            from None
    except RecursionError:
        raise ConfigError(f"{file}: invalid TOML (arrays or tables nest too deeply)") from None
    except UnreadableFile as err:
        raise ConfigError(f"cannot read config file {err}") from None
    except OSError as err:
        raise ConfigError(f"cannot read config file {file}: {err.strerror}") from None


# Not judged here: the SMTP password is a secret (from the environment or its own file),
# never printed and never a header; whatever characters it has are the server's business.
_NOT_TEXT = frozenset({("smtp", "password")})


def _refuse_control(node: Any, loc: tuple[str | int, ...], where: _Where) -> None:
    """No setting holds a NUL character (no database, path or SMTP server takes one), nor
    any terminal control character (core/safe_text.py): every string here is one line,
    and CR/LF in a mail header field ([report] from_address, recipients, [smtp] host,
    username) would end the header."""
    from gpuopt.core.safe_text import control_problem

    if loc in _NOT_TEXT:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            problem = control_problem(str(key))
            if problem is not None:  # said of the table: the key itself is not printable
                raise ConfigError(f"{where(loc, line_at=(*loc, str(key)))}: a key {problem}")
            _refuse_control(value, (*loc, str(key)), where)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _refuse_control(value, (*loc, i), where)
    elif isinstance(node, str) and "\x00" in node:
        raise ConfigError(f"{where(loc)}: contains a NUL character; remove it")
    elif isinstance(node, str):
        problem = control_problem(node)
        if problem is not None:
            raise ConfigError(f"{where(loc)}: {problem}")


def _read_password_file(
    data: dict[str, Any], file: Path, origins: dict[tuple[str, ...], str]
) -> None:
    smtp = data.get("smtp")
    if not isinstance(smtp, dict) or not smtp.get("password_file"):
        return
    if ("smtp", "password") in origins:  # the environment wins
        return
    secret = Path(str(smtp["password_file"])).expanduser()
    try:
        smtp["password"] = secret.read_text(encoding="utf-8").rstrip("\r\n")
    except OSError as err:
        where = origins.get(("smtp", "password_file"), f"{file} [smtp] password_file")
        raise ConfigError(f"{where}: cannot read {secret}: {err.strerror}") from None


def _unwrap(annotation: Any) -> Any:
    """Strip Optional / Annotated to the underlying type."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _unwrap(args[0])
    return annotation


def _env_target(name: str) -> tuple[tuple[str, ...], Any] | None:
    """Map GPUOPT_SECTION_KEY to a settings path; None if the section is not a setting."""
    rest = name[len(ENV_PREFIX) :].lower()
    model: type[BaseModel] = Settings
    loc: list[str] = []
    first = True
    while True:
        fields = model.model_fields
        match = rest if rest in fields else None
        if match is None:
            for f in sorted(fields, key=len, reverse=True):
                if rest.startswith(f + "_"):
                    match = f
                    break
        if match is None:
            if first:
                return None  # GPUOPT_SOMETHING_ELSE is not ours to judge
            known = ", ".join(ENV_PREFIX + "_".join([*loc, f]).upper() for f in fields)
            raise ConfigError(f"environment variable {name} is not a setting; known here: {known}")
        first = False
        loc.append(match)
        annotation = _unwrap(fields[match].annotation)
        rest = rest[len(match) + 1 :]
        if not rest:
            return tuple(loc), annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            raise ConfigError(f"environment variable {name} is not a setting")
        model = annotation


def _env_value(name: str, raw: str, annotation: Any) -> Any:
    origin = typing.get_origin(annotation) or annotation
    text = raw.strip()
    if text.startswith(("[", "{")):
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise ConfigError(f"{name}: invalid JSON ({err.msg} at column {err.colno})") from None
        except (RecursionError, ValueError) as err:  # 10^5 brackets; a 5,000-digit number
            raise ConfigError(f"{name}: unusable JSON ({type(err).__name__})") from None
    if origin is list:
        return [part.strip() for part in text.split(",") if part.strip()]
    if origin is dict or (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        raise ConfigError(f"{name}: this setting is a table; give it as JSON, e.g. '{{...}}'")
    if text == "" and name == "GPUOPT_DATABASE_URL":
        return None
    return raw


def _set_path(data: dict[str, Any], loc: tuple[str, ...], value: Any) -> None:
    node = data
    for key in loc[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[loc[-1]] = value


class _Where:
    """Where a setting was given: ``file:line [section] key``, or the environment
    variable that set it."""

    def __init__(self, file: Path, origins: Mapping[tuple[str, ...], str], text: str) -> None:
        self.file, self.origins, self.text = file, origins, text

    def __call__(self, loc: tuple[str | int, ...],
                 line_at: tuple[str | int, ...] | None = None) -> str:
        for n in range(len(loc), 0, -1):
            prefix = tuple(str(p) for p in loc[:n])
            if prefix in self.origins:
                return f"environment variable {self.origins[prefix]}"
        from gpuopt.orchestrator.config.toml_lines import line_of

        line = line_of(self.text, line_at or loc) if self.text else None
        return _where(loc, f"{self.file}:{line}" if line else str(self.file))


def _where(loc: tuple[str | int, ...], file: str) -> str:
    from gpuopt.core.safe_text import escape_text

    parts = [escape_text(p) for p in loc]
    if parts and parts[0] == "reserved" and len(parts) > 1 and parts[1].isdigit():
        key = ".".join(parts[2:]) or "(entry)"
        return f"{file} [[reserved]] entry {int(parts[1]) + 1}: {key}"
    item = ""
    if len(parts) > 2 and parts[-1].isdigit():  # an element of a list value
        item = f" (item {int(parts.pop()) + 1})"
    if len(parts) < 2:
        return f"{file} [{parts[0]}]{item}" if parts else str(file)
    return f"{file} [{'.'.join(parts[:-1])}] {parts[-1]}{item}"


def _describe(err: ValidationError, where: _Where) -> str:
    lines = []
    for e in err.errors():
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        # Union branches (e.g. list | None) add the branch type, say "list[...]", to the
        # location; no setting's name has a bracket, so drop those parts.
        loc = tuple(p for p in loc if not (isinstance(p, str) and "[" in p))
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key; remove it or check its spelling (see `gpuopt config init`)"
        elif e["type"] == "literal_error":
            msg = f"{e['input']!r} is not allowed: {msg.removeprefix('Input should be ')}"
        lines.append(f"{where(loc)}: {msg}")
    head = "invalid configuration (fix these, then retry):"
    return "\n  ".join([head, *lines])
