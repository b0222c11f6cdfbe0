"""Memory-bound passes a training step makes outside its matmuls and optimizer update,
that depend on how the stack holds parameters and gradients. Pure.

The MFU curve (utilisation.py) is measured on stacks that keep 16-bit weights and
activations in their kernels; two stacks stream more:

- the Hugging Face Trainer's 16-bit training without DeepSpeed (torch.cuda.amp over
  fp32 parameters, ``amp_fp32_params``): every step casts each fp32 weight to 16 bits
  for the forward and its 16-bit gradient back to fp32, DistributedDataParallel copies
  the fp32 gradients into its buckets and back, and the Trainer unscales them
  (GradScaler) and takes their norm (gradient clipping). Autocast also runs softmax,
  log_softmax and pow in fp32 (PyTorch's autocast op reference, "CUDA Ops that can
  autocast to float32"), so an eager attention's score matrix, the LM head's logits and
  a Python tanh GELU's activations are widened, computed in fp32 and narrowed again,
  forward and backward. (The Llama-family eager attention the NO_FLASH_FACTOR of
  utilisation.py was measured on upcasts its softmax in every precision, so that factor
  holds it; the scope here is full fine-tuning over fp32 parameters, where the whole
  step runs under autocast.)
- DeepSpeed ZeRO-1/2 copy each gradient into the contiguous reduce bucket and divide the
  bucket by the data-parallel size before reducing it.

Each pass streams its bytes once at optimizer_step.STREAM_EFFICIENCY of the GPU's
bandwidth, in series with compute (same stream, after the last gradient or between a
step's kernels).
"""

from __future__ import annotations

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate.optimizer_step import STREAM_EFFICIENCY
from gpuopt.jobs.spec import WorkloadSpec
from gpuopt.providers.hardware import GpuSpec

# Bytes per trainable parameter a Hugging Face Trainer AMP step streams besides the
# optimizer (transformers 4.12 trainer.py: the use_amp path, autocast() around
# compute_loss, scaler.scale(loss).backward(), scaler.unscale_ then
# torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm) with max_grad_norm 1.0
# by default; the Trainer of today does the same through accelerate):
# - autocast casts each fp32 weight to 16 bits once a forward (its cast cache): read 4 +
#   write 2
# - the cast's backward widens the 16-bit weight gradient to fp32: read 2 + write 4
# - GradScaler.unscale_ (_amp_foreach_non_finite_check_and_unscale_): read 4 + write 4
# - clip_grad_norm_ takes one norm per gradient tensor: read 4 (the rescale that follows
#   only when the norm exceeds the bound is not counted)
# Not counted: before torch 2.0 model.zero_grad() zero-filled every .grad and
# AccumulateGrad added into it in place (16 more bytes); since, grads are set to None.
AMP_PARAM_PASS_BYTES = 6 + 6 + 8 + 4
# ...and on several GPUs DistributedDataParallel (gradient_as_bucket_view=False, its
# default, which transformers 4.12's Trainer keeps) copies each gradient into its bucket,
# dividing by the world size on the way (read 4 + write 4), and the reduced bucket back
# into .grad (read 4 + write 4): torch/csrc/distributed/c10d/reducer.cpp,
# mark_variable_ready_dense and copy_bucket_to_grad.
DDP_BUCKET_COPY_BYTES = 16
# Extra bytes per element autocast's fp32 softmax costs over a 16-bit one: forward, the
# scores widen to fp32 (GPT-2's additive attention mask is in the parameters' fp32, so the
# add writes fp32: +2), softmax reads and writes fp32 (+4), and .type(value.dtype)
# narrows them again (read 4 + write 2); backward, the narrowing's gradient widens (read 2
# + write 4), softmax's backward runs in fp32 (+6) and the gradient narrows to the 16-bit
# scores (read 4 + write 2). transformers 4.12 models/gpt2/modeling_gpt2.py, GPT2Attention
# ._attn: nn.Softmax(dim=-1)(attn_weights), then attn_weights.type(value.dtype).
AUTOCAST_SOFTMAX_EXTRA_BYTES = 2 + 4 + 6 + 6 + 6 + 6
# ...and the LM head's cross entropy (log_softmax + nll_loss in fp32 under autocast) over
# the 16-bit logits: forward, widen (read 2 + write 4) and log_softmax in fp32 (+4);
# backward, its fp32 backward (+6) and the narrowing to the logits (read 4 + write 2).
AUTOCAST_LOG_SOFTMAX_EXTRA_BYTES = 6 + 4 + 6 + 6
# ...and the MLP activation of models whose Transformers code writes the tanh GELU as
# Python ops (GPT-2's activation_function "gelu_new": 0.5 * x * (1.0 + torch.tanh(
# math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0)))), transformers
# activations.py, 4.12 and since): pow is on autocast's fp32 list, so every op after it
# runs on fp32 over the MLP's intermediate width. Forward, per intermediate element:
# the cast into pow (read 2 + write 4) and pow itself (+4 over 16-bit), five element-wise
# ops on fp32 instead of 16-bit (+4 each), and the cast to 16 bits before the down
# projection (read 4 + write 2): 40. Backward each op reads its incoming gradient and a
# saved operand and writes a gradient, all fp32 now: twice the forward's extra.
TANH_GELU_EXTRA_BYTES = 3 * (6 + 4 + 5 * 4 + 6)
TANH_GELU_FAMILIES = frozenset({"gpt2"})
# DeepSpeed ZeRO-1/2 with contiguous_gradients (default True): each gradient is copied
# into the ipg bucket (read 2 + write 2) and the bucket divided by the data-parallel size
# before its reduce (read 2 + write 2). microsoft/DeepSpeed deepspeed/runtime/zero/
# stage2.py at v0.5.8 (reduce_independent_p_g_buckets_and_remove_grads: new_grad_tensor
# .copy_(param.grad.view(-1)); average_tensor: tensor.div_(world_size)); stage_1_and_2.py
# keeps both.
ZERO12_PARAM_PASS_BYTES = 4 + 4
ZERO12_STAGES = frozenset({1, 2})


