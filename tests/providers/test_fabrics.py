"""The inter-node fabric table: published figures, each with its citation."""

from __future__ import annotations

from gpuopt.providers.clouds import cloud_names
from gpuopt.providers.fabrics import FABRICS, fabric_for
from gpuopt.providers.snapshot import load_snapshot


def test_every_row_is_cited_and_positive() -> None:
    for (cloud, itype), fabric in FABRICS.items():
        assert cloud in cloud_names()
        assert fabric.gbps > 0 and fabric.name
        assert fabric.source.startswith("https://"), (cloud, itype)
        assert fabric.label == f"{fabric.name} {fabric.gbps:g} Gbps"


def test_the_named_families_have_their_fabric_and_the_others_none() -> None:
    assert {fabric_for("aws", t).name for t in ("p4d.24xlarge", "p5.48xlarge",  # type: ignore[union-attr]
                                                 "p5en.48xlarge", "p6-b200.48xlarge")} == {"EFA"}
    gcp = fabric_for("gcp", "a3-highgpu-8g")
    assert gcp is not None and gcp.name.startswith("GPUDirect")
    azure = fabric_for("azure", "Standard_ND96isr_H100_v5")
    assert azure is not None and azure.name.startswith("InfiniBand")
    for cloud, itype in (("aws", "g5.48xlarge"), ("aws", "g6e.48xlarge"),
                         ("gcp", "a2-highgpu-8g"), ("lambda", "gpu_8x_h100_sxm5"),
                         ("vast", "8x-H100_SXM-32-65536"), ("runpod", "2x_A100-80GB_SECURE")):
        assert fabric_for(cloud, itype) is None


def test_fabric_instances_in_the_snapshot_are_whole_eight_gpu_nodes() -> None:
    seen = {(o.cloud, o.instance_type): o.gpu_count for o in load_snapshot().offers}
    listed = {k: n for k, n in seen.items() if k in FABRICS}
    assert len(listed) >= 8  # most rows price something gpuopt plans on
    assert set(listed.values()) == {8}
