"""The job spec (job.yaml) as validated, immutable pydantic models.

Keys shared with SkyPilot's task YAML (name, setup, run, envs, workdir, file_mounts)
mean the same thing there and here, so existing SkyPilot tasks can be brought over.
Read files with :func:`gpuopt.jobs.loader.load_job_spec`, which turns every validation error
into ``file:line path: what to fix``.
"""

from __future__ import annotations

import difflib
import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gpuopt.core.durations import parse_duration
from gpuopt.jobs.architectures import (
    ARCHITECTURES,
    Architecture,
    architecture_from_params,
    find_architecture,
)
from gpuopt.jobs.hub import HubConfig
from gpuopt.jobs.precision import GGUF_TYPES, GROUPED, QUANTIZED, TRAINABLE_BASES
from gpuopt.jobs.precision import compute_precision as _compute_precision
from gpuopt.jobs.release import parse_release
from gpuopt.jobs.units import parse_count
from gpuopt.providers.clouds import cloud_names, unknown_cloud_message
from gpuopt.providers.hardware import GPUS, canonical_gpu

# Weight precisions: 32/16-bit; fp8 (e4m3 checkpoints: weights, and compute on GPUs with
# fp8 tensor cores); weight-only int8/int4/nf4 (bitsandbytes), gptq (2/3/4/8 `bits`) and
# awq (4-bit), both with `group_size`; the GGUF types of llama.cpp (written as llama.cpp
# names them, Q4_K_M, or in lower case). Sources: jobs/estimate/memory/constants.py.
Precision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4", "gptq", "awq",
                    "q4_k_m", "q5_k_m", "q6_k", "q8_0", "iq4_xs"]
Optimizer = Literal["adamw", "adamw_8bit", "paged_adamw_8bit", "paged_adamw_32bit", "sgd",
                    "adafactor"]
# bitsandbytes' class names without the underscore, as earlier job files wrote them
_OPTIMIZER_ALIASES = {"adamw8bit": "adamw_8bit", "paged_adamw8bit": "paged_adamw_8bit",
                      "paged_adamw32bit": "paged_adamw_32bit"}
Checkpointing = Literal["none", "selective", "full"]
Offload = Literal["none", "optimizer", "params", "activations"]
Loss = Literal["full", "chunked", "fused"]
KvDtype = Literal["fp32", "bf16", "fp16", "fp8", "int8"]
Framework = Literal["hf", "torchtune", "litgpt", "llm-foundry", "megatron", "deepspeed",
                    "torchtitan", "nemo", "unsloth"]


def _optimizer(value: object) -> object:
    value = _lower(value)
    return _OPTIMIZER_ALIASES.get(value, value) if isinstance(value, str) else value


def _checkpointing(value: object) -> object:
    """true / false as before (full recomputation / none), or the mode."""
    if isinstance(value, bool):
        return "full" if value else "none"
    return _lower(value)


# What each framework does when the job does not say (cited where the default lives):
# - loss: torchtune's recipes use CEWithChunkedOutputLoss (recipes/configs/*: `loss:
#   _component_: torchtune.modules.loss.CEWithChunkedOutputLoss`, 8 chunks); litgpt
#   computes chunked_cross_entropy (litgpt/utils.py, chunk_size=128); Unsloth fuses the
#   lm_head with the loss (unsloth "fused_cross_entropy" / cut cross entropy); HF
#   Trainer, DeepSpeed, torchtitan, NeMo/Megatron and llm-foundry compute full logits.
# - master weights: torchtune (`dtype: bf16`, training.get_dtype) and litgpt
#   (`--precision bf16-true` when the GPU supports bf16) train pure bf16 with no fp32
#   copy; HF Trainer (bf16=True is autocast over fp32 weights), DeepSpeed, torchtitan
#   (FSDP2 MixedPrecisionPolicy(param_dtype=bf16) over fp32 parameters), NeMo/Megatron
#   (fp32 main params in the distributed optimizer), llm-foundry and Unsloth keep them.
CHUNKED_LOSS_FRAMEWORKS = frozenset({"torchtune", "litgpt"})
FUSED_LOSS_FRAMEWORKS = frozenset({"unsloth"})
PURE_BF16_FRAMEWORKS = frozenset({"torchtune", "litgpt"})


