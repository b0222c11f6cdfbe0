"""The machine-shape table agrees with the hardware table and GCP's sizing rules."""

from __future__ import annotations

from gpuopt.providers.gcp.catalog import SHAPES, SHAPES_BY_INSTANCE_TYPE, split_instance_type
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.integrity import GPU_COUNTS
from gpuopt.providers.offer import Market


def test_shapes_are_unique_and_known() -> None:
    assert len(SHAPES_BY_INSTANCE_TYPE) == len(SHAPES)
    for s in SHAPES:
        assert s.gpu in GPUS and s.gpu_count in GPU_COUNTS
        assert s.vcpus > 0 and s.ram_gib > 0


def test_every_gpu_and_count_where_gcp_sells_it() -> None:
    counts: dict[str, set[int]] = {}
    for s in SHAPES:
        counts.setdefault(s.gpu, set()).add(s.gpu_count)
    assert counts == {"T4": {1, 2, 4}, "V100": {1, 2, 4, 8}, "L4": {1, 2, 4, 8},
                      "A100-40GB": {1, 2, 4, 8}, "A100-80GB": {1, 2, 4, 8}, "H100": {1, 2, 4, 8}}


def test_attached_hosts_are_n1_within_limits() -> None:
    # GCP's vCPU limits per attached GPU count.
    limits = {"T4": {1: 48, 2: 48, 4: 96}, "V100": {1: 12, 2: 24, 4: 48, 8: 96}}
    for s in SHAPES:
        if s.attached:
            assert s.family == "n1" and s.machine_type.startswith("n1-standard-")
            assert s.vcpus <= limits[s.gpu][s.gpu_count]
            assert split_instance_type(s.instance_type) == (s.machine_type, s.gpu, s.gpu_count)
        else:
            assert split_instance_type(s.instance_type) == (s.machine_type, None, None)


def test_a3_below_eight_is_spot_only() -> None:
    for s in SHAPES:
        if s.machine_type.startswith("a3-highgpu"):
            assert (s.markets == {Market.SPOT}) == (s.gpu_count < 8)
        else:
            assert s.markets == set(Market)
