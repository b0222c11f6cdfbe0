"""Property tests (issue 13): mutants of deploy/config.example.toml -- structural and
textual -- end as Settings or one clean ConfigError (exit 2), never a traceback or a
hang. Derandomized; each case time-bounded."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuopt.orchestrator.config import ConfigError, Settings, load_config
from tests.conftest import CONFIG_EXAMPLE
from tests.mutate import (
    CORE_HOSTILE,
    case_time_limit,
    fuzz,
    leaf_paths,
    mutate,
    mutate_bytes,
    replaced,
)

EXAMPLE = CONFIG_EXAMPLE


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) \
            else repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml_value(x)}"
                               for k, x in v.items() if x is not None) + "}"
    return json.dumps(str(v))  # a TOML basic string (\\uXXXX escapes included)


def _toml(doc: dict[str, Any]) -> str:
    """The document as TOML: top-level scalars, then one inline-valued table per section
    (None values are left out: TOML has no null)."""
    head = [f"{json.dumps(str(k))} = {_toml_value(v)}" for k, v in doc.items()
            if not isinstance(v, dict) and v is not None]
    body = []
    for k, v in doc.items():
        if isinstance(v, dict):
            body.append(f"[{json.dumps(str(k))}]")
            body += [f"{json.dumps(str(kk))} = {_toml_value(vv)}" for kk, vv in v.items()
                     if vv is not None]
    return "\n".join(head + body) + "\n"


def _full_text() -> str:
    """Every setting written out (the example's effective configuration): the example
    file itself leaves most settings commented out."""
    from gpuopt.orchestrator.config.render import to_toml

    return EXAMPLE.read_text() + "\n" if _has_settings() else to_toml(
        load_config(EXAMPLE, env={}))


def _has_settings() -> bool:
    return len(leaf_paths(tomllib.loads(EXAMPLE.read_text()))) > 10


def _base() -> dict[str, Any]:
    return tomllib.loads(_full_text())


def _check(tmp: Path, content: bytes) -> None:
    path = tmp / "config.toml"
    path.write_bytes(content)
    with case_time_limit(5):
        try:
            settings = load_config(path, env={})
        except ConfigError as err:
            assert err.exit_code == 2 and str(err)
            return
    assert isinstance(settings, Settings)


def test_the_example_round_trips_through_the_emitter(tmp_path: Path) -> None:
    _check(tmp_path, _toml(_base()).encode())
    assert load_config(tmp_path / "config.toml", env={}) == load_config(EXAMPLE, env={})


def test_every_key_takes_every_hostile_value(tmp_path: Path) -> None:
    doc = _base()
    paths = leaf_paths(doc)
    assert len(paths) > 10
    for path in paths:
        for bad in CORE_HOSTILE:
            _check(tmp_path, _toml(replaced(doc, path, bad)).encode())


@fuzz(300)
@given(st.data())
def test_structural_mutants_are_settings_or_a_clean_error(
        tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    doc = mutate(_base(), data)
    text = _toml(doc) if isinstance(doc, dict) else _toml_value(doc)
    _check(tmp_path_factory.mktemp("cfg"), text.encode())


@fuzz(300)
@given(st.data())
def test_textual_mutants_are_settings_or_a_clean_error(
        tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    raw = data.draw(st.sampled_from([EXAMPLE.read_bytes(), _full_text().encode()]))
    _check(tmp_path_factory.mktemp("cfg"), mutate_bytes(raw, data))


@fuzz(4)
@given(st.data())
def test_a_few_mutants_through_the_real_cli(tmp_path_factory: pytest.TempPathFactory,
                                            data: st.DataObject) -> None:
    path = tmp_path_factory.mktemp("cfg-cli") / "config.toml"
    path.write_bytes(mutate_bytes(_full_text().encode(), data))
    proc = subprocess.run(
        [sys.executable, "-m", "gpuopt.orchestrator.cli.app", "config", "show", "--config",
         str(path)], capture_output=True, text=True, timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("GPUOPT_")} | {
            "GPUOPT_HOME": str(path.parent), "COLUMNS": "100"})
    assert proc.returncode in (0, 2), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
