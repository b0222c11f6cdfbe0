"""`model: {name: <Hub id>}` not in the table: its config.json from the Hugging Face Hub,
read with huggingface_hub from a local stand-in for the Hub (tests/hubstub.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuopt.jobs.errors import SpecError
from gpuopt.jobs.hub import HubError, fetch_hub_config, looks_like_hub_id
from gpuopt.jobs.loader import parse_job_spec
from tests.hubstub import TOKEN, StandInHub, commit_of, standin_hub

hf = pytest.importorskip("huggingface_hub")

JOB = "model:\n  name: {name}\nworkload:\n  type: inference\n  prompt_tokens: 100\n" \
      "  output_tokens: 10\n"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInHub]:
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(c, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.setattr(c, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-tokens"),
                        raising=False)
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    with standin_hub() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


def test_a_hub_id_not_in_the_table_is_read_from_the_hub(hub: StandInHub) -> None:
    spec = parse_job_spec(JOB.format(name="Qwen/Qwen3-14B"), "job.yaml")
    arch = spec.resolved_model()
    assert spec.model.name == "Qwen/Qwen3-14B" and arch.hf_id == "Qwen/Qwen3-14B"
    assert (arch.layers, arch.hidden_size, arch.heads, arch.kv_heads, arch.dim_head,
            arch.intermediate_size) == (40, 5120, 40, 8, 128, 17408)
    # Qwen3-14B's card: "Number of Parameters: 14.8B"
    assert abs(arch.params / 14.8e9 - 1) < 0.01
    methods = [(m, p) for m, p, _ in hub.requests]
    assert ("HEAD", "/Qwen/Qwen3-14B/resolve/main/config.json") in methods
    source = spec.model.hub_source()
    assert source is not None and source.revision == commit_of("Qwen/Qwen3-14B")
    assert b'"intermediate_size": 17408' in source.data


def test_a_second_read_comes_from_the_cache_when_the_hub_is_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hub: StandInHub) -> None:
    first = fetch_hub_config("Qwen/Qwen3-14B")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    again = fetch_hub_config("Qwen/Qwen3-14B")
    assert again.data == first.data and again.revision == first.revision


def test_offline_without_a_cache_names_the_id_and_the_config_alternative(
        hub: StandInHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    with pytest.raises(SpecError) as err:
        parse_job_spec(JOB.format(name="Qwen/Qwen3-14B"), "job.yaml")
    text = str(err.value)
    assert "job.yaml:2 model.name" in text
    assert "cannot reach the Hugging Face Hub to read Qwen/Qwen3-14B's config.json" in text
    assert "not cached" in text
    assert "`model: {config: path/to/config.json}`" in text


def test_a_gated_model_needs_hf_token(hub: StandInHub,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(HubError, match=r"google/gemma-2-2b is a gated model.*set HF_TOKEN"):
        fetch_hub_config("google/gemma-2-2b")
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    got = fetch_hub_config("google/gemma-2-2b")
    assert b'"head_dim": 256' in got.data
    assert (hub.requests[-1][2] or "") == f"Bearer {TOKEN}"


def test_no_such_model(hub: StandInHub) -> None:
    with pytest.raises(SpecError, match=r"acme/no-such-model: no such model on the Hugging"):
        parse_job_spec(JOB.format(name="acme/no-such-model"), "job.yaml")


def test_a_hub_model_of_an_unknown_family_is_refused_by_name(hub: StandInHub) -> None:
    with pytest.raises(SpecError) as err:
        parse_job_spec(JOB.format(name="state-spaces/mamba-2.8b-hf"), "job.yaml")
    assert "model_type 'mamba' is not one gpuopt reads" in str(err.value)


def test_a_stored_resolution_is_used_without_the_hub(monkeypatch: pytest.MonkeyPatch,
                                                     hub: StandInHub) -> None:
    first = parse_job_spec(JOB.format(name="Qwen/Qwen3-14B"), "job.yaml")
    source = first.model.hub_source()
    assert source is not None
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    seen = len(hub.requests)
    again = parse_job_spec(JOB.format(name="Qwen/Qwen3-14B"), "job.yaml",
                           hub_configs={"Qwen/Qwen3-14B": source.data})
    assert again.resolved_model() == first.resolved_model()
    assert len(hub.requests) == seen


def test_table_models_never_touch_the_hub(hub: StandInHub) -> None:
    spec = parse_job_spec(JOB.format(name="Qwen/Qwen2.5-32B-Instruct"), "job.yaml")
    assert spec.model.name == "qwen2.5-32b" and spec.model.hub_source() is None
    assert hub.requests == []


def test_what_counts_as_a_hub_id() -> None:
    assert looks_like_hub_id("Qwen/Qwen3-14B") and looks_like_hub_id("a/b.c_d-e")
    for bad in ("qwen3", "a/b/c", "/abs/path", "a/..", "a--b/c", "org/", "x y/z"):
        assert not looks_like_hub_id(bad), bad
    with pytest.raises(SpecError, match="unknown model 'qwen-9000'"):
        parse_job_spec(JOB.format(name="qwen-9000"), "job.yaml")


def test_offline_hub_fails_once_cleanly_through_the_cli(tmp_path: Path) -> None:
    """Issue 29.10: no huggingface_hub retry warnings, no "client has been closed": one
    error line naming why the Hub cannot be reached, exit 2."""
    import os
    import subprocess

    from tests.e2e.cli import gpuopt_command

    job = tmp_path / "job.yaml"
    job.write_text("name: hub\nmodel: {name: Qwen/Qwen3-14B}\n"
                   "workload: {type: finetune, method: qlora, tokens: 10m}\n")
    env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "hf"),
           "GPUOPT_HOME": str(tmp_path / "home")}
    for key in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY",
                "all_proxy", "HF_HUB_OFFLINE"):
        env.pop(key, None)
    res = subprocess.run([*gpuopt_command(), "estimate", str(job)], capture_output=True,
                         text=True, timeout=120, env=env)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"error: {job}:2 model.name: cannot reach the Hugging Face Hub")
    assert "Connection refused" in lines[0]
    assert "Retrying" not in res.stderr and "client has been closed" not in res.stderr
