"""Rendering the configuration as TOML (secrets masked) and the commented starter file."""

from __future__ import annotations

import json
import re
from typing import Any

from gpuopt.orchestrator.config.model import Settings

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
    database = data.get("database", {})
    if database.get("url"):
        from gpuopt.orchestrator.store.url import shown_url

        database["url"] = shown_url(database["url"])
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


def starter_text() -> str:
    """The commented configuration file `gpuopt config init` writes.

    One file serves both: it ships inside the package (config.example.toml) and
    deploy/config.example.toml is a link to it, so the starter and the deploy example
    cannot drift apart (tests check it against the Settings model).
    """
    from importlib.resources import files

    return (files("gpuopt.orchestrator.config") / "config.example.toml").read_text(encoding="utf-8")
