"""The hardware table: every row cites its datasheet and is internally consistent."""

from __future__ import annotations

import pytest

from gpuopt.providers.hardware import GPUS, canonical_gpu, get_gpu

ISSUE_18_GPUS = ("H200", "B200", "A10", "H100-NVL", "A100-80GB-PCIe", "L40", "RTX4090",
                 "RTX3090", "RTXA6000", "RTX6000-Ada", "RTX4060Ti-16GB")


def test_every_row_cites_a_source() -> None:
    for g in GPUS.values():
        assert len(g.source) > 15, g.name


def test_the_new_gpus_are_in_the_table() -> None:
    assert set(ISSUE_18_GPUS) <= set(GPUS)


@pytest.mark.parametrize("gpu", list(GPUS))
def test_rates_are_dense_and_ordered(gpu: str) -> None:
    g = GPUS[gpu]
    t = g.tflops
    assert g.memory_gib > 0 and g.bandwidth_gbps > 0 and g.link_gbps > 0
    assert g.interconnect in ("nvlink", "pcie")
    assert t["fp32"] <= t.get("tf32", t["fp32"]) <= g.tflops_for("fp16")
    if "fp8" in t:  # fp8 is twice the 16-bit rate on every part that has it
        assert t["fp8"] == pytest.approx(2 * t["fp16"], rel=0.02)


def test_variants_are_told_apart() -> None:
    # Azure's A10 has ~1.8x the tensor rate AWS's A10G is credited with.
    assert GPUS["A10"].tflops_for("bf16") > 1.7 * GPUS["A10G"].tflops_for("bf16")
    assert canonical_gpu("A10") == "A10" and canonical_gpu("a10g") == "A10G"
    assert GPUS["H100-NVL"].memory_gib == pytest.approx(93.58)
    assert GPUS["H100-NVL"].interconnect == "pcie" and GPUS["H100"].interconnect == "nvlink"
    assert GPUS["A100-80GB-PCIe"].bandwidth_gbps < GPUS["A100-80GB"].bandwidth_gbps
    assert GPUS["H200"].memory_gib > 140 and GPUS["H200"].tflops_for("bf16") == 989
    assert GPUS["B200"].tflops_for("bf16") == 2250 and GPUS["B200"].memory_gib > 178
    # GeForce cards are rated with the FP32 accumulator training uses.
    assert GPUS["RTX4090"].tflops_for("bf16") == pytest.approx(165.2)
    assert get_gpu("a6000").name == "RTXA6000"
