"""Issue 13.6: hostile job files end as one clean error naming file:line and field (exit
2), never a traceback, a hang or a value the store or the launch cannot take."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuopt.jobs.errors import SpecError
from gpuopt.jobs.loader import load_job_spec, parse_job_spec

BASE = "name: t\nrun: echo hi\nmodel:\n  name: gpt2\nworkload:\n  type: finetune\n"
INFER = "name: t\nrun: echo hi\nmodel:\n  name: gpt2\nworkload:\n  type: inference\n"
# 342 bytes standing for 9^9 (~387 million) strings once its aliases are expanded.
BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True))


def _error(text: str, base_dir: Path | None = None) -> str:
    with pytest.raises(SpecError) as info:
        parse_job_spec(text, "job.yaml", base_dir=base_dir)
    assert info.value.exit_code == 2
    return str(info.value)


@pytest.mark.parametrize(("text", "where", "says"), [
    (BASE + "  tokens: 1e999\n", "job.yaml:7 workload.tokens:", "finite"),
    (BASE + "  tokens: .inf\n", "job.yaml:7 workload.tokens:", "finite"),
    (BASE + "  tokens: .nan\n", "job.yaml:7 workload.tokens:", "finite"),
    (BASE + "  tokens: '1e999'\n", "job.yaml:7 workload.tokens:", "at most 1e+18"),
    (BASE + "  tokens: 99999999999999999999999999\n", "job.yaml:7 workload.tokens:", "at most"),
    (INFER + "  requests: 99999999999999999999999\n", "job.yaml:7 workload.requests:", "<="),
    (BASE + "  tokens: 5m\ndeadline: '9999-12-31T23:59:59-14:00'\n", "job.yaml:8 deadline:",
     "between the years"),
    (BASE + "  tokens: 5m\ndeadline: 9999-12-31T23:59:59-14:00\n", "job.yaml:8 deadline:",
     "between the years"),
    (BASE + "  tokens: 5m\ndeadline: '0001-01-01T00:00:00+14:00'\n", "job.yaml:8 deadline:",
     "between the years"),
    (BASE + "  tokens: 5m\nbudget: 9300000000000\n", "job.yaml:8 budget:", "at most"),
    (BASE + "  tokens: 5m\nbudget: 1e-9\n", "job.yaml:8 budget:", "micro-dollar"),
    (BASE + "  tokens: 5m\nresources:\n  max_price_per_hour: 1e20\n",
     "job.yaml:9 resources.max_price_per_hour:", "at most"),
    (BASE + "  tokens: 5m\nowner: \"a\\0b\"\n", "job.yaml:8 owner:", "NUL"),
    (BASE + "  tokens: 5m\nenvs:\n  A: \"x\\0y\"\n", "job.yaml:9 envs.A:", "NUL"),
    (BASE + "  tokens: 5m\n\"k\\0\": 1\n", "job.yaml:8", "NUL"),
    (BASE + "  tokens: 5m\ncheckpoint:\n  dir: \"/tmp/a\\0b\"\n", "job.yaml:9 checkpoint.dir:",
     "NUL"),
    (BASE + "  tokens: 5m\nenvs:\n  \"BAD=NAME\": x\n", "job.yaml:8 envs:", "'BAD=NAME'"),
    (BASE + "  tokens: 5m\nenvs:\n  \"\": x\n", "job.yaml:8 envs:", "'' is not"),
    (BASE + "  tokens: 5m\nenvs:\n  1X: x\n", "job.yaml:8 envs:", "'1X' is not"),
    (BASE + "  tokens: 5m\nworkdir: /nonexistent/gpuopt-dir\n", "job.yaml:8 workdir:",
     "not a directory"),
    (BASE + "  tokens: 5m\nworkdir: '" + "9" * 400 + "'\n", "job.yaml:8 workdir:", "cannot use"),
    (BASE + "  tokens: 5m\nsecrets:\n  HF_TOKEN: abc\n", "job.yaml:8 secrets:", "leave the value"),
    (BASE + "  tokens: 5m\nowner: " + "o" * 200 + "\n", "job.yaml:8 owner:", "at most 128"),
    (BOMB + BASE, "job.yaml:1:", "expands to more than"),
])
def test_hostile_value_is_one_clean_error(text: str, where: str, says: str) -> None:
    message = _error(text)
    assert message.startswith(where), message
    assert says in message
    assert "Traceback" not in message


def test_alias_bomb_is_refused_fast_and_small() -> None:
    start = time.process_time()
    _error(BOMB + BASE)
    assert time.process_time() - start < 5


@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "big"])
def test_model_config_read_is_bounded(tmp_path: Path, special: str) -> None:
    if special == "fifo":
        target = tmp_path / "config.json"
        os.mkfifo(target)  # would block a plain open() forever
    elif special == "big":
        target = tmp_path / "config.json"
        target.write_text('{"a": "' + "x" * (2 << 20) + '"}')
    else:
        target = Path(special)
    text = BASE.replace("  name: gpt2", f"  config: {target}") + "  tokens: 5m\n"
    message = _error(text)
    assert message.startswith("job.yaml:4 model.config:")
    assert "not a regular file" in message or "larger than" in message


def test_job_file_read_is_bounded(tmp_path: Path) -> None:
    for target, says in ((Path("/dev/zero"), "not a regular file"),
                         (tmp_path, "is a directory")):
        with pytest.raises(SpecError) as info:
            load_job_spec(target)
        assert says in str(info.value)
    big = tmp_path / "big.yaml"
    big.write_text(BASE + "#" * (2 << 20) + "\n")
    with pytest.raises(SpecError, match="larger than"):
        load_job_spec(big)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(BASE.encode() + b"owner: caf\xe9\n")
    with pytest.raises(SpecError, match="not UTF-8"):
        load_job_spec(latin)


def test_relative_workdir_resolves_against_the_job_file(tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    spec = parse_job_spec(BASE + "  tokens: 5m\nworkdir: code\n", "job.yaml", base_dir=tmp_path)
    assert spec.workdir == str((tmp_path / "code").resolve())


def test_secret_names_are_accepted_without_values() -> None:
    spec = parse_job_spec(BASE + "  tokens: 5m\nsecrets:\n  HF_TOKEN: null\n  WANDB_API_KEY:\n",
                          "job.yaml")
    assert dict(spec.secrets) == {"HF_TOKEN": None, "WANDB_API_KEY": None}
    both = BASE + "  tokens: 5m\nenvs:\n  HF_TOKEN: x\nsecrets:\n  HF_TOKEN:\n"
    assert "in both envs and secrets" in _error(both)


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_cli_refuses_the_bomb_with_exit_2_within_bounds(tmp_path: Path) -> None:
    job = tmp_path / "bomb.yaml"
    job.write_text(BOMB + BASE)
    proc = subprocess.run(
        [sys.executable, "-m", "gpuopt.orchestrator.cli.app", "submit", "--dry-run", str(job)],
        capture_output=True, text=True, timeout=60, preexec_fn=_limit_memory,
        env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 2, proc.stderr
    assert "expands to more than" in proc.stderr and "Traceback" not in proc.stderr
