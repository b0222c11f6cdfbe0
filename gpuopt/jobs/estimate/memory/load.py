"""The load / initialisation phase's peak, where it can exceed the training step's.

torchtune's QLoRA builds the model on the GPU in bf16 and quantizes each base linear with
torchao's ``to_nf4`` as it is made; ``to_nf4`` briefly needs many times the weight it
quantizes, and PyTorch's caching allocator keeps what it reserved for that (no
``empty_cache``), so the reservation of the build can be what a run's peak reserved
shows. This replays the allocations the code makes (sources below) on the caching
allocator's rules (allocator.py) and returns the build's peak allocated and reserved.

Sources, at the commit the torchtune QLoRA tutorial cites (pytorch/torchtune 0914d5c,
pyproject `torchao==0.1`; pytorch/ao tag v0.1, torchao/dtypes/nf4tensor.py):

- recipes/lora_finetune_single_device.py `_setup_model`: the model is instantiated under
  `set_default_dtype(bf16)` and the CUDA device, then `model.load_state_dict(base)`, then
  `memory_stats_log` (which resets the peak stats: the training peak reserved starts
  from what the build left reserved).
- torchtune/modules/peft/lora.py `LoRALinear._create_weight_and_bias`: an `nn.Linear` made
  on the GPU in bf16, its weight passed to `to_nf4` (a quantized base only for the
  modules with an adapter); the bf16 weight is dropped when the method returns; then
  `lora_a` (in x r) and `lora_b` (r x out) in bf16.
- torchtune/models/llama2/_component_builders.py `lora_llama2`: one decoder layer is
  built (q, k, v, output_proj, RoPE, then the MLP w1/w2/w3, two RMSNorms), then the
  embedding, the output projection and the final norm, then `TransformerDecoder` makes
  the layers as `copy.deepcopy(layer)` x num_layers (modules/transformer.py
  `_get_clones`); the prototype layer is dropped when the builder returns.
- torch `Tensor.__deepcopy__` for a wrapper subclass (data_ptr 0) calls `clone()`, which
  torchtune/utils/_register_nf4_dispatch_ops.py implements as
  `to_nf4(get_original_weight())`, then deep-copies the instance `__dict__` (the inner
  tensors) over the clone's own.
- `load_state_dict` copies each checkpoint tensor (CPU) into the NF4 parameter through
  the same file's `inplace_copy`: `to_nf4(src.to(device))`, then the new inner tensors
  replace the old ones. The Llama-2 HF checkpoint the config names is fp16
  (`checkpoint_bytes`; ``to_nf4`` then makes a bf16 copy: `tensor.to(torch.bfloat16)`).
  Plain parameters take a host-to-device copy into their own storage (no allocation).
- torchao v0.1 `NF4Tensor.from_tensor`: `double_quantize_scalers` then
  `convert_to_norm_float_weight`, whose `quantize_tensor_nearest` computes
  `(value.unsqueeze(-1) - nf4).abs()` over all n weights at once: two n x 16 bf16
  tensors (32 bytes per weight each) live together, then `min(dim=-1)` (bf16 values +
  int64 indices). torchao 0.2 (pytorch/ao #196, "perform in chunks") quantizes
  CHUNK_SIZE = 1024**2 weights at a time into a uint8 buffer instead
  (`chunked=True`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate.memory.allocator import CachingAllocator

if TYPE_CHECKING:
    from gpuopt.jobs.spec import WorkloadSpec

NF4_BLOCK = 64  # to_nf4(block_size=64)
NF4_SCALER_BLOCK = 256  # to_nf4(scaler_block_size=256)
NF4_LEVELS = 16  # the NF4 lookup table: 16 bf16 values
CHUNK_SIZE = 1024**2  # torchao >= 0.2 quantize_tensor_nearest chunk (pytorch/ao #196)


@dataclass(frozen=True, slots=True)
class LoadPeak:
    allocated: int  # torch.cuda.max_memory_allocated over the build and load
    reserved: int  # torch.cuda.max_memory_reserved over the build and load
    resident: int  # allocated when the load ends (the model as it trains)


class _Trace:
    """Allocations of the build replayed on the caching allocator."""

    def __init__(self, chunked: bool) -> None:
        self.mem = CachingAllocator()
        self.chunked = chunked

    def a(self, nbytes: float) -> object:
        return self.mem.malloc(max(1, int(nbytes)))

    def f(self, *blocks: object) -> None:
        for b in blocks:
            self.mem.free(b)  # type: ignore[arg-type]

    def _double_quantize_scalers(self, n: int) -> tuple[object, object, object]:
        """torchao v0.1 NF4Tensor.double_quantize_scalers on n bf16 weights: returns the
        kept int8 scalers, the quantization factor (a strided view that keeps its whole
        n/64-element base) and the scalar mean."""
        nb = n // NF4_BLOCK
        t = self.a(2 * n)  # blocks.abs()
        vals, idx = self.a(2 * nb), self.a(8 * nb)  # .max(dim=1): values, indices
        self.f(t, idx)
        mean = self.a(2)  # scalers_1.mean()
        s1 = self.a(2 * nb)  # scalers_1 - mean
        self.f(vals)
        nsb = max(1, nb // NF4_SCALER_BLOCK)
        t = self.a(2 * nb)  # get_block_absmax(scalers_1, 256): abs
        v2, i2 = self.a(2 * nsb), self.a(8 * nsb)
        self.f(t, i2)
        t = self.a(2 * nb)  # 2 * scaler_absmax (the expand materialised)
        qf = self.a(2 * nb)  # 256 / (...): kept through quantization_factor[:, 0]
        self.f(t)
        q = self.a(2 * nb)  # scaler_blocks * quantization_factor
        q2 = self.a(2 * nb)  # .round()
        self.f(q)
        q3 = self.a(2 * nb)  # .clamp(-128, 127)
        self.f(q2)
        qs = self.a(nb)  # .flatten().to(torch.int8)
        self.f(q3, s1, v2)  # locals dropped on return
        return qs, qf, mean

    def _convert(self, n: int) -> object:
        """convert_to_norm_float_weight: returns the packed 4-bit codes (n/2 bytes)."""
        nb = n // NF4_BLOCK
        t = self.a(2 * n)  # get_block_absmax: abs
        sc, idx = self.a(2 * nb), self.a(8 * nb)
        self.f(t, idx)
        sb = self.a(2 * n)  # blocks / scales
        if self.chunked:
            qb = self.a(n)  # torch.empty(numel, dtype=uint8)
            for start in range(0, n, CHUNK_SIZE):
                c = min(CHUNK_SIZE, n - start)
                d = self.a(2 * NF4_LEVELS * c)  # value - nf4
                ab = self.a(2 * NF4_LEVELS * c)  # .abs()
                self.f(d)
                mv, mi = self.a(2 * c), self.a(8 * c)  # .min(dim=-1)
                self.f(mv, ab)
                u = self.a(c)  # .to(torch.uint8)
                self.f(mi, u)  # copied into quantized_blocks[start:end]
            code = 1  # uint8 codes
        else:
            d = self.a(2 * NF4_LEVELS * n)  # value - nf4: n x 16 bf16
            ab = self.a(2 * NF4_LEVELS * n)  # .abs(), while d is alive
            self.f(d)
            mv, qb = self.a(2 * n), self.a(8 * n)  # .min(dim=-1): values, int64 indices
            self.f(mv, ab)
            code = 8  # int64 codes
        sh = self.a(code * n / 2)  # quantized_blocks[::2] << 4
        o = self.a(code * n / 2)  # ... | quantized_blocks[1::2]
        self.f(sh)
        qd = self.a(n / 2)  # combined_blocks.to(torch.uint8)
        self.f(sc, sb, qb, o)  # locals dropped on return
        return qd

    def to_nf4(self, n: int) -> list[object]:
        """NF4Tensor.from_tensor on a bf16 weight of n elements already allocated:
        the inner tensors it keeps, in __dict__ order."""
        lut = self.a(2 * NF4_LEVELS)  # the nf4 table on the device
        qs, qf, mean = self._double_quantize_scalers(n)
        qd = self._convert(n)
        return [qs, qf, mean, qd, lut]

    def original_weight(self, n: int) -> object:
        """NF4Tensor.get_original_weight (torchao v0.1): a bf16 weight of n elements."""
        nb = n // NF4_BLOCK
        t = self.a(n / 2)  # quantized_data >> 4
        first = self.a(4 * n)  # .to(torch.long)
        self.f(t)
        t = self.a(n / 2)  # quantized_data & 0b1111
        second = self.a(4 * n)
        self.f(t)
        df, ds = self.a(n), self.a(n)  # nf4[first], nf4[second]: n/2 bf16 each
        t = self.a(2 * nb)  # quantized_scalers / quantization_factor
        scalers = self.a(2 * nb)  # ... + scaler_mean
        self.f(t)
        r = self.a(n)  # repeated.flatten() (an expand: copied)
        sf = self.a(n)
        self.f(r)
        r = self.a(n)
        ss = self.a(n)
        self.f(r)
        out = self.a(2 * n)  # torch.stack(...).reshape(shape)
        self.f(first, second, df, ds, scalers, sf, ss)
        return out


def _layer_linears(arch: Architecture,
                   targets: tuple[str, ...]) -> Iterator[tuple[int, int, bool]]:
    """(in, out, has adapter) of a torchtune Llama layer's linears in build order."""
    shapes = arch.linear_shapes()
    for name in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "down_proj",
                 "up_proj"):
        if name in shapes:
            i, o = shapes[name]
            yield i, o, name in targets