def amp_fp32_params(workload: WorkloadSpec) -> bool:
    """The Hugging Face Trainer's 16-bit training without DeepSpeed or FSDP: fp32
    parameters (and gradients) under torch.cuda.amp autocast."""
    return (workload.framework == "hf" and workload.method == "full"
            and workload.keeps_master_weights and not workload.zero_stage
            and not workload.fsdp and workload.stored_precision in ("fp16", "bf16"))


def param_pass_bytes(workload: WorkloadSpec, gpus: int) -> float:
    """Bytes per trainable parameter one step streams on each GPU (module docstring)."""
    if amp_fp32_params(workload):
        return AMP_PARAM_PASS_BYTES + (DDP_BUCKET_COPY_BYTES if gpus > 1 else 0)
    if (workload.framework == "deepspeed" and workload.zero_stage in ZERO12_STAGES
            and workload.method == "full"):
        return ZERO12_PARAM_PASS_BYTES
    return 0.0


def autocast_fp32_bytes(arch: Architecture, workload: WorkloadSpec) -> float:
    """Extra bytes autocast's fp32 ops stream in one GPU's step: the eager attention's
    scores (heads x sequence^2 a layer and sequence: the eager path computes the full
    square and masks it; flash attention keeps none), the logits, and a Python tanh
    GELU's intermediate activations (TANH_GELU_FAMILIES)."""
    if not amp_fp32_params(workload):
        return 0.0
    seqs = workload.batch_size
    seq = workload.sequence_length
    scores = 0.0 if workload.flash_attention else arch.layers * arch.heads * seq * seq
    logits = seq * arch.vocab_size
    gelu = (arch.layers * seq * arch.intermediate_size
            if arch.family in TANH_GELU_FAMILIES else 0.0)
    return seqs * (scores * AUTOCAST_SOFTMAX_EXTRA_BYTES
                   + logits * AUTOCAST_LOG_SOFTMAX_EXTRA_BYTES
                   + gelu * TANH_GELU_EXTRA_BYTES)


def pass_seconds(arch: Architecture, workload: WorkloadSpec, gpu: GpuSpec, gpus: int,
                 trainable: int) -> float:
    """The time one optimizer step's passes take on each GPU: the parameter and gradient
    passes once, autocast's widened activations once per micro-batch."""
    total = (param_pass_bytes(workload, gpus) * trainable
             + autocast_fp32_bytes(arch, workload) * workload.gradient_accumulation)
    return total / (gpu.bandwidth_gbps * 1e9 * STREAM_EFFICIENCY)
