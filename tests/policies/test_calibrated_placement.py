"""Plans that use what was measured (issue 17): a measured throughput changes the hours
and the ranking exactly as the arithmetic says; a measured peak above the estimate moves
the fit to a larger GPU; no records plan as before."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest

from gpuopt.jobs.estimate.calibration import Calibration, record_for
from gpuopt.jobs.estimate.memory import GIB, estimate_memory
from gpuopt.jobs.estimate.runtime import estimate_runtime
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import plan_job
from gpuopt.providers.hardware import GPUS
from tests.policies.test_placement import ctx, offer, spec

LORA = "  type: finetune\n  method: lora\n  tokens: 100m\n  batch_size: 4\n  seq_len: 1024\n"


def _lora_spec():  # type: ignore[no-untyped-def]
    return spec("resources:\n  gpus: [A100-80GB, H100]\n  max_gpus_per_node: 1\n",
                workload=LORA)


def _model_hours(s, gpu: str) -> float:  # type: ignore[no-untyped-def]
    return estimate_runtime(s.resolved_model(), s.workload, GPUS[gpu], 1).hours


def test_measured_at_0_6x_the_estimate_changes_hours_and_ranking_as_the_arithmetic_says(
) -> None:
    s = _lora_spec()
    arch, w = s.resolved_model(), s.workload
    h_a, h_h = _model_hours(s, "A100-80GB"), _model_hours(s, "H100")
    price_a = Decimal("4.00")
    # H100 is 20% cheaper to finish than A100 by the model ...
    price_h = (price_a * Decimal(repr(h_a)) / Decimal(repr(h_h)) * Decimal("0.8")).quantize(
        Decimal("0.0001"))
    index = OfferIndex.build([offer("A100-80GB", 1, str(price_a)), offer("H100", 1, str(price_h))])
    before = plan_job(s, index, ctx())
    assert before.best is not None and before.best.offer.gpu == "H100"
    assert before.best.runtime.source == "model"
    # ... but a finished run on H100 measured 0.6x the estimated tokens/s.
    model_tps = estimate_runtime(arch, w, GPUS["H100"], 1).tokens_per_second
    measured = record_for(arch, w, "H100", 1, tokens_per_second=0.6 * model_tps)
    after = plan_job(s, index, ctx(calibration=Calibration((measured,))))
    by_gpu = {c.offer.gpu: c for c in after.candidates}
    h100 = by_gpu["H100"]
    assert h100.est_hours == pytest.approx(h_h / 0.6, rel=1e-12)
    assert h100.runtime.tokens_per_second == pytest.approx(0.6 * model_tps, rel=1e-12)
    assert h100.runtime.source == "measured (1 run)"
    assert h100.to_json()["runtime_source"] == "measured (1 run)"
    assert h100.expected_cost == (price_h * Decimal(repr(h100.expected_hours))).quantize(
        Decimal("0.000001"))
    # 0.8 / 0.6 = 1.33x the A100's cost now: the A100 (unmeasured: the model) wins.
    assert by_gpu["A100-80GB"].est_hours == h_a and by_gpu["A100-80GB"].runtime.source == "model"
    assert after.best is not None and after.best.offer.gpu == "A100-80GB"
    assert float(h100.expected_cost / by_gpu["A100-80GB"].expected_cost) == pytest.approx(
        0.8 / 0.6, rel=1e-4)


def test_a_nearby_configuration_scales_the_measurement_by_the_models_ratio() -> None:
    s = _lora_spec()
    arch, w = s.resolved_model(), s.workload
    other = w.model_copy(update={"batch_size": 16, "seq_len": 2048})
    tps_there = estimate_runtime(arch, other, GPUS["H100"], 1).tokens_per_second
    tps_here = estimate_runtime(arch, w, GPUS["H100"], 1).tokens_per_second
    measured = record_for(arch, other, "H100", 1, tokens_per_second=0.5 * tps_there)
    index = OfferIndex.build([offer("H100", 1, "3.00")])
    plan = plan_job(s, index, ctx(calibration=Calibration((measured, measured))))
    assert plan.best is not None
    assert plan.best.runtime.tokens_per_second == pytest.approx(0.5 * tps_here, rel=1e-12)
    assert plan.best.runtime.source == "measured (2 runs)"


def test_records_of_another_gpu_or_model_leave_the_model_alone() -> None:
    s = _lora_spec()
    arch, w = s.resolved_model(), s.workload
    index = OfferIndex.build([offer("H100", 1, "3.00")])
    base = plan_job(s, index, ctx())
    on_a100 = record_for(arch, w, "A100-80GB", 1, tokens_per_second=1.0)
    other_model = replace(record_for(arch, w, "H100", 1, tokens_per_second=1.0),
                          fingerprint="0" * 16)
    plan = plan_job(s, index, ctx(calibration=Calibration((on_a100, other_model))))
    assert plan.best is not None and base.best is not None
    assert plan.best.est_hours == base.best.est_hours and plan.best.runtime.source == "model"


def test_a_measured_peak_above_the_estimate_moves_the_fit_to_a_larger_gpu() -> None:
    s = spec("resources:\n  gpus: [A10G, L40S]\n  max_gpus_per_node: 1\n", model="gpt2",
             workload="  type: finetune\n  method: full\n  tokens: 10m\n  batch_size: 8\n"
                      "  seq_len: 1024\n")
    arch, w = s.resolved_model(), s.workload
    index = OfferIndex.build([offer("A10G", 1, "1.00"), offer("L40S", 1, "5.00")])
    before = plan_job(s, index, ctx())
    assert before.best is not None and before.best.offer.gpu == "A10G"
    model_gib = estimate_memory(arch, w, 1).total_bytes / GIB
    assert model_gib < GPUS["A10G"].memory_gib * 0.9
    # the run peaked at 23 GiB: more than the A10G's usable 90% of 22.5 GiB (the model said less)
    peak_mib = 23 * 1024
    assert peak_mib / 1024 > model_gib
    rec = record_for(arch, w, "A10G", 1, peak_memory_mib=peak_mib)
    after = plan_job(s, index, ctx(calibration=Calibration((rec,))))
    assert after.best is not None and after.best.offer.gpu == "L40S"
    assert after.best.fit.memory_source == "measured (1 run)"
    assert after.best.fit.per_gpu_gib == pytest.approx(23.0, abs=1e-6)
    assert [e.gpu for e in after.excluded] == ["A10G"]


def test_memory_is_not_calibrated_for_inference() -> None:
    s = spec("resources:\n  gpus: [A100-80GB]\n  max_gpus_per_node: 1\n",
             workload="  type: inference\n  prompt_tokens: 512\n  output_tokens: 128\n"
                      "  requests: 1000\n")
    arch, w = s.resolved_model(), s.workload
    rec = record_for(arch, w, "A100-80GB", 1, peak_memory_mib=75_000)
    index = OfferIndex.build([offer("A100-80GB", 1, "4.00")])
    plan = plan_job(s, index, ctx(calibration=Calibration((rec,))))
    assert plan.best is not None and plan.best.fit.memory_source == "model"


def test_a_run_on_another_gpu_model_is_not_taken_for_the_planned_one() -> None:
    from gpuopt.jobs.estimate.calibration import is_planned_gpu

    assert is_planned_gpu(GPUS["H100"].memory_gib, [81_559, 81_559])  # nvidia-smi on H100
    assert is_planned_gpu(GPUS["L4"].memory_gib, [23_034])
    assert not is_planned_gpu(GPUS["L4"].memory_gib, [24_564])  # an RTX 4090 at home
    assert not is_planned_gpu(GPUS["A100-80GB"].memory_gib, [40_960])
    assert is_planned_gpu(GPUS["T4"].memory_gib, [])  # nothing reported: trusted


def test_the_fingerprint_is_the_shape_not_the_name() -> None:
    from gpuopt.jobs.estimate.calibration import fingerprint

    a = spec(model="llama-2-7b").resolved_model()
    assert fingerprint(replace(a, name="my-llama", hf_id=None)) == fingerprint(a)
    assert fingerprint(replace(a, layers=a.layers + 1)) != fingerprint(a)
    assert fingerprint(spec(model="gpt2").resolved_model()) != fingerprint(a)
