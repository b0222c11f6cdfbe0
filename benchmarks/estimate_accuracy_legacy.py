"""The measurement corpus scored by an older gpuopt (the "before" of docs/estimates.md).

    PYTHONPATH=/path/to/old/checkout python benchmarks/estimate_accuracy_legacy.py \
        jobs/estimate/measurements

Self-contained on purpose: it runs under another checkout's package, so it imports only
what every version has (estimate_memory, estimate_runtime, WorkloadSpec). Each row's
workload is written as that version's schema could say it: fields it lacks are left
out (engine, loss, master weights, offload, ...), the new optimizer names and the
checkpointing modes mapped back, frameworks it does not know counted as `hf`
(`megatron` for nemo), fp8 training as bf16, and inference at its default concurrency
unless the row states one. Memory as the old code reports it (allocated = total less
context and allocator); throughput with its calibration-free model.
"""

from __future__ import annotations

import math
import statistics
import sys
import tomllib
from pathlib import Path
from typing import Any

from gpuopt.jobs.architectures import ARCHITECTURES
from gpuopt.jobs.estimate.memory import estimate_memory
from gpuopt.jobs.estimate.runtime import estimate_runtime
from gpuopt.jobs.spec import WorkloadSpec
from gpuopt.providers.hardware import GPUS

NEW_FIELDS = ("engine", "gpu_memory_utilization", "loss", "master_weights",
              "optimizer_in_backward", "offload", "torch_compile")
OPTIMIZERS = {"adamw_8bit": "adamw8bit", "paged_adamw_8bit": "paged_adamw8bit",
              "paged_adamw_32bit": "adamw"}
FRAMEWORKS = {"torchtitan": "hf", "unsloth": "hf", "nemo": "megatron"}


def old_workload(fields: dict[str, Any]) -> WorkloadSpec:
    f = {k: v for k, v in fields.items() if k not in NEW_FIELDS}
    if "optimizer" in f:
        f["optimizer"] = OPTIMIZERS.get(f["optimizer"], f["optimizer"])
    if isinstance(f.get("gradient_checkpointing"), str):
        f["gradient_checkpointing"] = f["gradient_checkpointing"] != "none"
    if "framework" in f:
        f["framework"] = FRAMEWORKS.get(f["framework"], f["framework"])
    if f.get("type") == "finetune" and f.get("precision") == "fp8":
        f.pop("precision")
    return WorkloadSpec(**f)


def main(directory: str) -> int:
    mem: dict[str, list[float]] = {}
    tps: dict[str, list[float]] = {}
    for path in sorted(Path(directory).glob("*.toml")):
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        src, defaults = doc["source"], doc.get("defaults", {})
        for row in doc.get("row", []):
            if row.get("unexpressed"):
                continue
            w = old_workload({**defaults, **row.get("workload", {})})
            arch = ARCHITECTURES[row["model"]]
            tp = int(row.get("tp", 1))
            shard = tp if w.type == "inference" else int(row["count"])
            if "memory_gib" in row or "memory_gb" in row:
                measured = (row["memory_gib"] * 2**30 if "memory_gib" in row
                            else row["memory_gb"] * 1e9)
                est = estimate_memory(arch, w, shard)
                c = est.components
                total = float(est.total_bytes)
                alloc = float(c["allocator"])
                if row.get("memory_excludes_kv"):
                    total -= c["kv_cache"] * 1.05
                    alloc -= c["kv_cache"] * 0.05
                kind = row.get("memory_kind", "nvidia-smi")
                if kind == "allocated":
                    total -= alloc + c["cuda_context"]
                elif kind == "reserved":
                    total -= c["cuda_context"]
                mem.setdefault(src["framework"], []).append(total / measured - 1)
            if row.get("tokens_per_second") and row["gpu"] in GPUS:
                rt = estimate_runtime(arch, w, GPUS[row["gpu"]], int(row["count"]))
                tps.setdefault(src["framework"], []).append(
                    rt.tokens_per_second / row["tokens_per_second"])
    print("| framework / engine | memory rows | median abs err | worst under | tok/s rows "
          "| median ratio | worst ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    every_m = [e for v in mem.values() for e in v]
    every_t = [r for v in tps.values() for r in v]
    for name in [*sorted(set(mem) | set(tps)), "overall"]:
        m = every_m if name == "overall" else mem.get(name, [])
        t = every_t if name == "overall" else tps.get(name, [])
        print(f"| {name} | {len(m)} | "
              + (f"{100 * statistics.median(abs(e) for e in m):.1f}% | "
                 f"{100 * min(m):+.1f}% | " if m else "- | - | ")
              + f"{len(t)} | "
              + (f"{statistics.median(t):.2f} | "
                 f"{max(t, key=lambda r: abs(math.log(r))):.2f} |" if t else "- | - |"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "gpuopt/jobs/estimate/measurements"))