def _lower(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


def _count(value: object) -> int:
    return parse_count(value)


def _token_count(value: object) -> int:
    return parse_count(value, "token count")


def _duration(value: object) -> timedelta:
    return parse_duration(value)


# Money is stored as integer micro-dollars in 64-bit columns (at most ~9.2e12 USD): an
# amount is refused beyond a trillion dollars or below one micro-dollar.
MAX_USD = Decimal(10) ** 12
MIN_USD = Decimal("0.000001")
# A deadline is converted to UTC and stored; these years every database represents.
DEADLINE_YEARS = (1970, 9000)
# SkyPilot's (and POSIX's portable) environment variable names.
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_ENV_VALUE = 128 * 1024  # Linux MAX_ARG_STRLEN: one variable longer cannot be exec'd


def _money(value: object) -> Decimal:
    if isinstance(value, bool) or value is None:
        raise ValueError("must be an amount in USD, e.g. 250 or 12.50")
    text = str(value).strip().removeprefix("$").removesuffix("USD").strip()
    try:
        amount = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"{value!r} is not an amount in USD: write e.g. 250 or 12.50") from None
    if not amount.is_finite() or amount <= 0:
        raise ValueError("must be a positive amount in USD")
    if amount > MAX_USD:
        raise ValueError(f"must be at most {MAX_USD:,} USD")
    if amount < MIN_USD:
        raise ValueError(f"must be at least {MIN_USD} USD (one micro-dollar)")
    return amount


