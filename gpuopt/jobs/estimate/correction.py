"""Throughput corrections fitted to the measurement corpus: what the roofline model
cannot derive (how well a framework's or engine's kernels use the GPU).

    tokens/s = model tokens/s x exp(sum of coefficient x feature)

Features are indicators of the stack (framework or engine, adapters, fp8, compile);
tensor parallelism is not a feature: its all-reduces are timed in the model
(runtime.tp_allreduce_seconds). The coefficients are fitted by ridge
least squares on log(measured / model) (``fit``), toward 0 (the model unchanged), and
stored in fitted.py by benchmarks/estimate_accuracy.py --write; the benchmark refits
them without each source in turn to score that source (docs/estimates.md). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from gpuopt.jobs.spec import WorkloadSpec

# Ridge penalty on each coefficient (log units, rows weighted 1): with few rows a
# feature stays near 0, i.e. the physical model, rather than one source's value. The
# penalty itself is chosen from RIDGE_GRID by leave-one-source-out error on the rows
# being fitted, by the one-standard-error rule (scoring.select_ridge); RIDGE is the
# fallback with a single source.
RIDGE = 1.0
RIDGE_GRID = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)


SERVING_ENGINES = frozenset({"vllm", "sglang", "tensorrt-llm"})


def features(workload: WorkloadSpec) -> dict[str, float]:
    """Shared terms first (what a held-out stack still gets from the others), then the
    stack's own: training / serving intercepts; adapters, fp8, compile; each framework
    or engine; quantized weights in generate."""
    if workload.type == "finetune":
        f = {"train": 1.0}
        if workload.framework != "hf":
            f[f"framework:{workload.framework}"] = 1.0
        if workload.method != "full":
            f["adapter"] = 1.0
        if workload.fp8_training:
            f["fp8_training"] = 1.0
        if workload.torch_compile:
            f["torch_compile"] = 1.0
        return f
    if workload.engine in SERVING_ENGINES:
        f = {"serving": 1.0, f"engine:{workload.engine}": 1.0}
    else:
        f = {"engine:hf": 1.0}
        if workload.weight_precision in ("nf4", "int4", "int8"):
            f["generate_bitsandbytes"] = 1.0  # dequantizes every weight, every token
    return f


def factor(feats: Mapping[str, float], coefficients: Mapping[str, float]) -> float:
    return math.exp(sum(coefficients.get(k, 0.0) * v for k, v in feats.items()))


def fit(rows: Sequence[tuple[Mapping[str, float], float]], ridge: float = RIDGE,
        ) -> dict[str, float]:
    """Ridge least squares of log ratios on features: ``rows`` are (features,
    log(measured / model)). Solved by numpy's lstsq on the augmented system."""
    import numpy as np

    names = sorted({k for feats, _ in rows for k in feats})
    if not names:
        return {}
    x = np.array([[feats.get(n, 0.0) for n in names] for feats, _ in rows], dtype=float)
    y = np.array([target for _, target in rows], dtype=float)
    aug_x = np.vstack([x, math.sqrt(ridge) * np.eye(len(names))])
    aug_y = np.concatenate([y, np.zeros(len(names))])
    coef, *_ = np.linalg.lstsq(aug_x, aug_y, rcond=None)
    return {n: round(float(c), 6) for n, c in zip(names, coef, strict=True)}
