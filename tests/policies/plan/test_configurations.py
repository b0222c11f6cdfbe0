from __future__ import annotations

from gpuopt.jobs.estimate.runtime import EstimateCache
from gpuopt.policies.plan.configurations import (
    deadline_slowdown,
    fastest_first,
    hours_left,
    search_model,
)
from gpuopt.providers.hardware import GPUS
from tests.policies.plan.helpers import NOW, configuration, ctx, job

FULL_70B = ("  type: finetune\n  method: full\n  tokens: 10m\n  batch_size: 1\n"
            "  seq_len: 2048\n")


def test_every_sold_count_that_fits_is_a_configuration() -> None:
    spec = job()
    found = search_model(spec.resolved_model(), spec.workload, GPUS["A100-80GB"], [1, 2, 4],
                         ctx(), EstimateCache(None))
    assert [c.fit.count for c in found.configs] == [1, 2, 4]
    assert all(c.fit.fits and c.nodes == 1 for c in found.configs)
    assert found.too_small is None


def test_remaining_work_scales_the_hours() -> None:
    spec = job()
    whole = configuration(spec, "A100-80GB")
    half = search_model(spec.resolved_model(), spec.workload, GPUS["A100-80GB"], [1],
                        ctx(remaining_fraction=0.5), EstimateCache(None)).configs[0]
    assert half.hours == whole.hours * 0.5


def test_a_model_too_large_for_every_count_says_the_largest_counts_need() -> None:
    spec = job(workload=FULL_70B, model="llama-2-70b")
    found = search_model(spec.resolved_model(), spec.workload, GPUS["L4"], [1, 2, 4],
                         ctx(), EstimateCache(None))
    assert found.configs == [] and found.sold == [1, 2, 4]
    assert found.too_small is not None and found.too_small.count == 4
    assert not found.too_small.fits


def test_fastest_first_and_the_deadline_inputs() -> None:
    spec = job()
    configs = [configuration(spec, "L4"), configuration(spec, "A100-80GB")]
    assert [c.gpu.name for c in fastest_first(configs)] == ["A100-80GB", "L4"]
    assert deadline_slowdown(spec.workload, ctx(pessimistic_deadline=False)) == 1.0
    assert deadline_slowdown(spec.workload, ctx()) > 1.0
    assert hours_left(ctx()) is None
    assert hours_left(ctx(deadline_at=NOW.replace(hour=18))) == 6.0
