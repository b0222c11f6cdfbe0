"""`gpuopt plan` of a 70B full fine-tune (deploy/examples/full-70b-multinode.yaml) on the
embedded snapshot: several nodes of 8 GPUs with the fabric named; with the default
max_nodes the plan fits nowhere and names the node count that would fit."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.cli import gpuopt_command

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "deploy" / "examples" / "full-70b-multinode.yaml"


def _plan(job: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*gpuopt_command(), "plan", str(job), *args], capture_output=True,
                          text=True, timeout=120, cwd=REPO, env={**os.environ, "COLUMNS": "80"})


def test_a_70b_full_fine_tune_plans_on_several_nodes_with_the_fabric() -> None:
    res = _plan(EXAMPLE, "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["candidates"] and doc["more_nodes"] is None
    for c in doc["candidates"]:
        assert c["nodes"] >= 2 and c["count"] == 8 and c["fabric"]
        assert c["price_per_hour_all_nodes"] == pytest.approx(c["nodes"] * c["price_per_hour"])
    best = doc["candidates"][0]
    assert best["fabric"].split()[0] in ("EFA", "GPUDirect-TCPX", "GPUDirect-TCPXO",
                                         "GPUDirect-RDMA", "InfiniBand")
    shown = _plan(EXAMPLE)
    assert shown.returncode == 0, shown.stderr
    assert f"over {best['fabric']}" in shown.stdout  # the pick names the fabric
    assert "= 2 nodes of 8 H100 each; $/h of all the nodes" in shown.stdout


def test_one_node_by_default_says_how_many_would_fit(tmp_path: Path) -> None:
    job = tmp_path / "one.yaml"
    job.write_text(EXAMPLE.read_text(encoding="utf-8").replace("  max_nodes: 4\n", ""),
                   encoding="utf-8")
    res = _plan(job)
    assert res.returncode == 3, res.stdout + res.stderr
    line = next(x for x in res.stdout.splitlines() if x.startswith("More nodes:"))
    assert "would be the only fit: set resources.max_nodes:" in " ".join(
        res.stdout.split("More nodes:")[1].split())
    assert line.startswith("More nodes: ")
