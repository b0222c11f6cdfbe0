"""`workload.framework_version` as a user writes it (jobs/release.py): a quoted release is
read, normalised as PEP 440 does; a number, a list, an empty or huge string, or non-ASCII
digits end as one error naming job.yaml's line and the field; a release the estimate
does not know is estimated as the current one (docs/estimates.md)."""

from __future__ import annotations

import pytest

from gpuopt.jobs.architectures import ARCHITECTURES
from gpuopt.jobs.errors import SpecError
from gpuopt.jobs.estimate.memory import estimate_memory
from gpuopt.jobs.loader import parse_job_spec
from gpuopt.jobs.spec import JobSpec

BASE = ("name: t\nrun: echo hi\nmodel:\n  name: llama-2-7b\nworkload:\n  type: finetune\n"
        "  method: qlora\n  framework: torchtune\n  tokens: 5m\n  batch_size: 2\n"
        "  seq_len: 512\n  gradient_checkpointing: full\n  loss: full\n"
        "  lora_targets: [q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj]\n")
WHERE = "job.yaml:15 workload.framework_version:"


def _spec(value: str) -> JobSpec:
    return parse_job_spec(BASE + f"  framework_version: {value}\n", "job.yaml")


def _error(value: str) -> str:
    with pytest.raises(SpecError) as info:
        _spec(value)
    assert info.value.exit_code == 2
    message = str(info.value)
    assert message.startswith(WHERE), message
    assert "Traceback" not in message and len(message) < 300
    return message


@pytest.mark.parametrize(("value", "says"), [
    ("0.1", 'write the release in quotes, e.g. "0.1"'),  # the float 0.1
    ("0.10", "0.10 becomes 0.1"),
    ("1", "write the release in quotes"),
    ("[0.1]", "must be a release number in quotes"),
    ("{major: 0}", "must be a release number in quotes"),
    ("true", "must be a release number in quotes"),
    ("''", "must not be empty"),
    ("'   '", "must not be empty"),
    ("'" + "9" * 10_000 + "'", "is not a release number"),
    ("'1234567.0'", "up to 6 digits"),
    ("'0.1.1.1'", "is not a release number"),
    ("'v0.1'", "is not a release number"),
    ("latest", "is not a release number"),
    ("'0.2.0rc1'", "is not a release number"),
    ("'١.٢'", "is not a release number"),  # Arabic-Indic digits: `\d` would take them
])
def test_a_bad_release_is_one_clean_error(value: str, says: str) -> None:
    assert says in _error(value)


@pytest.mark.parametrize(("value", "read"), [
    ("'0.1'", "0.1"), ('"0.1.1"', "0.1.1"), ("' 0.2 '", "0.2"), ("'00.01'", "0.1"),
    ("'2024.12.4'", "2024.12.4"), ("null", None),
])
def test_a_release_is_read_normalised(value: str, read: str | None) -> None:
    assert _spec(value).workload.framework_version == read


def test_an_unknown_release_is_estimated_as_the_current_one() -> None:
    arch = ARCHITECTURES["llama-2-7b"]
    current = estimate_memory(arch, parse_job_spec(BASE, "job.yaml").workload, 1)
    for unknown in ("'99.0'", "'0.0.1'"):
        est = estimate_memory(arch, _spec(unknown).workload, 1)
        assert est.total_bytes == current.total_bytes
    # "00.1" is torchtune 0.1 (PEP 440): its build's peak, as "0.1" has.
    old = estimate_memory(arch, _spec("'00.1'").workload, 1)
    assert old.components["load_peak"] > 0
    assert old.total_bytes == estimate_memory(arch, _spec("'0.1'").workload, 1).total_bytes
