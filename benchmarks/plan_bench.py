"""Benchmark: plan 1,000 jobs against 10,000 offers (target: under 2 s in total).

Run: .venv/bin/python benchmarks/plan_bench.py [--calibrated] [--nodes N]
``--calibrated``: every job has three calibration records of its own model (measured on
L4, A100-80GB and H100 at another batch size: the nearby-configuration path, the
costliest), as a team's store would after a while. ``--nodes N``: every job may span up
to N nodes, and the 8-GPU offers are instance types with an inter-node fabric.
Offers are synthetic but shaped like real ones (every GPU model and count, on-demand and
spot, many regions/zones); jobs vary model, method, tokens, deadline and budget.
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime
from decimal import Decimal

from gpuopt.jobs.loader import parse_job_spec
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import PlacementContext, plan_job
from gpuopt.providers.fabrics import FABRICS
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.offer import Market, Offer

BASE_PRICE = {"T4": 0.5, "A10G": 1.0, "L4": 0.8, "L40S": 1.9, "V100": 3.0,
              "A100-40GB": 3.6, "A100-80GB": 4.5, "H100": 7.0}


def make_offers(n: int, rng: random.Random, now: datetime, fabrics: bool = False
                ) -> list[Offer]:
    offers: list[Offer] = []
    with_fabric = {c: sorted(t for cl, t in FABRICS if cl == c) for c in ("aws", "gcp", "azure")}
    gpus = [g for g in GPUS if g in BASE_PRICE]  # the data-centre GPUs it prices
    for i in range(n):
        gpu = rng.choice(gpus)
        count = rng.choice((1, 2, 4, 8))
        market = rng.choice((Market.ON_DEMAND, Market.SPOT, Market.SPOT))
        cloud = rng.choice(("aws", "gcp", "azure"))
        factor = 1.0 if market is Market.ON_DEMAND else rng.uniform(0.25, 0.7)
        price = BASE_PRICE[gpu] * count * factor * rng.uniform(0.9, 1.3)
        region = f"{cloud}-region-{i % 97}"
        itype = f"{gpu}-{count}-{i}"
        if fabrics and count == 8:  # (the key stays unique: the region and zone do)
            itype = with_fabric[cloud][i % len(with_fabric[cloud])]
            region = f"{cloud}-region-{i}"
        offers.append(Offer(
            cloud=cloud, region=region, zone=f"{region}-{i}" if market is Market.SPOT else None,
            instance_type=itype, gpu=gpu, gpu_count=count,
            gpu_memory_gib=GPUS[gpu].memory_gib, vcpus=8.0 * count, ram_gib=60.0 * count,
            market=market, price_per_hour=Decimal(f"{price:.4f}"), observed_at=now,
            source=f"api:{cloud}", interruption_bucket=rng.choice((None, 0, 1, 2, 3, 4)),
        ))
    return offers


def make_jobs(n: int, rng: random.Random) -> list[str]:
    models = ["llama-2-7b", "llama-2-13b", "mistral-7b", "llama-3-8b", "qwen2.5-7b",
              "phi-3-mini", "llama-2-70b", "mixtral-8x7b", "gpt2"]
    docs = []
    for i in range(n):
        model = rng.choice(models)
        kind = rng.random()
        if kind < 0.4:
            w = f"  type: finetune\n  method: qlora\n  tokens: {rng.randint(5, 300)}m\n"
        elif kind < 0.7:
            w = (f"  type: finetune\n  method: full\n  zero_stage: 3\n"
                 f"  gradient_checkpointing: true\n  tokens: {rng.randint(5, 100)}m\n")
        else:
            w = (f"  type: inference\n  requests: {rng.randint(1000, 100000)}\n"
                 f"  prompt_tokens: {rng.choice((256, 512, 1024))}\n  output_tokens: 256\n")
        extra = f"deadline: {rng.randint(24, 200)}h\nbudget: {rng.randint(50, 5000)}\n"
        docs.append(f"name: job-{i}\nmodel:\n  name: {model}\nworkload:\n{w}{extra}")
    return docs


def calibration_for(spec: object) -> object:
    from gpuopt.jobs.estimate.calibration import Calibration, record_for

    arch, w = spec.resolved_model(), spec.workload  # type: ignore[attr-defined]
    other = w.model_copy(update={"batch_size": w.batch_size * 2})
    return Calibration(tuple(record_for(arch, other, gpu, 1,
                                        tokens_per_second=1_000.0)
                             for gpu in ("L4", "A100-80GB", "H100")))


def main() -> None:
    import sys

    calibrated = "--calibrated" in sys.argv[1:]
    nodes = int(sys.argv[sys.argv.index("--nodes") + 1]) if "--nodes" in sys.argv else 1
    rng = random.Random(42)
    now = datetime(2026, 11, 30, tzinfo=UTC)
    offers = make_offers(10_000, rng, now, fabrics=nodes > 1)
    specs = [parse_job_spec(d, f"job-{i}.yaml") for i, d in enumerate(make_jobs(1000, rng))]
    calibrations = [calibration_for(s) if calibrated else None for s in specs]
    c0 = time.process_time()
    t0 = time.perf_counter()
    index = OfferIndex.build(offers)
    t1 = time.perf_counter()
    planned = 0
    for s, cal in zip(specs, calibrations, strict=True):
        ctx = PlacementContext(now=now, deadline_at=s.deadline_at(now), top=20,
                               calibration=cal, max_nodes=nodes)  # type: ignore[arg-type]
        plan = plan_job(s, index, ctx)
        planned += bool(plan.candidates)
    t2 = time.perf_counter()
    cpu = time.process_time() - c0
    print(f"index 10,000 offers: {(t1 - t0) * 1000:.0f} ms")
    up_to = f" (up to {nodes} nodes)" if nodes > 1 else ""
    print(f"plan 1,000 jobs{' (calibrated)' if calibrated else ''}{up_to}: {(t2 - t1):.2f} s "
          f"({planned} placed), "
          f"total {(t2 - t0):.2f} s wall, {cpu:.2f} s CPU (target < 2 s)")


if __name__ == "__main__":
    main()
