from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuopt.jobs.errors import SpecError
from gpuopt.jobs.loader import load_job_spec, parse_job_spec
from gpuopt.jobs.spec import JobSpec
from gpuopt.jobs.units import parse_count

EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "examples"
BASE = "model:\n  name: llama-2-7b\nworkload:\n  type: finetune\n"
ERROR_LINE = re.compile(r"^job\.yaml:\d+ [\w.\-\[\]()]*: .+|^job\.yaml:\d+: .+")


def _err(text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        parse_job_spec(text, "job.yaml")
    assert info.value.exit_code == 2
    return info.value


@pytest.mark.parametrize("text,count", [("7b", 7 * 10**9), ("7B", 7 * 10**9),
                                        ("7e9", 7 * 10**9), ("6.7B", 6_700_000_000),
                                        ("1.3b", 1_300_000_000), ("125m", 125_000_000),
                                        (7e9, 7 * 10**9)])
def test_param_counts_are_counts(text: object, count: int) -> None:
    assert parse_count(text) == count


def test_params_from_yaml_never_bytes() -> None:
    spec = parse_job_spec("model:\n  params: 7B\nworkload:\n  type: inference\n"
                          "  prompt_tokens: 9\n  output_tokens: 9\n", "job.yaml")
    assert spec.resolved_model().params == 7_000_000_000


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_examples_load(path: Path) -> None:
    spec = load_job_spec(path)
    assert spec.owner and spec.team and spec.budget and spec.checkpoint
    assert spec.deadline is not None


def test_error_names_file_line_and_path() -> None:
    err = _err(BASE + "  batch_size: 0\n")
    assert str(err) == "job.yaml:5 workload.batch_size: must be >= 1"


def test_unknown_key_did_you_mean() -> None:
    err = _err(BASE + "  batch_sise: 2\n")
    assert "job.yaml:5 workload.batch_sise: unknown key (did you mean 'batch_size'?)" in str(err)


def test_storage_mounts_are_skypilots_mapping_and_errors_point_into_it() -> None:
    mounts = ("file_mounts:\n  /data: s3://plain\n  /ds:\n    source: s3://datasets/a\n"
              "    mode: copy\n")
    spec = parse_job_spec(BASE + mounts, "job.yaml")
    assert spec.file_mounts["/data"] == "s3://plain"
    ds = spec.file_mounts["/ds"]
    assert not isinstance(ds, str)
    assert ds.sky_config() == {"source": "s3://datasets/a", "mode": "COPY"}
    bad = ("file_mounts:\n  /x:\n    source: s3://b\n    mode: cpoy\n"
           "  /y:\n    persistent: true\n  /w:\n    sorce: s3://q\n")
    lines = str(_err(BASE + bad)).splitlines()
    assert lines[0] == "job.yaml:8 file_mounts./x.mode: must be one of MOUNT, COPY, MOUNT_CACHED"
    assert lines[1].startswith("job.yaml:9 file_mounts./y: a storage mount needs a `source`")
    assert lines[2] == "job.yaml:12 file_mounts./w.sorce: unknown key (did you mean 'source'?)"


def test_several_errors_one_per_line() -> None:
    err = _err(BASE + "  batch_size: x\nresources:\n  gpus: [H300]\nbudget: -1\n")
    lines = str(err).splitlines()
    assert len(lines) == 3
    assert all(ERROR_LINE.match(line) for line in lines)
    assert "H100" in lines[1]  # did you mean


def test_unreadable_yaml_names_line() -> None:
    err = _err("model:\n  name: llama-2-7b\nworkload: [unclosed\n  type: x\n")
    assert str(err).startswith("job.yaml:")
    assert "not valid YAML" in str(err)


@pytest.mark.parametrize("text", ["", "- a\n- b\n", "just a string\n", "42\n"])
def test_non_mapping_documents(text: str) -> None:
    assert str(_err(text)).startswith("job.yaml:1")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no such file"):
        load_job_spec(tmp_path / "nope.yaml")


def test_impossible_combinations() -> None:
    assert "full fine-tuning" in str(_err(BASE + "  precision: nf4\n"))
    assert "only apply to type: inference" in str(_err(BASE + "  concurrency: 4\n"))
    assert "not both" in str(_err(BASE + "  zero_stage: 3\n  fsdp: true\n"))
    assert "qlora" in str(_err(BASE + "  method: qlora\n  precision: bf16\n"))


def test_gpu_names_canonicalised_and_clouds_checked() -> None:
    spec = parse_job_spec(BASE + "resources:\n  gpus: [a100, h100-80gb]\n", "job.yaml")
    assert spec.resources.gpus == ("A100-40GB", "H100")
    assert "unknown cloud" in str(_err(BASE + "resources:\n  clouds: [oracle]\n"))


def test_deadline_budget_and_checkpoint() -> None:
    spec = parse_job_spec(BASE + "deadline: 36h\nbudget: 12.50\ncheckpoint:\n  dir: /ck\n",
                          "job.yaml")
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    assert spec.deadline_at(t0) == t0 + timedelta(hours=36)
    assert spec.budget == Decimal("12.50")
    assert spec.checkpoint is not None and spec.checkpoint.interval == timedelta(minutes=30)
    iso = parse_job_spec(BASE + "deadline: '2025-06-01T12:00:00+02:00'\n", "job.yaml")
    assert iso.deadline_at(t0) == datetime(2025, 6, 1, 10, tzinfo=UTC)
    assert "time zone" in str(_err(BASE + "deadline: '2025-06-01T12:00:00'\n"))


def test_model_config_relative_to_yaml(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps({
        "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
        "vocab_size": 32000}))
    job = tmp_path / "job.yaml"
    job.write_text("model:\n  config: m/config.json\nworkload:\n  type: finetune\n")
    assert abs(load_job_spec(job).resolved_model().params / 1e9 - 7.24) < 0.01
    job.write_text("model:\n  config: missing.json\nworkload:\n  type: finetune\n")
    with pytest.raises(SpecError, match=r"job\.yaml:2 model\.config: .*missing\.json does not"):
        load_job_spec(job)


def test_spec_is_frozen() -> None:
    spec = parse_job_spec(BASE, "job.yaml")
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen error
        spec.owner = "x"  # type: ignore[misc]
    assert isinstance(spec, JobSpec) and spec.max_restarts_on_errors == 0


# --- property tests: random and broken documents --------------------------------------

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                     st.floats(allow_nan=True), st.text(max_size=12),
                     st.sampled_from(["7b", "36h", "bf16", "A100", "full", "qlora", "-1"]))
