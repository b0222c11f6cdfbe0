"""Builders shared by the planner's step tests: a job, an offer, a context, and one
fitting configuration of a GPU model (found by the planner's own step)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from gpuopt.jobs.estimate.runtime import EstimateCache
from gpuopt.jobs.loader import parse_job_spec
from gpuopt.jobs.spec import JobSpec
from gpuopt.policies.plan.configurations import Configuration, search_model
from gpuopt.policies.plan.model import PlacementContext
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.offer import Market, Offer

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
QLORA = ("  type: finetune\n  method: qlora\n  tokens: 40m\n  batch_size: 1\n"
         "  seq_len: 1024\n  gradient_checkpointing: true\n")


def job(extra: str = "", workload: str = QLORA, model: str = "llama-2-7b") -> JobSpec:
    return parse_job_spec(f"name: t\nmodel:\n  name: {model}\nworkload:\n{workload}{extra}",
                          "job.yaml")


def offer(gpu: str, count: int, price: str, market: Market = Market.ON_DEMAND, *,
          cloud: str = "aws", region: str = "us-east-1", zone: str | None = None,
          bucket: int | None = None) -> Offer:
    return Offer(
        cloud=cloud, region=region, zone=zone, instance_type=f"{gpu.lower()}-x{count}",
        gpu=gpu, gpu_count=count, gpu_memory_gib=GPUS[gpu].memory_gib, vcpus=8.0 * count,
        ram_gib=64.0 * count, market=market, price_per_hour=Decimal(price), observed_at=NOW,
        source=f"api:{cloud}", interruption_bucket=bucket)


def ctx(**kw: object) -> PlacementContext:
    return PlacementContext(now=NOW, **kw)  # type: ignore[arg-type]


def configuration(spec: JobSpec, gpu: str, count: int = 1) -> Configuration:
    found = search_model(spec.resolved_model(), spec.workload, GPUS[gpu], [count], ctx(),
                         EstimateCache(None))
    assert found.configs, f"{gpu} x{count} does not fit"
    return found.configs[0]
