"""What would make a job fit, or fit somewhere cheaper: the knobs it has off, each tried
for real by planning the job with that one knob on. Never an unasked change to the job:
the advice is text for the user ("fits 8x A100-40GB with `zero_stage: 3` (est. $30.60)
— it is off in your job"). Pure: the offers and the context are handed in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_EVEN, Decimal

from gpuopt.jobs.spec import JobSpec, WorkloadSpec
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import PlacementContext, Plan, plan_job

# Advice is given when a knob cuts the expected cost by at least this share (or the
# job fits nowhere without it); at most MAX_ADVICE lines, cheapest first.
MIN_SAVING = 0.2
MAX_ADVICE = 3
CENT = Decimal("0.01")


@dataclass(frozen=True, slots=True)
class Knob:
    text: str  # how the job file says it
    applies: Callable[[WorkloadSpec], bool]  # the job has it off
    update: dict[str, object]


TRAINING_KNOBS = (
    Knob("zero_stage: 3", lambda w: not w.fsdp and w.zero_stage < 3, {"zero_stage": 3}),
    Knob("gradient_checkpointing: full", lambda w: w.checkpointing != "full",
         {"gradient_checkpointing": "full"}),
    Knob("optimizer: adamw_8bit", lambda w: w.optimizer == "adamw",
         {"optimizer": "adamw_8bit"}),
    Knob("offload: optimizer", lambda w: w.offload == "none", {"offload": "optimizer"}),
)
INFERENCE_KNOBS = (
    Knob("kv_cache_dtype: fp8", lambda w: w.kv_cache_dtype is None
         and w.weight_precision in ("bf16", "fp16"), {"kv_cache_dtype": "fp8"}),
    Knob("precision: fp8", lambda w: w.weight_precision in ("bf16", "fp16"),
         {"precision": "fp8"}),
)


def needs_advice(plan: Plan) -> bool:
    """Nothing fits, or some allowed GPU model was left out for its memory."""
    return plan.best is None or any(e.reason.startswith("does not fit")
                                    for e in plan.excluded)


def knob_advice(spec: JobSpec, index: OfferIndex, ctx: PlacementContext,
                plan: Plan) -> tuple[str, ...]:
    """One line per knob (off in the job) that makes it fit or cheaper, with the
    placement and expected cost it would then have; when no single knob does, the
    knobs together, added in order until the job fits."""
    if not needs_advice(plan):
        return ()
    w = spec.workload
    knobs = [k for k in (TRAINING_KNOBS if w.type == "finetune" else INFERENCE_KNOBS)
             if k.applies(w)]
    now = plan.best.expected_cost if plan.best is not None else None
    found: list[tuple[Decimal, str]] = []
    for knob in knobs:
        line = _try(spec, index, ctx, (knob,), now)
        if line is not None:
            found.append(line)
    if not found and now is None:
        for n in range(2, len(knobs) + 1):
            line = _try(spec, index, ctx, tuple(knobs[:n]), now)
            if line is not None:
                found.append(line)
                break
    found.sort(key=lambda item: item[0])
    return tuple(text for _, text in found[:MAX_ADVICE])


def _try(spec: JobSpec, index: OfferIndex, ctx: PlacementContext, knobs: tuple[Knob, ...],
         now: Decimal | None) -> tuple[Decimal, str] | None:
    update: dict[str, object] = {}
    for knob in knobs:
        update.update(knob.update)
    variant = spec.model_copy(update={"workload": spec.workload.model_copy(update=update)})
    best = plan_job(variant, index, replace(ctx, top=1)).best
    if best is None:
        return None
    if now is not None and best.expected_cost > now * Decimal(1 - MIN_SAVING):
        return None
    o = best.offer
    cost = best.expected_cost.quantize(CENT, rounding=ROUND_HALF_EVEN)
    names = " and ".join(f"`{k.text}`" for k in knobs)
    off = "it is" if len(knobs) == 1 else "they are"
    return best.expected_cost, (f"fits {o.gpu_count}x {o.gpu} with {names} (est. ${cost:,}) "
                                f"— {off} off in your job")