def _text(value: object) -> object:
    """SkyPilot allows numbers where strings are expected (envs values); keep them strings."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


Count = Annotated[int, BeforeValidator(_count)]
TokenCount = Annotated[int, BeforeValidator(_token_count)]
Duration = Annotated[timedelta, BeforeValidator(_duration)]
Money = Annotated[Decimal, BeforeValidator(_money)]
EnvValue = Annotated[str, BeforeValidator(_text)]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)


# The validation context's key for the config.json files read so far in one validation
# (path -> Architecture), so a file is read once per parse.
_HF_READ = "hf_configs_read"


class ModelSpec(_Strict):
    name: str | None = None
    config: Path | None = None
    params: Count | None = None
    layers: int | None = Field(default=None, ge=1, le=1000)
    hidden_size: int | None = Field(default=None, ge=1, le=1_000_000)
    heads: int | None = Field(default=None, ge=1, le=10_000)
    kv_heads: int | None = Field(default=None, ge=1, le=10_000)
    intermediate_size: int | None = Field(default=None, ge=1, le=10_000_000)
    vocab_size: int | None = Field(default=None, ge=1, le=100_000_000)
    # Explicit params only: SwiGLU-style gated MLP (Llama, Mistral, Qwen) or a plain
    # GELU MLP (GPT-2, OPT, Falcon, MPT, BLOOM), which keeps fewer activations.
    mlp: Literal["gated", "plain"] | None = None

    _arch: Architecture | None = PrivateAttr(default=None)

    _hub: HubConfig | None = PrivateAttr(default=None)

    @field_validator("name")
    @classmethod
    def _known_name(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        arch = find_architecture(value)
        if arch is not None:
            return arch.name
        from gpuopt.jobs.hub import looks_like_hub_id

        if looks_like_hub_id(value):
            # Read it here, so that a failure points at `name:`; kept in the context
            # for _one_source (without a context, _one_source reads it).
            if isinstance(info.context, dict):
                _hub_model(value.strip(), info.context)
            return value.strip()
        close = difflib.get_close_matches(value.lower(), list(ARCHITECTURES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"unknown model {value!r}{hint}; choose one of {', '.join(ARCHITECTURES)}, "
            "or a Hugging Face Hub id (org/name, read from the Hub), or give `config:` (a "
            "Hugging Face config.json) or `params:`"
        )

    @field_validator("config", mode="before")
    @classmethod
    def _resolve_config(cls, value: object, info: ValidationInfo) -> object:
        if value is None or not isinstance(value, str):
            return value
        path = Path(value).expanduser()
        base = (info.context or {}).get("base_dir")
        if not path.is_absolute() and base is not None:
            path = Path(base) / path
        return path

    @field_validator("config", mode="after")
    @classmethod
    def _readable_config(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if value is not None:
            from gpuopt.jobs.hfconfig import HfConfigError, load_hf_config

            try:
                arch = load_hf_config(value)
            except HfConfigError as exc:
                raise ValueError(str(exc)) from None
            if isinstance(info.context, dict):  # read once: _one_source takes it from here
                info.context.setdefault(_HF_READ, {})[value] = arch
        return value

    @model_validator(mode="after")
    def _one_source(self, info: ValidationInfo) -> ModelSpec:
        if self._arch is not None:
            return self  # resolved already: a stored spec (jobs.resolved), read no file
        sources = [k for k in ("name", "config", "params") if getattr(self, k) is not None]
        if not sources:
            raise ValueError("give one of `name` (a built-in model), `config` or `params`")
        if len(sources) > 1:
            raise ValueError(f"give only one of `name`, `config`, `params` (got {sources})")
        dims = ("layers", "hidden_size", "heads", "kv_heads", "intermediate_size", "vocab_size")
        given = {d: getattr(self, d) for d in dims if getattr(self, d) is not None}
        if given and self.params is None:
            raise ValueError(f"{', '.join(given)} only go with `params`")
        if self.mlp is not None and self.params is None:
            raise ValueError("mlp only goes with `params` (a named or config.json model "
                             "has its own)")
        if self.name is not None and self.name in ARCHITECTURES:
            self._arch = ARCHITECTURES[self.name]
        elif self.name is not None:
            self._arch, self._hub = _hub_model(self.name, info.context)
        elif self.config is not None:
            from gpuopt.jobs.hfconfig import HfConfigError, load_hf_config

            context = info.context if isinstance(info.context, dict) else {}
            read = context.get(_HF_READ, {})
            try:
                self._arch = read.get(self.config) or load_hf_config(self.config)
            except HfConfigError as exc:
                raise ValueError(f"config: {exc}") from None
        else:
            assert self.params is not None
            heads, kv = given.get("heads"), given.get("kv_heads")
            if heads and kv and (kv > heads or heads % kv):
                raise ValueError("kv_heads must divide heads")
            h = given.get("hidden_size")
            if h and heads and h % heads:
                raise ValueError("hidden_size must be a multiple of heads")
            self._arch = architecture_from_params(self.params, gated=self.mlp != "plain",
                                                  **given)
        return self

    def architecture(self) -> Architecture:
        assert self._arch is not None  # set by the validator
        return self._arch

    def hub_source(self) -> HubConfig | None:
        """The config.json read from the Hugging Face Hub for a `name:` not in the table
        (id, commit, bytes): what a stored job needs to be re-read without the Hub
        (parse_job_spec's ``hub_configs``)."""
        return self._hub


def _hub_model(repo_id: str, context: object) -> tuple[Architecture, HubConfig | None]:
    """The architecture of a Hub model: from ``context["hub_configs"][repo_id]`` (a
    config.json resolved before, as bytes or a mapping), from this validation's earlier
    read, or read from the Hub now (jobs/hub.py)."""
    import json

    from gpuopt.jobs.hfconfig import HfConfigError, architecture_from_hf_config, parse_hf_config
    from gpuopt.jobs.hub import HubConfig, HubError, fetch_hub_config

    ctx = context if isinstance(context, dict) else {}
    done = ctx.get("_hub_read", {})
    if repo_id in done:
        return done[repo_id]
    where = f"{repo_id}'s config.json"
    stored = (ctx.get("hub_configs") or {}).get(repo_id)
    try:
        if isinstance(stored, dict):
            hub = HubConfig(repo_id, None, json.dumps(stored).encode())
            arch = architecture_from_hf_config(dict(stored), repo_id)
        elif isinstance(stored, bytes | str):
            data = stored.encode() if isinstance(stored, str) else stored
            hub = HubConfig(repo_id, None, data)
            arch = parse_hf_config(data, where, repo_id)
        elif ctx.get("hub") is False:
            raise ValueError(f"{repo_id} is not in the built-in table, and this check does "
                             "not read the Hugging Face Hub; give `config:` (its config.json)")
        else:
            hub = fetch_hub_config(repo_id)
            arch = parse_hf_config(hub.data, where + " (Hugging Face Hub)", repo_id)
    except HubError as exc:
        raise ValueError(str(exc)) from None
    except HfConfigError as exc:
        raise ValueError(f"{repo_id}: {exc}") from None
    arch = _with_hf_id(arch, repo_id)
    if isinstance(context, dict):
        context.setdefault("_hub_read", {})[repo_id] = (arch, hub)
    return arch, hub


def _with_hf_id(arch: Architecture, repo_id: str) -> Architecture:
    import dataclasses

    return dataclasses.replace(arch, hf_id=repo_id)


class WorkloadSpec(_Strict):
    type: Literal["finetune", "inference"]
    # Fine-tuning
    method: Literal["full", "lora", "qlora"] = "full"
    lora_rank: int = Field(default=8, ge=1, le=65536)
    lora_targets: tuple[str, ...] = ("q_proj", "v_proj")  # PEFT's default for Llama
    optimizer: Annotated[Optimizer, BeforeValidator(_optimizer)] = "adamw"
    # none; selective (every other block recomputed; with torchtitan its default per-op
    # policy: memory/training.py OP_SAC_FRAMEWORKS); full (every block; `true` means this)
    gradient_checkpointing: Annotated[Checkpointing, BeforeValidator(_checkpointing)] = "none"
    # The loss over the vocabulary: full logits, chunked (torchtune, litgpt) or fused
    # with the lm_head (Liger, Unsloth); None: the framework's default (above)
    loss: Loss | None = None
    # fp32 master weights under 16-bit training; None: the framework's default (above)
    master_weights: bool | None = None
    # The optimizer step runs inside backward, one parameter at a time, so no whole set
    # of gradients is ever held (torchtune optimizer_in_bwd)
    optimizer_in_backward: bool = False
    # What is kept in CPU memory: optimizer states (ZeRO-Offload, torchtune's fused CPU
    # offload), parameters (FSDP / ZeRO-3 offload: with their states), or activations
    # (torchtune enable_activation_offloading, Unsloth's offloaded checkpointing)
    offload: Offload = "none"
    torch_compile: bool = False
    zero_stage: int = Field(default=0, ge=0, le=3)
    fsdp: bool = False
    # Model parallelism for training, as Megatron-LM / NeMo and torchtitan run it
    # (jobs/estimate/parallel.py): tensor parallel (Shoeybi et al. 2019, with sequence
    # parallelism), pipeline parallel (1F1B, Narayanan et al. 2021) and context parallel
    # (ring attention) degrees; the GPUs a plan uses are a multiple of their product,
    # the rest data parallel. gradient_accumulation: micro-batches of `batch_size`
    # sequences per optimizer step on each data-parallel replica (Megatron's
    # global batch / (micro batch x data parallel)).
    tensor_parallel: int = Field(default=1, ge=1, le=64)
    pipeline_parallel: int = Field(default=1, ge=1, le=1024)
    context_parallel: int = Field(default=1, ge=1, le=1024)
    gradient_accumulation: int = Field(default=1, ge=1, le=1_000_000)
    tokens: TokenCount | None = None
    epochs: float | None = Field(default=None, gt=0, le=10_000)
    dataset_tokens: TokenCount | None = None
    # Both
    precision: Annotated[Precision, BeforeValidator(_lower)] | None = None  # None: nf4
    # for qlora, bf16 otherwise
    # gptq: bits per weight code (AutoGPTQ's `bits`; awq is always 4); gptq / awq: input
    # weights per scale + zero point (`group_size`, default 128; -1: one per channel).
    bits: Literal[2, 3, 4, 8] | None = None
    group_size: int | None = Field(default=None, ge=-1, le=1_048_576)
    # NF4 double quantization (QLoRA's quantized block constants; bitsandbytes
    # bnb_4bit_use_double_quant, default False there and here).
    double_quant: bool = False
    batch_size: int = Field(default=1, ge=1, le=1_000_000)
    seq_len: int | None = Field(default=None, ge=1, le=10_000_000)
    flash_attention: bool = True
    # Achieved model FLOPs utilisation override for the runtime model (0 < mfu <= 1);
    # None = the documented defaults in jobs/estimate/utilisation.py.
    mfu: float | None = Field(default=None, gt=0, le=1)
    # The training framework class, for its achieved utilisation (utilisation.py).
    framework: Framework = "hf"
    # The framework's release, where memory depends on it ("0.1", "0.1.1"); None, or a
    # release the estimate does not know: the current release. torchtune 0.1.x pins
    # torchao 0.1, whose NF4 quantizer makes the QLoRA model build the peak
    # (jobs/estimate/memory/load.py). Parsed by jobs/release.py.
    framework_version: Annotated[str | None, BeforeValidator(parse_release)] = None
    # Inference (prompt_tokens and output_tokens are required for type: inference)
    prompt_tokens: int | None = Field(default=None, ge=1, le=10_000_000)
    output_tokens: int | None = Field(default=None, ge=0, le=10_000_000)
    # The engine that runs it (jobs/estimate/engines.py): vllm (default), sglang,
    # tensorrt-llm, or hf (transformers generate: static batches of `batch_size`).
    engine: Literal["vllm", "sglang", "tensorrt-llm", "hf"] = "vllm"
    # The engine's share of each GPU (vLLM gpu_memory_utilization, SGLang
    # mem_fraction_static, TensorRT-LLM free_gpu_memory_fraction); None: the engine's
    # default (engines.py).
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    # The most sequences the engine runs at once (vLLM max_num_seqs); None: the engine's
    # default (engines.py). It runs as many as its KV cache holds.
    concurrency: int | None = Field(default=None, ge=1, le=1_000_000)
    requests: int | None = Field(default=None, ge=1, le=10**15)
    kv_cache_dtype: KvDtype | None = None
    # Tokens the engine schedules per step (vLLM max_num_batched_tokens); None: the
    # default in jobs/estimate/memory/inference.py.
    max_batched_tokens: int | None = Field(default=None, ge=16, le=10_000_000)

    @field_validator("lora_targets", mode="before")
    @classmethod
    def _targets(cls, value: object) -> object:
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list | tuple):
            if not value:
                raise ValueError("name at least one module, e.g. [q_proj, v_proj]")
            from gpuopt.jobs.modules import ALL_NAMES as known

            for item in value:
                if not isinstance(item, str) or item not in known:
                    close = difflib.get_close_matches(str(item), sorted(known), n=1)
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
                    raise ValueError(f"unknown module {item!r}{hint}; use {sorted(known)}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> WorkloadSpec:
        set_ = self.model_fields_set
        if self.type == "inference":
            train_only = {"method", "lora_rank", "lora_targets", "optimizer",
                          "gradient_checkpointing", "zero_stage", "fsdp", "tokens", "epochs",
                          "dataset_tokens", "framework", "loss", "master_weights",
                          "optimizer_in_backward", "offload", "torch_compile",
                          "framework_version", "tensor_parallel", "pipeline_parallel",
                          "context_parallel", "gradient_accumulation"} & set_
            if train_only:
                raise ValueError(f"{', '.join(sorted(train_only))} only apply to type: finetune")
            missing = [k for k in ("prompt_tokens", "output_tokens") if getattr(self, k) is None]
            if missing:
                raise ValueError(
                    f"type: inference needs {' and '.join(missing)} (tokens per request; the "
                    "KV cache and the work depend on them)"
                )
            return self
        infer_only = {"prompt_tokens", "output_tokens", "concurrency", "requests",
                      "kv_cache_dtype", "max_batched_tokens", "engine",
                      "gpu_memory_utilization"} & set_
        if infer_only:
            raise ValueError(f"{', '.join(sorted(infer_only))} only apply to type: inference")
        if self.zero_stage and self.fsdp:
            raise ValueError("choose zero_stage or fsdp: true, not both")
        cp = self.context_parallel
        if cp > 1 and self.sequence_length % (2 * cp):
            # ring attention balances the causal mask by giving each rank two of 2 x cp
            # chunks (TransformerEngine's context parallel: "Sequence length per GPU
            # needs to be divisible by 2"; torchtitan's round-robin load balancer)
            raise ValueError(f"context_parallel: {cp} splits each sequence into {2 * cp} "
                             f"chunks: seq_len ({self.sequence_length}) must be a multiple "
                             f"of {2 * cp}")
        if self.offload == "params" and not (self.fsdp or self.zero_stage == 3):
            raise ValueError("offload: params needs sharded parameters: fsdp: true or "
                             "zero_stage: 3")
        if self.method == "qlora" and self.precision not in (None, "nf4", "int4"):
            raise ValueError("method qlora trains on a 4-bit base: precision must be nf4 or int4")
        if self.method == "full" and self.precision in QUANTIZED - {"fp8"}:
            raise ValueError(
                f"full fine-tuning cannot update {self.precision} weights: use bf16/fp16/fp32, "
                "or method: qlora / lora"
            )
        if self.method == "full" and {"lora_rank", "lora_targets"} & set_:
            raise ValueError("lora_rank / lora_targets need method: lora or qlora")
        if (self.epochs is None) != (self.dataset_tokens is None):
            raise ValueError("give epochs and dataset_tokens together")
        if self.tokens is not None and self.epochs is not None:
            raise ValueError("give tokens, or epochs x dataset_tokens, not both")
        return self

    @model_validator(mode="after")
    def _quant_options(self) -> WorkloadSpec:
        p = self.precision
        if self.bits is not None and p != "gptq":
            raise ValueError("bits goes with precision: gptq (awq is 4-bit; the others "
                             "have a fixed width)")
        if self.group_size is not None:
            if p not in GROUPED:
                raise ValueError("group_size goes with precision: gptq or awq")
            if self.group_size == 0 or self.group_size < -1:
                raise ValueError("group_size must be a positive number of weights, or -1 "
                                 "(one group per channel)")
        if self.type == "finetune" and p == "fp8" and self.method == "qlora":
            raise ValueError("precision fp8 trains in fp8 (TransformerEngine, torchao) over "
                             "bf16 weights: use method full or lora")
        if self.type == "finetune" and p in QUANTIZED - TRAINABLE_BASES - {"fp8"}:
            kind = "GGUF (llama.cpp)" if p in GGUF_TYPES else "fp8"
            raise ValueError(f"precision {p}: {kind} weights are for inference; fine-tune "
                             "from bf16 weights, or use nf4 / int4 (qlora) or gptq / awq "
                             "(lora)")
        return self

    @property
    def compute_precision(self) -> str:
        """The precision the matmuls run at (see memory/weights.compute_precision)."""
        return _compute_precision(self.weight_precision)

    @property
    def model_parallel(self) -> int:
        """GPUs one data-parallel replica spans: tensor x pipeline x context parallel."""
        return self.tensor_parallel * self.pipeline_parallel * self.context_parallel

    @property
    def checkpointing(self) -> str:
        return self.gradient_checkpointing

    @property
    def loss_kind(self) -> str:
        if self.loss is not None:
            return self.loss
        if self.framework in CHUNKED_LOSS_FRAMEWORKS:
            return "chunked"
        return "fused" if self.framework in FUSED_LOSS_FRAMEWORKS else "full"

    @property
    def keeps_master_weights(self) -> bool:
        if self.master_weights is not None:
            return self.master_weights
        return self.framework not in PURE_BF16_FRAMEWORKS

    @property
    def fp8_training(self) -> bool:
        """fp8 matmuls over bf16 weights (TransformerEngine / torchao float8)."""
        return self.type == "finetune" and self.precision == "fp8"

    @property
    def stored_precision(self) -> str:
        """The precision the weights are held in: fp8 training keeps bf16 weights."""
        return "bf16" if self.fp8_training else self.weight_precision

    @property
    def weight_precision(self) -> str:
        if self.precision is not None:
            return self.precision
        return "nf4" if self.method == "qlora" and self.type == "finetune" else "bf16"

    @property
    def prompt_len(self) -> int:
        """prompt_tokens (validated present for inference; 0 for fine-tuning)."""
        return self.prompt_tokens or 0

    @property
    def output_len(self) -> int:
        """output_tokens (validated present for inference; 0 for fine-tuning)."""
        return self.output_tokens or 0

    @property
    def sequence_length(self) -> int:
        """Tokens per sequence: seq_len, or prompt + output for inference."""
        if self.seq_len is not None:
            return self.seq_len
        if self.type == "inference":
            return self.prompt_len + self.output_len
        return 2048

    @property
    def total_tokens(self) -> int | None:
        if self.tokens is not None:
            return self.tokens
        if self.epochs is not None and self.dataset_tokens is not None:
            return round(self.epochs * self.dataset_tokens)
        return None


# SkyPilot launches any count; 64 nodes of 8 GPUs is beyond every job gpuopt places.
MAX_NODES = 64


class ResourcesSpec(_Strict):
    gpus: tuple[str, ...] = tuple(GPUS)
    max_gpus_per_node: int = Field(default=8, ge=1, le=16)
    # Nodes (instances) one attempt may span; 1 (the default) keeps every job on one
    # machine. More are used only on instance types with an inter-node fabric
    # (providers/fabrics.py).
    max_nodes: int = Field(default=1, ge=1, le=MAX_NODES)
    # Registered clouds only (providers/clouds.py); default: all of them.
    clouds: tuple[str, ...] = Field(default_factory=cloud_names)
    regions: tuple[str, ...] | None = None
    spot: Literal["auto", "always", "never"] = "auto"
    max_price_per_hour: Money | None = None
    # Marketplace hosts (Vast.ai): leave out offers whose host scores below this
    # reliability (0..1, Vast.ai's reliability2), and, with verified_hosts_only, hosts
    # Vast.ai has not verified. Offers from clouds without such scores are not affected.
    min_host_reliability: float | None = Field(default=None, ge=0, le=1)
    verified_hosts_only: bool = False

    @field_validator("gpus", mode="before")
    @classmethod
    def _gpus(cls, value: object) -> object:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple):
            return value
        if not value:
            raise ValueError("list at least one GPU, or leave `gpus` out to allow all")
        out: list[str] = []
        for item in value:
            canon = canonical_gpu(item) if isinstance(item, str) else None
            if canon is None:
                close = difflib.get_close_matches(str(item).upper(), list(GPUS), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(f"unknown GPU {item!r}{hint}; choose from {', '.join(GPUS)}")
            if canon not in out:
                out.append(canon)
        return tuple(out)

    @field_validator("clouds", mode="before")
    @classmethod
    def _clouds(cls, value: object) -> object:
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list | tuple):
            if not value:
                raise ValueError("list at least one cloud, or leave `clouds` out to allow all")
            value = [v.strip().lower() if isinstance(v, str) else v for v in value]
            known = cloud_names()
            for v in value:
                if v not in known:
                    raise ValueError(unknown_cloud_message(v))
        return value


