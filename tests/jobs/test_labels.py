"""Labels (issue 29.11): a config.json model named for what it is, not its folder; token
counts said as token counts (and written in words); a preemption's detail not wrapped
twice ('preempted (preempted (injected))')."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuopt.jobs.errors import SpecError
from gpuopt.jobs.loader import parse_job_spec
from tests.conftest import REPO_ROOT

QWEN = REPO_ROOT / "tests" / "hub_configs" / "Qwen--Qwen3-14B.json"


def _job(model: str, tokens: str = "120m") -> str:
    return (f"name: t\nmodel: {model}\n"
            f"workload: {{type: finetune, method: qlora, tokens: {tokens}}}\n")


def test_config_model_is_named_by_type_and_size_not_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "qwen3-14b-cfg"
    folder.mkdir()
    (folder / "config.json").write_bytes(QWEN.read_bytes())
    spec = parse_job_spec(_job("{config: ./qwen3-14b-cfg/config.json}"), str(tmp_path / "j.yaml"),
                          base_dir=tmp_path)
    name = spec.resolved_model().name
    assert name.startswith("qwen3-14.") and name.endswith("b") and "cfg" not in name


def test_config_model_saved_from_a_hub_model_keeps_that_name(tmp_path: Path) -> None:
    cfg = json.loads(QWEN.read_text())
    cfg["_name_or_path"] = "Qwen/Qwen3-14B"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    spec = parse_job_spec(_job("{config: ./config.json}"), str(tmp_path / "j.yaml"),
                          base_dir=tmp_path)
    assert spec.resolved_model().name == "Qwen3-14B"


@pytest.mark.parametrize(("text", "count"), [("200 million", 200_000_000),
                                             ("2 billion", 2_000_000_000), ("120m", 120_000_000)])
def test_tokens_in_words(text: str, count: int) -> None:
    spec = parse_job_spec(_job("{name: gpt2}", text), "j.yaml")
    assert spec.workload.tokens == count


def test_bad_tokens_are_called_a_token_count() -> None:
    with pytest.raises(SpecError) as err:
        parse_job_spec(_job("{name: gpt2}", "lots"), "j.yaml")
    assert "is not a token count" in str(err.value)
    assert "parameter count" not in str(err.value)


def test_a_preemption_detail_is_said_once() -> None:
    from gpuopt.policies.lifecycle import _with_detail

    assert _with_detail("preempted", "preempted by the drill") == "preempted by the drill"
    assert _with_detail("preempted", "spot reclaimed") == "preempted (spot reclaimed)"
    assert _with_detail("preempted", None) == "preempted"