_keys = st.one_of(st.sampled_from(["model", "workload", "resources", "name", "type",
                                   "batch_size", "params", "gpus", "deadline", "budget",
                                   "checkpoint", "dir", "precision", "method", "envs"]),
                  st.text(max_size=8))
_values = st.recursive(_scalars, lambda c: st.lists(c, max_size=3) |
                       st.dictionaries(_keys, c, max_size=4), max_leaves=12)


def _check(text: str) -> None:
    try:
        result = parse_job_spec(text, "job.yaml")
    except SpecError as err:
        assert err.exit_code == 2
        for line in str(err).splitlines():
            assert line.startswith("job.yaml:"), line
            assert re.match(r"^job\.yaml:\d+[ :]", line), line
        return
    assert isinstance(result, JobSpec)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_keys, _values, max_size=6))
def test_random_documents_give_spec_or_spec_error(doc: dict[str, object]) -> None:
    _check(json.dumps(doc, default=str, allow_nan=True))


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_random_text_gives_spec_or_spec_error(text: str) -> None:
    _check(text)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 400), st.text(max_size=6))
def test_broken_valid_document(cut: int, junk: str) -> None:
    good = (EXAMPLES / "qlora-7b.yaml").read_text()
    _check(good[:cut] + junk + good[cut:])