class CheckpointSpec(_Strict):
    dir: str = Field(min_length=1)
    interval: Duration = timedelta(minutes=30)


def _deadline(value: object) -> object:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"{value.isoformat()} has no time zone: add one, e.g. "
                             f"{value.isoformat()}Z for UTC or {value.isoformat()}+02:00")
        return _in_range(value)
    if isinstance(value, date):
        raise ValueError("give a time, not only a date: e.g. 2025-07-01T18:00:00Z, or 36h")
    if isinstance(value, str):
        text = value.strip()
        if text and text[0].isdigit() and ("-" in text or "T" in text):
            try:
                when = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                raise ValueError(
                    f"{value!r} is neither a duration (36h) nor an ISO-8601 time"
                ) from None
            if when.tzinfo is None:
                raise ValueError(f"{text} has no time zone: add one, e.g. {text}Z for UTC "
                                 f"or {text}+02:00")
            return _in_range(when)
    return parse_duration(value)


def _in_range(when: datetime) -> datetime:
    first, last = DEADLINE_YEARS
    try:
        utc = when.astimezone(UTC)
    except (OverflowError, ValueError):
        utc = None
    if utc is None or not first <= utc.year < last:
        raise ValueError(f"a deadline must fall between the years {first} and {last} (UTC)")
    return when