def torchtune_01_build(arch: Architecture, targets: tuple[str, ...], rank: int,
                       quantize_base: bool = True, chunked: bool = False,
                       checkpoint_bytes: int = 2, checkpoint_bf16: bool = False) -> LoadPeak:
    """Peak allocated / reserved of torchtune 0.1's single-device LoRA model build and
    checkpoint load (see the module's doc for each step's source); ``quantize_base``:
    QLoRA (the adapted linears' bases in NF4), else LoRA (all bf16)."""
    tr = _Trace(chunked)
    h = arch.hidden_size
    # RotaryPositionalEmbeddings' cache: max_seq_len x head_dim/2 x (cos, sin) in fp32
    rope = arch.max_position_embeddings * (arch.dim_head // 2) * 2 * 4
    linears = [(i, o, lora, lora and quantize_base)
               for i, o, lora in _layer_linears(arch, targets)]

    def adapters(i: int, o: int) -> list[object]:
        return [tr.a(2 * i * rank), tr.a(2 * rank * o)]  # lora_a, lora_b in bf16

    proto: list[object] = []  # the builder's one layer
    for i, o, lora, nf4 in linears:
        n = i * o
        w = tr.a(2 * n)  # nn.Linear weight, bf16 on the GPU (kaiming_uniform_ in place)
        if nf4:
            proto += tr.to_nf4(n)
            tr.f(w)  # the bf16 nn.Linear is dropped when _create_weight_and_bias returns
        else:
            proto.append(w)
        if lora:
            proto += adapters(i, o)
    proto += [tr.a(rope), tr.a(2 * h), tr.a(2 * h)]  # RoPE cache, two RMSNorm scales
    resident = [tr.a(2 * arch.vocab_size * h), tr.a(2 * arch.vocab_size * h),
                tr.a(2 * h)]  # tok_embeddings, output (bf16 nn.Linear), final norm
    layers: list[list[list[object]]] = []
    for _ in range(arch.layers):  # _get_clones: copy.deepcopy(layer)
        layer: list[list[object]] = []
        for i, o, lora, nf4 in linears:
            n = i * o
            if nf4:
                w = tr.original_weight(n)  # clone(): to_nf4(get_original_weight())
                clone = tr.to_nf4(n)
                tr.f(w)
                nb = n // NF4_BLOCK
                # __dict__ deep-copied: quantized_scalers, quantization_factor (its
                # whole base), scaler_mean, quantized_data, nf4
                inner = [tr.a(nb), tr.a(2 * nb), tr.a(2), tr.a(n / 2), tr.a(2 * NF4_LEVELS)]
                tr.f(*clone)  # the clone's own inner tensors, replaced
                layer.append(inner)
            else:
                resident.append(tr.a(2 * n))  # Parameter.__deepcopy__: a clone
                layer.append([])
            if lora:
                resident += adapters(i, o)
        resident += [tr.a(rope), tr.a(2 * h), tr.a(2 * h)]
        layers.append(layer)
    tr.f(*proto)  # the prototype layer, dropped when the builder returns
    for layer in layers:  # load_state_dict: NF4 weights re-quantized from the checkpoint
        for (i, o, _, nf4), inner in zip(linears, layer, strict=True):
            if not nf4:
                continue  # a host-to-device copy into the parameter's own storage
            n = i * o
            src = tr.a(checkpoint_bytes * n)  # src.to(device)
            bf = None if checkpoint_bf16 else tr.a(2 * n)  # to_nf4: .to(torch.bfloat16)
            new = tr.to_nf4(n)
            tr.f(*(b for b in (bf, src) if b is not None))
            for k, b in enumerate(new):  # inplace_copy replaces each inner tensor
                tr.f(inner[k])
                inner[k] = b
    return LoadPeak(tr.mem.peak_allocated, tr.mem.peak_reserved, tr.mem.allocated)


# torchtune releases that pin torchao 0.1 (pyproject.toml `torchao==0.1` at v0.1.0 and
# v0.1.1; v0.2.0 pins torchao 0.3.1, which quantizes in chunks).
TORCHAO_01_TORCHTUNE = ("0.1",)


def load_peak(arch: Architecture, workload: WorkloadSpec, gpus: int) -> LoadPeak | None:
    """The build's peak where it is modelled, else None.

    Modelled: torchtune 0.1.x's single-device QLoRA (see the module's doc), for dense
    Llama-style models. Not modelled, with reason:
    - torchtune >= 0.2 (torchao >= 0.3): the NF4 quantizer works CHUNK_SIZE weights at
      a time, so the build holds about one bf16 weight more than the model; its builders
      and loaders were not re-read, so no figure is claimed for them.
    - bitsandbytes 4-bit loads (PEFT/transformers, litgpt, Unsloth): each weight is
      quantized as it reaches the GPU (bitsandbytes nn/modules.py Params4bit._quantize:
      `w = self.data.contiguous().to(device)` then `functional.quantize_4bit(w, ...)`,
      one CUDA kernel writing the packed codes and absmax), so the load holds the
      quantized model plus one 16-bit weight and its codes: below the training step.
    - multi-GPU (FSDP) recipes: not the build traced here.
    """
    version = workload.framework_version
    if (workload.type != "finetune" or workload.method != "qlora"
            or workload.weight_precision != "nf4" or workload.framework != "torchtune"
            or version is None or ".".join(version.split(".")[:2]) not in TORCHAO_01_TORCHTUNE
            or gpus != 1 or workload.fsdp or workload.zero_stage
            or arch.is_moe or arch.is_mla or not arch.gated_mlp):
        return None
    from gpuopt.jobs.estimate.memory.training import lora_targets

    return _cached(arch, lora_targets(arch, workload.lora_targets), workload.lora_rank)


@lru_cache(maxsize=64)
def _cached(arch: Architecture, targets: tuple[str, ...], rank: int) -> LoadPeak:
    return torchtune_01_build(arch, targets, rank)
