"""The linear modules of a model by its own names, as PEFT's ``target_modules`` sees them.

Each family names (and fuses) its projections differently: Falcon's ``query_key_value``
is one matrix for q, k and v; GPT-2's ``c_attn`` too, and its ``c_proj`` names both the
attention output and the MLP's down projection (PEFT matches every module whose name
ends in the target, so an adapter lands on both); Phi-3 fuses ``qkv_proj`` and
``gate_up_proj``. A LoRA adapter on a fused module is one (in x r) + (r x out) pair on
the fused shape. The Llama-style names (q_proj .. down_proj) are accepted for every
family and mean the native module that computes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuopt.jobs.architectures import Architecture

LLAMA_NAMES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
NATIVE_NAMES = {
    "llama": LLAMA_NAMES,
    "falcon": ("query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"),
    "gpt2": ("c_attn", "c_proj", "c_fc"),
    "opt": ("q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2"),
    "phi3": ("qkv_proj", "o_proj", "gate_up_proj", "down_proj"),
    "neox": ("query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"),
    "mpt": ("Wqkv", "out_proj", "up_proj", "down_proj"),
    "starcoder2": ("q_proj", "k_proj", "v_proj", "o_proj", "c_fc", "c_proj"),
    "deepseek": ("q_proj", "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj",
                 "gate_proj", "up_proj", "down_proj"),
}
# DeepSeek's MLA projections by the Llama-style parts they compute.
_MLA_PARTS = {
    "q_proj": ("q_proj",), "q_a_proj": ("q_proj",), "q_b_proj": ("q_proj",),
    "kv_a_proj_with_mqa": ("k_proj", "v_proj"), "kv_b_proj": ("k_proj", "v_proj"),
}
ALL_NAMES = frozenset(n for names in NATIVE_NAMES.values() for n in names) | {"all-linear"}


@dataclass(frozen=True, slots=True)
class Module:
    """One linear module of a block: its name, the Llama-style parts it computes, shape."""

    name: str
    parts: tuple[str, ...]
    shape: tuple[int, int]  # (in, out)


def block_modules(arch: Architecture) -> tuple[Module, ...]:
    s = arch.linear_shapes()
    h, i = arch.hidden_size, arch.expert_size
    qkv = (h, arch.q_dim + 2 * arch.kv_dim)
    if arch.family in ("falcon", "neox"):
        return (Module("query_key_value", ("q_proj", "k_proj", "v_proj"), qkv),
                Module("dense", ("o_proj",), s["o_proj"]),
                Module("dense_h_to_4h", ("up_proj",), s["up_proj"]),
                Module("dense_4h_to_h", ("down_proj",), s["down_proj"]))
    if arch.family == "gpt2":
        return (Module("c_attn", ("q_proj", "k_proj", "v_proj"), qkv),
                Module("c_proj", ("o_proj",), s["o_proj"]),
                Module("c_fc", ("up_proj",), s["up_proj"]),
                Module("c_proj", ("down_proj",), s["down_proj"]))
    if arch.family == "opt":
        return (Module("q_proj", ("q_proj",), s["q_proj"]),
                Module("k_proj", ("k_proj",), s["k_proj"]),
                Module("v_proj", ("v_proj",), s["v_proj"]),
                Module("out_proj", ("o_proj",), s["o_proj"]),
                Module("fc1", ("up_proj",), s["up_proj"]),
                Module("fc2", ("down_proj",), s["down_proj"]))
    if arch.family == "phi3":
        return (Module("qkv_proj", ("q_proj", "k_proj", "v_proj"), qkv),
                Module("o_proj", ("o_proj",), s["o_proj"]),
                Module("gate_up_proj", ("gate_proj", "up_proj"), (h, 2 * i)),
                Module("down_proj", ("down_proj",), s["down_proj"]))
    if arch.family == "mpt":
        return (Module("Wqkv", ("q_proj", "k_proj", "v_proj"), qkv),
                Module("out_proj", ("o_proj",), s["o_proj"]),
                Module("up_proj", ("up_proj",), s["up_proj"]),
                Module("down_proj", ("down_proj",), s["down_proj"]))
    if arch.family == "starcoder2":
        return (*(Module(n, (n,), s[n]) for n in ("q_proj", "k_proj", "v_proj", "o_proj")),
                Module("c_fc", ("up_proj",), s["up_proj"]),
                Module("c_proj", ("down_proj",), s["down_proj"]))
    if arch.is_mla:
        return tuple(Module(n, _MLA_PARTS.get(n, (n,)), shape) for n, shape in s.items())
    return tuple(Module(n, (n,), s[n]) for n in LLAMA_NAMES if n in s)


def resolve_targets(arch: Architecture, targets: tuple[str, ...]) -> tuple[Module, ...]:
    """The modules a LoRA target list puts adapters on (each once)."""
    modules = block_modules(arch)
    if "all-linear" in targets:
        return modules
    return tuple(m for m in modules if m.name in targets or any(p in targets for p in m.parts))


def unknown_targets(arch: Architecture, targets: tuple[str, ...]) -> list[str]:
    """Targets that name no module of this model (natively or Llama-style)."""
    modules = block_modules(arch)
    known = {m.name for m in modules} | {p for m in modules for p in m.parts} | {"all-linear"}
    return [t for t in targets if t not in known]


def module_names(arch: Architecture) -> list[str]:
    return list(dict.fromkeys(m.name for m in block_modules(arch)))