def _stored_text(info: ValidationInfo) -> bool:
    """A spec stored before control characters were refused (jobs.resolved's ``stored``,
    or the loader's ``stored_text`` for rows kept only as YAML)."""
    ctx = info.context if isinstance(info.context, dict) else {}
    return bool(ctx.get("stored") or ctx.get("stored_text"))


def _check_env_name(name: str) -> None:
    if not ENV_NAME.match(name):
        raise ValueError(
            f"{name!r} is not an environment variable name: letters, digits and _, "
            "not starting with a digit")


def _check_not_reserved(name: str) -> None:
    from gpuopt.jobs.reserved_env import reserved_reason

    why = reserved_reason(name)
    if why is not None:
        raise ValueError(f"{why}: a job may not set or receive them (the control node's "
                         "credentials stay there); give it a name of its own")


def _choice(choices: tuple[str, ...]) -> Any:
    """A case-insensitive choice, kept upper-case (as SkyPilot's storage schema reads it)."""

    def check(value: str) -> str:
        if value.upper() not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return value.upper()

    return AfterValidator(check)


STORAGE_MODES = ("MOUNT", "COPY", "MOUNT_CACHED")
STORAGE_STORES = ("S3", "GCS", "AZURE", "R2", "IBM", "OCI", "NEBIUS", "COREWEAVE")


