from __future__ import annotations

from typing import Any

from gpuopt.jobs.architectures import ARCHITECTURES
from gpuopt.jobs.estimate.fit import (
    HEADROOM_FRACTION,
    candidate_counts,
    fits_for_all,
    smallest_fit,
)
from gpuopt.jobs.spec import WorkloadSpec
from gpuopt.providers.hardware import GPUS


def _w(**kw: Any) -> WorkloadSpec:
    if kw.get("type") == "inference":
        kw = {"prompt_tokens": 512, "output_tokens": 256, **kw}
    return WorkloadSpec(**kw)


def test_qlora_7b_fits_one_small_gpu() -> None:
    fit = smallest_fit(ARCHITECTURES["llama-2-7b"],
                       _w(type="finetune", method="qlora", seq_len=1024,
                          gradient_checkpointing=True), GPUS["A10G"])
    assert fit is not None and fit.count == 1
    assert 0 <= fit.free_gib < GPUS["A10G"].memory_gib
    assert abs(fit.per_gpu_gib + fit.free_gib - GPUS["A10G"].memory_gib * HEADROOM_FRACTION) < 1e-9


def test_70b_inference_needs_several_gpus() -> None:
    fits = fits_for_all(ARCHITECTURES["llama-2-70b"], _w(type="inference"))
    assert fits["T4"] is None  # 8 x 15 GiB cannot hold 128 GiB of weights
    a100 = fits["A100-80GB"]
    assert a100 is not None and a100.count == 2
    assert fits["A100-40GB"] is not None and fits["A100-40GB"].count == 4


def test_ddp_without_sharding_does_not_scale_out() -> None:
    arch = ARCHITECTURES["llama-2-7b"]
    w = _w(type="finetune", seq_len=2048)
    assert candidate_counts(arch, w, 8) == (1,)
    assert smallest_fit(arch, w, GPUS["A100-40GB"]) is None  # ~130 GiB per replica
    z3 = smallest_fit(arch, _w(type="finetune", seq_len=2048, zero_stage=3,
                               gradient_checkpointing=True), GPUS["A100-40GB"])
    assert z3 is not None and z3.count in (4, 8)


def test_max_gpus_per_node_respected() -> None:
    fit = smallest_fit(ARCHITECTURES["llama-2-70b"], _w(type="inference"), GPUS["A100-40GB"],
                       max_gpus=2)
    assert fit is None


def test_tensor_parallel_needs_heads_to_split() -> None:
    falcon = ARCHITECTURES["falcon-7b"]  # 71 heads
    assert candidate_counts(falcon, _w(type="inference"), 8) == (1,)


def test_restricted_gpu_list() -> None:
    fits = fits_for_all(ARCHITECTURES["gpt2"], _w(type="inference"), ["L4"])
    assert list(fits) == ["L4"] and fits["L4"] is not None and fits["L4"].count == 1
