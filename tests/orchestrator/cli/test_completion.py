"""Shell completion of option values (issue 29.12): GPU names, clouds, regions, markets
and job ids, through the installed script as bash asks for them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.cli import gpuopt_command


def _complete(words: str, env: dict[str, str] | None = None) -> list[str]:
    parts = words.split(" ")
    full = {**os.environ, **(env or {}), "_GPUOPT_COMPLETE": "complete_bash",
            "COMP_WORDS": words, "COMP_CWORD": str(len(parts) - 1)}
    res = subprocess.run(gpuopt_command(), env=full, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout.split()


def test_gpu_names_clouds_markets_regions() -> None:
    assert _complete("gpuopt prices --gpu H1") == ["H100", "H100-NVL", "H100-PCIe"]
    assert _complete("gpuopt estimate job.yaml --gpu L4:") == ["L4:1", "L4:2", "L4:4", "L4:8"]
    assert _complete("gpuopt prices --cloud a") == ["aws", "azure"]
    assert _complete("gpuopt prices refresh --cloud g") == ["gcp"]
    assert _complete("gpuopt prices --market s") == ["spot"]
    regions = _complete("gpuopt prices history --region us-")
    assert "us-east-1" in regions and "us-central1" in regions


def test_job_ids_from_the_store(tmp_path: Path) -> None:
    from gpuopt.orchestrator.store import open_store
    from tests.orchestrator.reconcile.conftest import submit, write_job

    url = f"sqlite:///{tmp_path / 'gpuopt.db'}"
    store = open_store(url)
    try:
        ids = [submit(store, write_job(tmp_path, name, "true")) for name in ("alpha", "beta")]
    finally:
        store.close()
    env = {"GPUOPT_HOME": str(tmp_path / "home"), "GPUOPT_DATABASE_URL": url}
    assert _complete("gpuopt status al", env) == [ids[0]]
    assert sorted(_complete("gpuopt logs ", env)) == sorted(ids)
    assert _complete("gpuopt cancel b", env) == [ids[1]]


@pytest.mark.parametrize("words", ["gpuopt status x", "gpuopt prices --region zz"])
def test_nothing_to_complete_is_not_an_error(words: str, tmp_path: Path) -> None:
    assert _complete(words, {"GPUOPT_HOME": str(tmp_path)}) == []
