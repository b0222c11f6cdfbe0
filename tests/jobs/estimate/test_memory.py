"""Properties of the memory model: rules of thumb come out, sharding behaves."""

from __future__ import annotations

from typing import Any

from gpuopt.jobs.architectures import ARCHITECTURES
from gpuopt.jobs.estimate.memory import estimate_memory
from gpuopt.jobs.estimate.memory.constants import ALLOCATOR_OVERHEAD
from gpuopt.jobs.estimate.memory.inference import kv_cache_bytes
from gpuopt.jobs.estimate.memory.training import zero3_gather_bytes
from gpuopt.jobs.estimate.memory.weights import weight_bytes
from gpuopt.jobs.spec import WorkloadSpec

L7 = ARCHITECTURES["llama-2-7b"]


def _w(**kw: Any) -> WorkloadSpec:
    return WorkloadSpec(**kw)


TYPICAL_INFERENCE = {"type": "inference", "prompt_tokens": 1024, "output_tokens": 512,
                     "concurrency": 4}


def test_inference_is_about_weights_times_1_5() -> None:
    # The field's "inference ~ weights x 1.2-1.5" for a typical batch of chats (4 x 1,536
    # tokens) was stated for multi-head attention models, and holds for them. A GQA model
    # keeps kv_heads / heads of their KV cache (Mistral-7B, Llama-3-8B: 8 of 32 heads), so
    # at the same batch its KV cache is ~6% of the weights instead of ~24%, and with the
    # engine's 2,048-token step (~4%), the allocator's 5% and the CUDA context (~4%) its
    # ratio comes to ~1.2 from either side (Mistral-7B: 1.199): the GQA bound is 1.15, by
    # that arithmetic, not to make a row pass.
    ratios = {}
    for name in ("llama-2-7b", "llama-2-13b", "llama-3-8b", "mistral-7b"):
        arch = ARCHITECTURES[name]
        est = estimate_memory(arch, _w(**TYPICAL_INFERENCE))
        ratios[name] = est.total_bytes / weight_bytes(arch, "bf16")
        gqa = arch.kv_heads < arch.heads
        assert (1.15 if gqa else 1.2) <= ratios[name] <= 1.6, (name, ratios[name])
    # the KV cache is what separates them: a quarter of the heads, a quarter of the cache
    l2, m7 = ARCHITECTURES["llama-2-7b"], ARCHITECTURES["mistral-7b"]
    assert kv_cache_bytes(m7, 1, 1, 2) * 4 == kv_cache_bytes(l2, 1, 1, 2)
    assert ratios["mistral-7b"] < ratios["llama-2-7b"]


def test_full_finetune_is_4_to_8x_inference() -> None:
    inf = estimate_memory(L7, _w(**TYPICAL_INFERENCE))
    full = estimate_memory(L7, _w(type="finetune", seq_len=2048, batch_size=4,
                                  gradient_checkpointing=True))
    assert 4 <= full.total_bytes / inf.total_bytes <= 8
    lora = estimate_memory(L7, _w(type="finetune", method="lora", seq_len=2048, batch_size=4))
    assert 1 < lora.total_bytes / inf.total_bytes < full.total_bytes / inf.total_bytes


def test_full_mixed_precision_states_are_18_bytes_per_param() -> None:
    est = estimate_memory(L7, _w(type="finetune", seq_len=16))
    c = est.components
    per_param = (c["weights"] + c["gradients"] + c["optimizer"]) / L7.params
    assert abs(per_param - 18) < 0.01


def test_nf4_bits() -> None:
    plain = weight_bytes(L7, "nf4", double_quant=False)
    dq = weight_bytes(L7, "nf4", double_quant=True)
    linear = L7.layers * L7.block_linear_params()
    assert abs((plain - dq) - linear * (4.5 - 4.127) / 8) / (plain - dq) < 0.001


def test_kv_cache_gqa_and_mqa() -> None:
    # 2 * layers * kv_heads * head_dim * bytes per token
    assert kv_cache_bytes(L7, 1, 1, 2) == 2 * 32 * 32 * 128 * 2
    l3 = ARCHITECTURES["llama-3-8b"]
    assert kv_cache_bytes(l3, 1, 1, 2) == 2 * 32 * 8 * 128 * 2
    falcon = ARCHITECTURES["falcon-7b"]
    assert kv_cache_bytes(falcon, 1000, 1, 2) == 2 * 32 * 1 * 64 * 2 * 1000
    assert kv_cache_bytes(falcon, 1000, 1, 2, tp=4) == kv_cache_bytes(falcon, 1000, 1, 2)


def test_flash_attention_and_checkpointing_reduce_activations() -> None:
    base = {"type": "finetune", "method": "lora", "seq_len": 4096, "batch_size": 1}
    flash = estimate_memory(L7, _w(**base)).components["activations"]
    eager = estimate_memory(L7, _w(**base, flash_attention=False)).components["activations"]
    ckpt = estimate_memory(L7, _w(**base, gradient_checkpointing=True)).components["activations"]
    assert eager > 2 * flash  # the 5*a*s^2*b term at s=4096
    assert ckpt < flash / 5


