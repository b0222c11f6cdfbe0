"""Constants of the memory model, each with its source."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

GIB = 1024**3

# Bits per stored weight by precision.
#  nf4: 4-bit codes + one fp32 absmax per 64-weight block = 4 + 32/64 = 4.5 bits;
#  with double quantization the absmax are 8-bit with one fp32 constant per 256 of them:
#  4 + 8/64 + 32/(64*256) = 4.127 bits (Dettmers et al. 2023, QLoRA, section 3).
#  int4 (generic 4-bit): 4-bit codes + fp16 scale and fp16 zero per group of 128 =
#  4 + 32/128 = 4.25 (gptq / awq with their real packing: see quant_group_bits).
#  int8 (LLM.int8, Dettmers et al. 2022): 1 byte + one fp32 scale per output row (added
#  separately, see int8_row_scale_bytes).
#  fp8 (e4m3, vLLM / TensorRT-LLM / FBGEMM checkpoints): 1 byte; the per-tensor (or
#  per-channel) scales are negligible.
WEIGHT_BITS: Mapping[str, float] = MappingProxyType(
    {"fp32": 32.0, "bf16": 16.0, "fp16": 16.0, "fp8": 8.0, "int8": 8.0, "int4": 4.25,
     "nf4": 4.5}
)
NF4_BLOCK = 64  # bitsandbytes quantize_4bit's default blocksize
NF4_DOUBLE_QUANT_BITS = 4 + 8 / NF4_BLOCK + 32 / (NF4_BLOCK * 256)

# GGUF (llama.cpp) types: bits per weight of the whole model file (every tensor,
# embeddings and output included, each k-quant mix as llama.cpp assigns it), as
# llama.cpp's quantization table publishes them (tools/quantize/README.md, "Llama 2 7B"
# column: Q4_K_M 4.84, Q5_K_M 5.68, Q6_K 6.56). Q8_0 and IQ4_XS are single-type formats:
# block_q8_0 is 32 int8 + one fp16 scale = 34 bytes / 32 weights = 8.5 bpw
# (ggml-common.h); IQ4_XS is "4.25 bpw non-linear quantization" (llama-quantize's table
# of types, tools/quantize/quantize.cpp).
GGUF_BITS: Mapping[str, float] = MappingProxyType(
    {"q4_k_m": 4.84, "q5_k_m": 5.68, "q6_k": 6.56, "q8_0": 8.5, "iq4_xs": 4.25}
)

# GPTQ and AWQ store `bits`-bit codes packed in int32 plus, per group of `group_size`
# input weights of each output column, an fp16 scale and a `bits`-bit zero point packed
# in int32 (AutoGPTQ / transformers QuantLinear: qweight, qzeros, scales; AutoAWQ
# WQLinear_GEMM the same): bits + (16 + bits) / group_size bits per weight. GPTQ's g_idx
# (one int32 per input row, i.e. 32 / out_features bits per weight) is left out.
# group_size -1 (GPTQ's "per channel") is one group over the whole input dimension.
QUANT_SCALE_BITS = 16
DEFAULT_GROUP_SIZE = 128
DEFAULT_GPTQ_BITS = 4
AWQ_BITS = 4  # AutoAWQ's GEMM/GEMV kernels are 4-bit only (w_bit 4)


def quant_group_bits(bits: int, group_size: int, in_features: int) -> float:
    """Bits per weight of a GPTQ/AWQ linear layer (see above)."""
    group = in_features if group_size <= 0 else min(group_size, in_features)
    return bits + (QUANT_SCALE_BITS + bits) / group


INT8_ROW_SCALE_BYTES = 4  # bitsandbytes Int8Params.SCB: fp32 per output row

# Bytes of optimizer state per trainable parameter, in fp32 states (mixed precision).
#  adamw: fp32 first and second moments (8); torch.optim.AdamW / DeepSpeed.
#  adamw_8bit: 8-bit blockwise moments, 2 x 1 byte (+ fp32 absmax per 2048-block,
#  ~0.004) (Dettmers et al. 2021, 8-bit Optimizers; bitsandbytes AdamW8bit).
#  paged_adamw_8bit / paged_adamw_32bit: the same states in CUDA unified memory that the
#  driver evicts to the host under pressure (bitsandbytes paged optimizers): not counted
#  as resident (PAGED_OPTIMIZERS).
#  sgd: one fp32 momentum buffer (torch.optim.SGD with momentum > 0).
#  adafactor: factored second moment, rows + cols per matrix (Shazeer & Stern 2018),
#  computed from the shapes in training.py; no first moment (beta1=None default).
OPTIMIZER_BYTES: Mapping[str, float] = MappingProxyType(
    {"adamw": 8.0, "adamw_8bit": 2.0 + 8 / 2048, "paged_adamw_8bit": 2.0 + 8 / 2048,
     "paged_adamw_32bit": 8.0, "sgd": 4.0, "adafactor": 0.0}
)
PAGED_OPTIMIZERS = frozenset({"paged_adamw_8bit", "paged_adamw_32bit"})
# Pure bf16 training (no master copy): torch.optim keeps its states in the parameters'
# dtype, so 32-bit states are 2 bytes per element instead of 4; 8-bit stay 8-bit.
PURE_BF16_STATE_SCALE: Mapping[str, float] = MappingProxyType(
    {"adamw": 0.5, "paged_adamw_32bit": 0.5, "sgd": 0.5, "adafactor": 0.5,
     "adamw_8bit": 1.0, "paged_adamw_8bit": 1.0})
# Chunked cross-entropy: torchtune's CEWithChunkedOutputLoss (num_output_chunks = 8)
# upcasts one chunk of the logits to fp32 at a time; the 16-bit logits stay whole.
LOSS_CHUNKS = 8
# Activation offloading keeps this many blocks' activations on the GPU while the rest
# stream to the host (torchtune OffloadActivations: one in use plus one in transfer).
OFFLOADED_RESIDENT_BLOCKS = 2
# Mixed precision keeps an fp32 master copy of trainable weights (Micikevicius et al.
# 2018) and accumulates gradients in fp32: 2 (16-bit weights) + 4 (fp32 grads) + 4
# (master) + 8 (Adam) = 18 bytes/param, DeepSpeed's estimate_zero3_model_states_mem_needs.
MASTER_WEIGHT_BYTES = 4
MIXED_PRECISION_GRAD_BYTES = 4
# ZeRO-3 / FSDP all-gather the full parameters of the layer being computed (and prefetch
# the next): DeepSpeed's estimator counts 4 x largest_layer_params bytes.
ZERO3_GATHER_BYTES_PER_LARGEST_LAYER_PARAM = 4

# RMSNorm / LayerNorm implementations upcast their input to fp32 and keep it for the
# backward pass (HF LlamaRMSNorm, litgpt RMSNorm: `x = x.float()`).
NORM_SAVED_BYTES = 4
# Attention scores without flash attention: Korthikanti et al. 2022 (Reducing Activation
# Recomputation in Large Transformer Models), eq. 1: 5*a*s^2*b bytes per layer at 16-bit
# (softmax output, dropout mask and output).
NON_FLASH_SCORE_BYTES = 5
# The loss at its peak, the start of backward: the logits in the compute dtype (held by
# the model's output) and three vocab-wide fp32 tensors at once: the log-softmax output
# torch's cross_entropy saves for backward (of the `.float()` copy: HF ForCausalLMLoss,
# torchtitan's cross_entropy_loss), the dense gradient nll_loss_backward returns, and
# the gradient log_softmax_backward_data writes from those two (aten
# LossNLL.cpp / SoftMax.cpp). Held out, the HF+FA2 long-context QLoRA rows (unsloth
# README) went from -10.7..-14.7% to within 3% with the third tensor counted.
LOSS_FP32_COPIES = 3

# CUDA context + cuBLAS/cuDNN workspaces held outside the PyTorch allocator: 0.3-1.3 GB
# in nvidia-smi by GPU and driver (shared/data/memory-calibration.md; PyTorch docs
# "CUDA semantics: memory management"). Mid value.
CUDA_CONTEXT_BYTES = int(0.6 * GIB)
# PyTorch's caching allocator reserves more than it hands out (block rounding to 512 B /
# 2 MiB segments, fragmentation): reserved/allocated of ~1.05 is typical in steady
# training (PyTorch memory_stats, "CUDA semantics").
ALLOCATOR_OVERHEAD = 0.05
