from __future__ import annotations

from typing import Any

from gpuopt.jobs.architectures import ARCHITECTURES
from gpuopt.jobs.estimate.engines import VLLM_GPU_MEMORY_UTILIZATION
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


def _serving(model: str, prompt: int, output: int, concurrency: int) -> WorkloadSpec:
    return WorkloadSpec(type="inference", precision="bf16", prompt_tokens=prompt,
                        output_tokens=output, concurrency=concurrency, requests=10_000)


def test_llama3_8b_long_sequences_fit_one_a100_80gb_at_the_concurrency_memory_allows() -> None:
    from gpuopt.jobs.estimate.fit import check_fit
    from gpuopt.jobs.estimate.memory import GIB, estimate_memory

    arch = ARCHITECTURES["llama-3-8b"]
    est = estimate_memory(arch, _serving("llama-3-8b", 2048, 2048, 256), 1)
    # one sequence of 4096 tokens: 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 bytes x 4096
    kv_seq = 2 * 32 * 8 * 128 * 2 * 4096
    assert est.components["kv_cache"] == 256 * kv_seq
    assert est.per_sequence_bytes == round(kv_seq * 1.05)  # + the allocator's 5%
    fit = check_fit(GPUS["A100-80GB"], 1, est)
    assert fit.fits
    usable = GPUS["A100-80GB"].memory_gib * VLLM_GPU_MEMORY_UTILIZATION * GIB
    by_hand = 1 + int((usable - est.min_bytes) // est.per_sequence_bytes)
    assert fit.concurrency == by_hand
    assert 64 < by_hand < 256  # ~100 sequences of 4096 tokens in what the weights leave
    assert fit.free_gib >= 0 and fit.free_gib * GIB < est.per_sequence_bytes


def test_qwen25_7b_serving_fits_a_24gb_gpu() -> None:
    from gpuopt.jobs.estimate.fit import check_fit
    from gpuopt.jobs.estimate.memory import estimate_memory

    est = estimate_memory(ARCHITECTURES["qwen2.5-7b"], _serving("qwen2.5-7b", 512, 256, 64), 1)
    for gpu in ("L4", "A10G"):
        fit = check_fit(GPUS[gpu], 1, est)
        assert fit.fits, (gpu, fit)
        assert fit.concurrency is not None and 1 <= fit.concurrency <= 64


def test_70b_bf16_never_fits_one_80gb_gpu() -> None:
    from gpuopt.jobs.estimate.fit import check_fit
    from gpuopt.jobs.estimate.memory import estimate_memory

    for c in (1, 64):
        est = estimate_memory(ARCHITECTURES["llama-3-70b"], _serving("x", 512, 256, c), 1)
        for gpu in ("A100-80GB", "H100"):
            assert not check_fit(GPUS[gpu], 1, est).fits


def _batch(engine: str | None = None, **kw: Any) -> WorkloadSpec:
    extra = {"engine": engine} if engine else {}
    return WorkloadSpec(type="inference", prompt_tokens=1000, output_tokens=500,
                        requests=100_000, **extra, **kw)


def test_a_batch_job_without_concurrency_runs_the_engines_default_batch() -> None:
    from gpuopt.jobs.estimate.fit import check_fit
    from gpuopt.jobs.estimate.memory import estimate_memory

    arch = ARCHITECTURES["llama-3.1-8b"]
    est = estimate_memory(arch, _batch(), 1)
    # vLLM's max_num_seqs: 256 on an A100 (arg_utils: "a100" excluded), 1024 on an H200;
    # the KV cache that fits limits both
    a100 = check_fit(GPUS["A100-80GB"], 1, est, _batch())
    h200 = check_fit(GPUS["H200"], 1, est, _batch())
    assert a100.concurrency == 256
    assert h200.concurrency is not None and 256 < h200.concurrency <= 1024
    small = check_fit(GPUS["L4"], 1, est, _batch())
    assert small.concurrency is not None and 1 < small.concurrency < 256


def test_the_engines_share_of_the_gpu_sets_the_kv_cache_that_fits() -> None:
    from gpuopt.jobs.estimate.fit import check_fit
    from gpuopt.jobs.estimate.memory import estimate_memory

    arch = ARCHITECTURES["llama-3.1-8b"]
    conc = {"concurrency": 4096}
    low = _batch(gpu_memory_utilization=0.5, **conc)
    high = _batch(gpu_memory_utilization=0.95, **conc)
    f_low = check_fit(GPUS["A100-80GB"], 1, estimate_memory(arch, low, 1), low)
    f_high = check_fit(GPUS["A100-80GB"], 1, estimate_memory(arch, high, 1), high)
    assert f_low.concurrency is not None and f_high.concurrency is not None
    assert f_high.concurrency > 2 * f_low.concurrency
    # SGLang's default share shrinks with the TP size (server_args.py)
    from gpuopt.jobs.estimate.engines import memory_share

    assert memory_share("sglang", 1, None) == 0.88 > memory_share("sglang", 8, None) == 0.81


def test_hf_generate_allocates_its_static_batch_whole() -> None:
    from gpuopt.jobs.estimate.fit import check_fit
    from gpuopt.jobs.estimate.memory import estimate_memory

    arch = ARCHITECTURES["llama-3.1-8b"]
    job = _batch("hf", batch_size=16)
    fit = check_fit(GPUS["A100-80GB"], 1, estimate_memory(arch, job, 1), job)
    assert fit.fits and fit.concurrency == 16
    huge = _batch("hf", batch_size=4096)
    assert not check_fit(GPUS["A100-80GB"], 1, estimate_memory(arch, huge, 1), huge).fits
