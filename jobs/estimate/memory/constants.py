"""Constants of the memory model, each with its source."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

GIB = 1024**3

# Bits per stored weight by precision.
#  nf4: 4-bit codes + one fp32 absmax per 64-weight block = 4 + 32/64 = 4.5 bits;
#  with double quantization the absmax are 8-bit with one fp32 constant per 256 of them:
#  4 + 8/64 + 32/(64*256) = 4.127 bits (Dettmers et al. 2023, QLoRA, section 3).
#  int4 (GPTQ/AWQ): 4-bit codes + fp16 scale and zero per group of 128 = 4 + 32/128 = 4.25.
#  int8 (LLM.int8, Dettmers et al. 2022): 1 byte + one fp32 scale per output row (added
#  separately, see int8_row_scale_bytes).
WEIGHT_BITS: Mapping[str, float] = MappingProxyType(
    {"fp32": 32.0, "bf16": 16.0, "fp16": 16.0, "int8": 8.0, "int4": 4.25, "nf4": 4.5}
)
NF4_DOUBLE_QUANT_BITS = 4 + 8 / 64 + 32 / (64 * 256)
INT8_ROW_SCALE_BYTES = 4  # bitsandbytes Int8Params.SCB: fp32 per output row

# Bytes of optimizer state per trainable parameter.
#  adamw: fp32 first and second moments (8); torch.optim.AdamW / DeepSpeed.
#  adamw8bit / paged_adamw8bit: 8-bit blockwise moments, 2 x 1 byte (+ fp32 absmax per
#  2048-block, ~0.004) (Dettmers et al. 2021, 8-bit Optimizers). Paged memory can be
#  evicted to the host under pressure; counted as resident to stay safe.
#  sgd: one fp32 momentum buffer (torch.optim.SGD with momentum > 0).
#  adafactor: factored second moment, rows + cols per matrix (Shazeer & Stern 2018),
#  computed from the shapes in training.py; no first moment (beta1=None default).
OPTIMIZER_BYTES: Mapping[str, float] = MappingProxyType(
    {"adamw": 8.0, "adamw8bit": 2.0 + 8 / 2048, "paged_adamw8bit": 2.0 + 8 / 2048,
     "sgd": 4.0, "adafactor": 0.0}
)
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
# The loss: logits in the compute dtype, an fp32 copy for the loss (HF
# LlamaForCausalLM: `logits = logits.float()`), and the fp32 log-softmax / its gradient
# (torch cross_entropy keeps the log-softmax output for backward).
LOSS_FP32_COPIES = 2

# CUDA context + cuBLAS/cuDNN workspaces held outside the PyTorch allocator: 0.3-1.3 GB
# in nvidia-smi by GPU and driver (shared/data/memory-calibration.md; PyTorch docs
# "CUDA semantics: memory management"). Mid value.
CUDA_CONTEXT_BYTES = int(0.6 * GIB)
# PyTorch's caching allocator reserves more than it hands out (block rounding to 512 B /
# 2 MiB segments, fragmentation): reserved/allocated of ~1.05 is typical in steady
# training (PyTorch memory_stats, "CUDA semantics").
ALLOCATOR_OVERHEAD = 0.05