def test_zero_stages_shard_progressively_and_ddp_does_not() -> None:
    def total(**kw: Any) -> int:
        return estimate_memory(L7, _w(type="finetune", seq_len=512, **kw), 8).total_bytes

    ddp = total()
    assert ddp == estimate_memory(L7, _w(type="finetune", seq_len=512), 1).total_bytes
    z1, z2, z3 = total(zero_stage=1), total(zero_stage=2), total(zero_stage=3)
    assert ddp > z1 > z2 > z3
    # FSDP's mixed precision shards the fp32 parameters, which are the master copy: no
    # 16-bit shard beside them, as ZeRO-3 keeps (2 bytes/param over 8 GPUs, + allocator)
    assert abs(z3 - total(fsdp=True) - 2 * L7.params / 8 * (1 + ALLOCATOR_OVERHEAD)) < 1e6


def test_sharded_full_fine_tune_holds_the_largest_units_unsharded_gradient() -> None:
    # the output projection's (vocab x hidden) bf16 gradient before its reduce-scatter
    largest = L7.vocab_size * L7.hidden_size
    assert zero3_gather_bytes(L7, 2.0) - zero3_gather_bytes(L7) == 2 * largest


def test_tensor_parallel_inference_splits_weights() -> None:
    arch = ARCHITECTURES["llama-2-70b"]
    w = _w(type="inference", prompt_tokens=512, output_tokens=256)
    one, four = estimate_memory(arch, w, 1), estimate_memory(arch, w, 4)
    assert abs(four.components["weights"] * 4 - one.components["weights"]) < 4


def test_moe_stores_all_experts() -> None:
    mix = ARCHITECTURES["mixtral-8x7b"]
    est = estimate_memory(mix, _w(type="inference", prompt_tokens=16, output_tokens=16))
    assert est.components["weights"] >= mix.params * 2 * 0.999


def test_lora_on_all_linear_costs_more_than_qv() -> None:
    qv = estimate_memory(L7, _w(type="finetune", method="lora", seq_len=512))
    allin = estimate_memory(L7, _w(type="finetune", method="lora", seq_len=512,
                                   lora_targets=["all-linear"]))
    assert allin.components["adapters"] > 4 * qv.components["adapters"]


def test_plain_mlp_keeps_fewer_activations_than_gated() -> None:
    from gpuopt.jobs.loader import parse_job_spec

    def act(mlp: str) -> int:
        spec = parse_job_spec(f"model:\n  params: 7b\n  mlp: {mlp}\nworkload:\n"
                              "  type: finetune\n  method: full\n  seq_len: 2048\n", "a.yaml")
        arch = spec.resolved_model()
        assert arch.gated_mlp is (mlp == "gated") and arch.params == 7_000_000_000
        return estimate_memory(arch, spec.workload).components["activations"]

    assert act("plain") < act("gated")


def test_peft_qlora_keeps_the_unquantized_parameters_in_fp32() -> None:
    # peft prepare_model_for_kbit_training: every 16-bit non-Params4bit parameter -> fp32
    for name, extra in (("llama-2-7b", 2 * (2 * 32000 * 4096 + 65 * 4096)),
                        ("llama-3-8b", 2 * (2 * 128256 * 4096 + 65 * 4096))):
        arch = ARCHITECTURES[name]
        common = {"type": "finetune", "method": "qlora", "batch_size": 1, "seq_len": 512,
                  "gradient_checkpointing": True}
        peft = estimate_memory(arch, _w(**common, framework="hf"))
        litgpt = estimate_memory(arch, _w(**common, framework="litgpt"))
        assert peft.components["weights"] - litgpt.components["weights"] == extra


def test_peft_qlora_runs_the_block_in_fp32_where_bitsandbytes_says() -> None:
    # Unsloth runs bitsandbytes without PEFT's upcast (16-bit stream, no LoRA dropout).
    # Hand count, Llama-2-7B (h 4096, i 11008, 32 layers), 512 tokens, no checkpointing:
    # PEFT's fp32 norms make each of q, k, v and gate, up keep its own 16-bit cast of the
    # norm output (+2 copies + 1 copy of 2h bytes) and the 4-bit MLP projections return
    # fp32 (gate out, up out, silu out: 3 x (4 - 2) x i more bytes), per token and layer.
    h, i, tokens, layers = 4096, 11008, 512, 32
    common = {"type": "finetune", "method": "qlora", "batch_size": 1, "seq_len": 512}
    peft = estimate_memory(L7, _w(**common, framework="hf")).components["activations"]
    other = estimate_memory(L7, _w(**common, framework="unsloth")).components["activations"]
    per_token_layer = 3 * 2 * h + 3 * 2 * i
    assert peft - other == (layers + 1) * tokens * per_token_layer  # + the block in backward
    # with checkpointing only the block inputs stay: the fp32 residual stream, 4 bytes
    gc = {**common, "gradient_checkpointing": True}
    peft = estimate_memory(L7, _w(**gc, framework="hf")).components["activations"]
    other = estimate_memory(L7, _w(**gc, framework="unsloth")).components["activations"]
    assert peft - other == layers * tokens * h * 2 + tokens * per_token_layer
    # 16-bit LoRA is not affected
    lora = {"type": "finetune", "method": "lora", "batch_size": 1, "seq_len": 512}
    assert (estimate_memory(L7, _w(**lora, framework="hf")).components["activations"]
            == estimate_memory(L7, _w(**lora, framework="unsloth")).components["activations"])


def test_litgpt_lora_keeps_the_dropped_input_and_the_fused_qkv_output() -> None:
    # Hand count, Llama-2-7B (h 4096, MHA), rank 8 on q and v, 512 tokens, bf16:
    # litgpt's LoRAQKVLinear drops its input once for q and v (a 2-byte copy + a 1-byte
    # mask, replacing the 2-byte input the adapter would keep), and v reaches the
    # attention kernel as a view of the fused qkv output, which stays beside the roped
    # q and k (+2h + 2h bytes); zero_pad's index_copy keeps the adapter's q and v output
    # (2 x 2h bytes).
    h, tokens, layers = 4096, 512, 32
    lora = {"type": "finetune", "method": "lora", "batch_size": 1, "seq_len": 512}
    lit = estimate_memory(L7, _w(**lora, framework="litgpt")).components["activations"]
    tune = estimate_memory(L7, _w(**lora, framework="torchtune")).components["activations"]
    per_token_layer = (2 + 1 - 2) * h + 4 * h + 4 * h
    assert lit - tune == (layers + 1) * tokens * per_token_layer


def test_torchao_nf4_base_linears_keep_no_input() -> None:
    # Llama-2-7B QLoRA on q and v, 512 tokens: bitsandbytes (Unsloth) keeps the input of
    # o_proj, of gate/up and of down_proj for backward; torchtune's torchao linear_nf4
    # keeps only the 4-bit weight (q/k/v's input stays: the adapters read it)
    h, i, tokens, layers = 4096, 11008, 512, 32
    q = {"type": "finetune", "method": "qlora", "batch_size": 1, "seq_len": 512}
    bnb = estimate_memory(L7, _w(**q, framework="unsloth")).components["activations"]
    tao = estimate_memory(L7, _w(**q, framework="torchtune")).components["activations"]
    assert bnb - tao == (layers + 1) * tokens * 2 * (h + h + i)


def test_torchtitan_selective_checkpointing_is_per_op() -> None:
    # Llama-3.1-8B (h 4096, q 4096, kv 1024, i 14336), 32 layers, 1 x 1024 tokens, bf16:
    # torchtitan's op policy keeps the outputs of wq, wv, w1, w2 (every second matmul
    # recomputed), the attention output and the block input; + one block recomputed
    arch = ARCHITECTURES["llama-3.1-8b"]
    tokens = 1024
    w = {"type": "finetune", "method": "full", "batch_size": 1, "seq_len": tokens,
         "gradient_checkpointing": "selective", "fsdp": True}
    titan = estimate_memory(arch, _w(**w, framework="torchtitan"), 8).components["activations"]
    kept = 2 * (4096 + 1024 + 14336 + 4096 + 4096 + 4096) * tokens * 32
    block = estimate_memory(arch, _w(**{**w, "gradient_checkpointing": "none"},
                                     framework="torchtitan"), 8).components["activations"] / 33
    assert abs(titan - kept - block) < 64


def test_torch_compile_recomputes_the_norms_upcast_and_the_silu() -> None:
    # Llama-2-7B full fine-tune, 512 tokens, no checkpointing: compiled, each of the two
    # norms keeps its 2-byte input instead of the 4-byte upcast, and the SwiGLU's silu
    # output (2 bytes x i) is recomputed
    h, i, tokens, layers = 4096, 11008, 512, 32
    w = {"type": "finetune", "method": "full", "batch_size": 1, "seq_len": tokens}
    eager = estimate_memory(L7, _w(**w)).components["activations"]
    compiled = estimate_memory(L7, _w(**w, torch_compile=True)).components["activations"]
    assert eager - compiled == (layers + 1) * tokens * (2 * (4 - 2) * h + 2 * i)


def test_pure_bf16_frameworks_keep_qlora_adapters_in_bf16() -> None:
    # torchtune / litgpt make the adapters in the bf16 the 4-bit base computes in; PEFT
    # keeps them in fp32 (autocast_adapter_dtype)
    from gpuopt.jobs.estimate.memory.training import lora_params

    q = {"type": "finetune", "method": "qlora", "batch_size": 1, "seq_len": 512}
    n = lora_params(L7, ("q_proj", "v_proj"), 8)
    tune = estimate_memory(L7, _w(**q, framework="torchtune")).components
    peft = estimate_memory(L7, _w(**q, framework="hf")).components
    assert (tune["adapters"], tune["gradients"], tune["optimizer"]) == (2 * n, 2 * n, 4 * n)
    assert (peft["adapters"], peft["gradients"], peft["optimizer"]) == (4 * n, 4 * n, 8 * n)