class StorageMountSpec(_Strict):
    """A ``file_mounts`` value written as a mapping: SkyPilot storage (a bucket mounted or
    copied onto the node), with the keys of SkyPilot's storage schema."""

    name: str | None = None
    source: str | list[str] | None = None
    store: Annotated[str, _choice(STORAGE_STORES)] | None = None
    mode: Annotated[str, _choice(STORAGE_MODES)] | None = None
    persistent: bool | None = None

    @model_validator(mode="after")
    def _named_or_sourced(self) -> StorageMountSpec:
        if self.name is None and self.source is None:
            raise ValueError("a storage mount needs a `source` (bucket URL or local path) "
                             "or a `name` (bucket to create)")
        return self

    def sky_config(self) -> dict[str, Any]:
        """The mapping as SkyPilot's task YAML takes it (unset keys left out)."""
        return self.model_dump(exclude_none=True)


# A path/URL copied to the node, or a storage mapping; told apart by type so that an error
# in a mapping is reported on its key, not as "must be a string".
FileMount = Annotated[
    Annotated[str, Tag("[path]")] | Annotated[StorageMountSpec, Tag("[storage]")],
    Discriminator(lambda v: "[path]" if isinstance(v, str) else "[storage]"),
]


class JobSpec(_Strict):
    # SkyPilot task keys
    name: str | None = Field(default=None, min_length=1, max_length=128)
    setup: str | None = None
    run: str | None = None
    envs: dict[str, EnvValue] = Field(default_factory=dict)
    # SkyPilot's `secrets:`: names whose values come from the submitter's environment
    # (like `sky launch --secret NAME`); a value is never written here (see _secrets).
    secrets: dict[str, None] = Field(default_factory=dict)
    workdir: str | None = None
    file_mounts: dict[str, FileMount] = Field(default_factory=dict)
    # gpuopt
    model: ModelSpec
    workload: WorkloadSpec
    resources: ResourcesSpec = Field(default_factory=ResourcesSpec)
    deadline: Annotated[timedelta | datetime | None, BeforeValidator(_deadline)] = None
    budget: Money | None = None
    owner: str | None = Field(default=None, min_length=1, max_length=128)
    team: str | None = Field(default=None, min_length=1, max_length=128)
    checkpoint: CheckpointSpec | None = None
    max_restarts_on_errors: int = Field(default=0, ge=0, le=1000)

    @field_validator("name", "owner", "team")
    @classmethod
    def _one_line(cls, value: str | None, info: ValidationInfo) -> str | None:
        """Shown in tables, reports and mail: no terminal control character (the loader
        refuses them in every string of a file, with its line). A spec stored by an
        older version is read as it is (and escaped wherever it is shown)."""
        if value is None or _stored_text(info):
            return value
        from gpuopt.core.safe_text import control_problem

        problem = control_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("envs")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            _check_env_name(name)
            _check_not_reserved(name)
            if len(text) > MAX_ENV_VALUE:
                raise ValueError(f"{name}: a value of at most {MAX_ENV_VALUE:,} characters")
        return value

    @field_validator("secrets", mode="before")
    @classmethod
    def _secrets(cls, value: object) -> object:
        if isinstance(value, list | tuple):  # a list of names is the same request
            value = {name: None for name in value}
        if not isinstance(value, dict):
            return value
        for name, secret in value.items():
            if not isinstance(name, str):
                raise ValueError(f"{name!r}: a secret's name must be a string")
            _check_env_name(name)
            _check_not_reserved(name)
            if secret is not None and secret != "":
                raise ValueError(
                    f"{name}: leave the value empty (`{name}: null`) and set {name} in the "
                    "environment you submit from; gpuopt stores job files, never secrets")
        return {name: None for name in value}

    @field_validator("workdir", mode="before")
    @classmethod
    def _workdir(cls, value: object, info: ValidationInfo) -> object:
        if not isinstance(value, str) or not value.strip() or "://" in value:
            return value
        if (info.context or {}).get("stored"):
            return value  # a stored spec (jobs.resolved): checked and resolved at submit
        uploaded = (info.context or {}).get("uploaded_workdir")
        if uploaded is not None:  # sent by a remote submitter, unpacked here (the API)
            return str(Path(uploaded).resolve())
        path = Path(value.strip()).expanduser()
        base = (info.context or {}).get("base_dir")
        if not path.is_absolute() and base is not None:
            path = Path(base) / path
        try:
            if path.is_dir():
                return str(path.resolve())
        except (OSError, ValueError) as exc:  # a name too long, a loop of links
            raise ValueError(f"cannot use {str(path)[:200]!r}: {exc.__class__.__name__}") \
                from None
        raise ValueError(f"{str(path)[:200]!r} is not a directory")

    @model_validator(mode="after")
    def _secrets_apart(self) -> JobSpec:
        both = sorted(set(self.envs) & set(self.secrets))
        if both:
            raise ValueError(f"{', '.join(both)}: in both envs and secrets; keep it in one")
        return self

    def deadline_at(self, submitted_at: datetime) -> datetime | None:
        """The absolute deadline (aware UTC) for a job submitted at ``submitted_at``."""
        if self.deadline is None:
            return None
        if isinstance(self.deadline, timedelta):
            if submitted_at.tzinfo is None:
                raise ValueError("submitted_at must be timezone-aware")
            return (submitted_at + self.deadline).astimezone(UTC)
        return self.deadline.astimezone(UTC)

    def resolved_model(self) -> Architecture:
        return self.model.architecture()
