"""Property tests (issue 13): mutants of the example job files -- structural and
textual -- end as a valid spec or one clean SpecError (exit 2, every line `file:line ...`),
never a traceback, a hang or runaway memory. Derandomized; each case time-bounded."""

from __future__ import annotations

import io
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuopt.jobs.errors import SpecError
from gpuopt.jobs.loader import load_job_spec, parse_job_spec
from gpuopt.jobs.spec import JobSpec
from tests.mutate import (
    CORE_HOSTILE,
    case_time_limit,
    fuzz,
    leaf_paths,
    mutate,
    mutate_bytes,
    replaced,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "examples"
FILES = sorted(EXAMPLES.glob("*.yaml"))


def _plain(name: str) -> Any:
    from ruamel.yaml import YAML

    return YAML(typ="safe").load((EXAMPLES / name).read_text())


def _dump(doc: Any) -> str:
    from ruamel.yaml import YAML

    out = io.StringIO()
    YAML(typ="safe").dump(doc, out)
    return out.getvalue()


def _check(text: str, filename: str = "job.yaml") -> None:
    with case_time_limit(5):
        try:
            spec = parse_job_spec(text, filename, base_dir=EXAMPLES)
        except SpecError as err:
            assert err.exit_code == 2
            assert err.problems and all(p.startswith(filename) for p in err.problems), err
            return
    assert isinstance(spec, JobSpec)


@pytest.fixture(scope="module", autouse=True)
def _bounded_memory() -> Any:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    yield
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 512, f"the fuzz cases grew the process by {grown_mib:.0f} MiB"


@pytest.mark.parametrize("name", ["quickstart.yaml", "qlora-7b.yaml"])
def test_every_field_of_an_example_takes_every_hostile_value(name: str) -> None:
    """Exhaustive: each scalar of the example set to each of CORE_HOSTILE in turn."""
    doc = _plain(name)
    cases = 0
    for path in leaf_paths(doc):
        for bad in CORE_HOSTILE:
            _check(_dump(replaced(doc, path, bad)))
            cases += 1
    assert cases > 250


@fuzz(150)
@given(st.sampled_from([f.name for f in FILES]), st.data())
def test_structural_mutants_are_a_spec_or_a_clean_error(name: str, data: st.DataObject) -> None:
    _check(_dump(mutate(_plain(name), data)))


@fuzz(200)
@given(st.sampled_from([f.name for f in FILES]), st.data())
def test_textual_mutants_are_a_spec_or_a_clean_error(name: str, data: st.DataObject) -> None:
    raw = mutate_bytes((EXAMPLES / name).read_bytes(), data)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return  # load_job_spec's own case: test_undecodable_mutants_through_the_file
    _check(text)


@fuzz(30)
@given(st.data())
def test_undecodable_mutants_through_the_file(tmp_path_factory: pytest.TempPathFactory,
                                              data: st.DataObject) -> None:
    raw = mutate_bytes((EXAMPLES / "qlora-7b.yaml").read_bytes(), data) + b"\xff\xfe"
    path = tmp_path_factory.mktemp("fuzz") / "job.yaml"
    path.write_bytes(raw)
    with case_time_limit(5), pytest.raises(SpecError) as info:
        load_job_spec(path)
    assert info.value.exit_code == 2 and "not UTF-8" in str(info.value)


def _limits() -> None:  # pragma: no cover - in the child
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@fuzz(5)
@given(st.data())
def test_a_few_mutants_through_the_real_cli(tmp_path_factory: pytest.TempPathFactory,
                                            data: st.DataObject) -> None:
    """`gpuopt submit --dry-run` on a mutant: exit 0 (planned), 2 (bad input) or 3 (fits
    nowhere); never a traceback; within a minute and 2 GiB."""
    doc = mutate(_plain("quickstart.yaml"), data, max_steps=2)
    path = tmp_path_factory.mktemp("fuzz-cli") / "job.yaml"
    path.write_text(_dump(doc))
    proc = subprocess.run(
        [sys.executable, "-m", "gpuopt.orchestrator.cli.app", "submit", "--dry-run", str(path)],
        capture_output=True, text=True, timeout=60, preexec_fn=_limits,
        env={**os.environ, "COLUMNS": "100"}, cwd=EXAMPLES)
    assert proc.returncode in (0, 2, 3), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout

