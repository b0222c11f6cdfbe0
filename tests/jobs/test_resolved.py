"""The spec stored at submit (jobs.resolved): the same JobSpec back, without any file."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from gpuopt.jobs.loader import parse_job_spec
from gpuopt.jobs.resolved import StoredSpecError, resolved_json, spec_from_json

LLAMA_8B = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
            "vocab_size": 128256}
FULL = """\
name: full
run: python train.py
setup: pip install -r req.txt
envs: {{A: 1, B: two}}
secrets: [TOKEN]
workdir: {workdir}
file_mounts:
  /data: s3://bucket/data
  /out: {{source: gs://b/out, mode: mount}}
model:
  config: m/config.json
workload:
  type: finetune
  method: lora
  lora_targets: [q_proj, k_proj]
  epochs: 1.5
  dataset_tokens: 10m
resources:
  gpus: [a100, H100]
  clouds: [AWS, gcp]
  spot: always
  max_price_per_hour: $3.50
deadline: 1h30m
budget: 120.25
owner: me@example.com
checkpoint:
  dir: s3://bucket/ckpt
  interval: 90s
max_restarts_on_errors: 2
"""


def _full(tmp_path: Path) -> tuple[str, Path]:
    (tmp_path / "m").mkdir()
    config = tmp_path / "m" / "config.json"
    config.write_text(json.dumps(LLAMA_8B))
    (tmp_path / "wd").mkdir()
    return FULL.format(workdir="wd"), config


def test_round_trip_equals_the_validated_spec(tmp_path: Path) -> None:
    text, _ = _full(tmp_path)
    spec = parse_job_spec(text, str(tmp_path / "job.yaml"))
    back = spec_from_json(resolved_json(spec))
    assert back == spec
    assert back.resolved_model() == spec.resolved_model()
    assert back.resolved_model().params == spec.resolved_model().params
    assert back.workload.total_tokens == 15_000_000
    assert back.checkpoint is not None and back.checkpoint.interval == timedelta(seconds=90)
    assert back.deadline == timedelta(hours=1, minutes=30)
    assert back.budget == Decimal("120.25")
    assert back.resources.gpus == spec.resources.gpus and back.resources.clouds == ("aws", "gcp")
    assert back.workdir == str((tmp_path / "wd").resolve())


def test_no_file_is_read_back(tmp_path: Path) -> None:
    """Deleting the config.json and the workdir after submit changes nothing."""
    text, config = _full(tmp_path)
    spec = parse_job_spec(text, str(tmp_path / "job.yaml"))
    stored = resolved_json(spec)
    config.write_text(json.dumps({**LLAMA_8B, "num_hidden_layers": 80}))  # edited...
    config.unlink()  # ...then gone
    (tmp_path / "wd").rmdir()
    back = spec_from_json(stored)
    assert back.resolved_model().layers == 32
    assert back.resolved_model().params == spec.resolved_model().params
    assert back.model.config == spec.model.config


@pytest.mark.parametrize("text", [
    "model:\n  name: gpt2\nworkload:\n  type: inference\n  prompt_tokens: 9\n"
    "  output_tokens: 3\n  requests: 100\n",
    "model:\n  params: 7b\n  layers: 32\n  mlp: plain\nworkload:\n  type: finetune\n"
    "  tokens: 1m\ndeadline: '2030-06-01T12:00:00+02:00'\n",
])
def test_unset_keys_stay_unset(text: str) -> None:
    """Rules that look at which keys were written (inference refuses `method`) read the
    stored spec as they read the file; an absolute deadline keeps its offset."""
    spec = parse_job_spec(text, "job.yaml")
    back = spec_from_json(resolved_json(spec))
    assert back == spec
    assert back.workload.model_fields_set == spec.workload.model_fields_set
    assert back.deadline_at(datetime(2026, 1, 1, tzinfo=UTC)) == spec.deadline_at(
        datetime(2026, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize("bad", ["", "[]", '{"format": 99}', '{"format": 1}',
                                 '{"format": 1, "spec": {}, "architecture": {}}'])
def test_not_a_stored_spec(bad: str) -> None:
    with pytest.raises(StoredSpecError):
        spec_from_json(bad)


def test_a_config_json_is_read_once_per_parse(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuopt.jobs.hfconfig as hf

    text, config = _full(tmp_path)
    reads: list[Path] = []
    real = hf.read_bounded

    def counting(path: Path, limit: int) -> bytes:
        reads.append(Path(path))
        return real(path, limit)

    monkeypatch.setattr(hf, "read_bounded", counting)
    parse_job_spec(text, str(tmp_path / "job.yaml"))
    assert reads == [config]


def test_a_hub_model_needs_no_hub_afterwards() -> None:
    """A `name:` read from the Hugging Face Hub at submit is stored resolved: reading it
    back reaches no Hub (the stored spec has the architecture, not the id to fetch)."""
    text = ("model:\n  name: acme/tiny-llama\nworkload:\n  type: finetune\n"
            "  tokens: 1m\n")
    spec = parse_job_spec(text, "job.yaml", hub_configs={"acme/tiny-llama": LLAMA_8B})
    back = spec_from_json(resolved_json(spec))
    assert back.resolved_model() == spec.resolved_model()
    assert back.model.name == "acme/tiny-llama"
