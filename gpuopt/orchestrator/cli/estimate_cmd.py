"""`gpuopt estimate job.yaml`: the memory breakdown and the smallest GPU count that fits."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpuopt.orchestrator.cli.completion import complete_gpu

if TYPE_CHECKING:
    from rich.console import Console

    from gpuopt.jobs.estimate.calibration import Calibration
    from gpuopt.jobs.estimate.fit import Fit
    from gpuopt.jobs.estimate.memory.breakdown import MemoryEstimate
    from gpuopt.jobs.estimate.runtime import EstimateCache, RuntimeEstimate
    from gpuopt.jobs.spec import JobSpec


def register(app: typer.Typer) -> None:
    app.command("estimate")(estimate)


def _parse_gpu(value: str) -> tuple[str, int | None]:
    from gpuopt.core.errors import UserError
    from gpuopt.providers.hardware import get_gpu

    name, _, count_text = value.partition(":")
    count: int | None = None
    if count_text:
        try:
            count = int(count_text)
        except ValueError:
            count = 0
        if count < 1:
            raise UserError(f"--gpu {value}: the count after ':' must be a whole number >= 1",
                            exit_code=2)
    return get_gpu(name).name, count


def estimate(
    job_file: Annotated[Path, typer.Argument(help="The job.yaml to estimate.")],
    gpu: Annotated[
        str | None, typer.Option("--gpu", help="Estimate one configuration: NAME[:COUNT].",
                                   autocompletion=complete_gpu)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Estimate peak GPU memory of a job and the smallest GPU count that fits it.

    Example: gpuopt estimate deploy/examples/qlora-7b.yaml --gpu A100-40GB:1 --json
    """
    from gpuopt.orchestrator.cli.remote import remote_or_none

    if (remote := remote_or_none()) is not None:
        from gpuopt.orchestrator.cli import remote_cmds

        remote_cmds.estimate(remote, job_file, gpu, as_json)
        return
    from gpuopt.jobs.loader import load_job_spec

    spec = load_job_spec(job_file, purpose="estimate")
    result = estimate_spec(spec, gpu, _calibration(spec))
    if as_json:
        typer.echo(json.dumps(result.doc))
        return
    result.print(spec.name or job_file.name)


@dataclass
class EstimateResult:
    doc: dict[str, object]  # what --json prints
    model: str
    gpus: int
    breakdown: dict[str, float]
    rows: list[tuple[str, Fit | None]]
    runtimes: dict[str, RuntimeEstimate | None]

    def print(self, title: str, console: Console | None = None) -> None:
        _print_tables(title, self.model, self.gpus, self.breakdown, self.rows, self.runtimes,
                      console)


def estimate_spec(spec: JobSpec, gpu: str | None,
                  calibration: Calibration | None) -> EstimateResult:
    """Peak memory, the smallest fit per GPU and the runtime there (``gpu``: NAME[:COUNT]
    only; ``calibration``: what finished attempts of this model measured)."""
    from gpuopt.jobs.estimate.fit import candidate_counts, check_fit, fits_for_all, smallest_fit
    from gpuopt.jobs.estimate.memory import GIB
    from gpuopt.jobs.estimate.runtime import EstimateCache
    from gpuopt.providers.hardware import GPUS

    arch, workload = spec.resolved_model(), spec.workload
    max_gpus = spec.resources.max_gpus_per_node
    cache = EstimateCache(calibration)

    def memory(count: int) -> MemoryEstimate:
        return cache.get(count, arch, workload)

    # the counts the job can run on (training: multiples of its tensor x pipeline x
    # context parallel GPUs): the breakdown on the least, the speed of a job that fits
    # nowhere on the most
    counts = candidate_counts(arch, workload, max_gpus) or (workload.model_parallel,)

    if gpu is not None:
        name, count = _parse_gpu(gpu)
        if count is None:
            found = smallest_fit(arch, workload, GPUS[name], max_gpus, memory)
            count = found.count if found else counts[0]
        est = memory(count)
        one = check_fit(GPUS[name], count, est, workload)
        fits = {name: one if one.fits else None}
        rows: list[tuple[str, Fit | None]] = [(name, one)]
    else:
        est = memory(counts[0])
        fits = fits_for_all(arch, workload, spec.resources.gpus, max_gpus, memory)
        rows = [(n, f) for n, f in fits.items()]
    breakdown = {k: v / GIB for k, v in est.components.items()}
    # the runtime also where the memory does not fit (marked), so that an over-estimate
    # of memory cannot hide the speed: on the largest count tried
    runtimes = {name: _runtime(spec, name, f.count if f and f.fits else counts[-1], cache)
                for name, f in rows}
    doc: dict[str, object] = {
        "per_gpu_gib": round(est.total_bytes / GIB, 3),
        "memory_source": est.source,
        "breakdown": {k: round(v, 3) for k, v in breakdown.items()},
        "fits": [
            {**f.to_json(), **_runtime_json(runtimes.get(n), workload.type)}
            for n, f in fits.items() if f is not None
        ],
        "does_not_fit": [
            {"gpu": n, **_runtime_json(runtimes.get(n), workload.type),
             "memory_fits": False}
            for n, f in rows if f is None or not f.fits
        ],
    }
    if gpu is not None:
        doc.update(_runtime_json(runtimes.get(rows[0][0]), workload.type))
    return EstimateResult(doc, arch.name, est.gpus, breakdown, rows, runtimes)


def _calibration(spec: JobSpec) -> Calibration | None:
    """The stored calibration records of this job's model, if there is a store."""
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.measurements import load_calibration
    from gpuopt.orchestrator.store import open_store_if_exists

    store = open_store_if_exists(load_config(None).database.url)
    if store is None:
        return None
    try:
        return load_calibration(store, spec)
    finally:
        store.close()


def _runtime(spec: JobSpec, gpu: str, count: int,
             cache: EstimateCache | None = None) -> RuntimeEstimate | None:
    """Hours and tokens/s on that configuration; None when the job does not state its
    amount of work (tokens / requests): memory needs neither."""
    from gpuopt.jobs.estimate.runtime import estimate_runtime
    from gpuopt.providers.hardware import GPUS

    try:
        return estimate_runtime(spec.resolved_model(), spec.workload, GPUS[gpu], count, cache)
    except ValueError:  # no tokens / epochs x dataset_tokens, or no requests
        return None


def _runtime_json(rt: RuntimeEstimate | None, kind: str = "finetune") -> dict[str, object]:
    """Hours with p10 / p90 from the held-out error of the corpus (docs/estimates.md):
    a model that measured r x the real throughput takes hours x r."""
    from gpuopt.jobs.estimate.fitted import RATIO_INTERVALS

    if rt is None:
        return {"est_hours": None, "tokens_per_second": None, "runtime_source": "model"}
    lo, hi = RATIO_INTERVALS.get(kind, (1.0, 1.0))
    return {"est_hours": round(rt.hours, 4), "est_hours_p10": round(rt.hours * lo, 4),
            "est_hours_p90": round(rt.hours * hi, 4),
            "tokens_per_second": round(rt.tokens_per_second, 1),
            "layout": rt.layout, "runtime_source": rt.source}


def _print_tables(title: str, model: str, gpus: int, breakdown: dict[str, float],
                  rows: list[tuple[str, Fit | None]],
                  runtimes: dict[str, RuntimeEstimate | None],
                  console: Console | None = None) -> None:
    from rich.markup import escape

    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.tables import ID, NUM, Col, print_table

    console = console or out_console()
    console.print(f"[bold]{escape(title)}[/] ({model}): peak memory per GPU on {gpus} GPU(s)")
    parts = [[key, f"{value:.2f}"] for key, value in breakdown.items() if value > 0]
    parts.append(["total", f"{sum(breakdown.values()):.2f}"])
    print_table(console, [Col("component", ID), Col("GiB", NUM)], parts)
    if breakdown.get("load_peak", 0) > 0:
        console.print("load_peak: the model build and checkpoint load reserve more than "
                      "the training step; the total is the load's peak, which the caching "
                      "allocator keeps reserved while training", soft_wrap=True)
    console.print()
    fit_rows = []
    for name, fit in rows:
        if fit is None or not fit.fits:
            rt = runtimes.get(name)
            fit_rows.append([name, "-", "-", "does not fit",
                             f"({rt.hours:,.1f})" if rt else "-",
                             f"({rt.tokens_per_second:,.0f})" if rt else "-"])
        else:
            rt = runtimes.get(name)
            fit_rows.append([name, str(fit.count), f"{fit.per_gpu_gib:.2f}",
                             f"{fit.free_gib:.2f}", f"{rt.hours:,.1f}" if rt else "-",
                             f"{rt.tokens_per_second:,.0f}" if rt else "-"])
    cols = [Col("GPU", ID), Col("count", NUM), Col("GiB/GPU", NUM), Col("free GiB", NUM),
            Col("est. h", NUM), Col("tokens/s", NUM)]
    print_table(console, cols, fit_rows,
                title="Smallest fit (usable: the engine's share, or 95% for training)")
    if any(f is None or not f.fits for _, f in rows):
        console.print("(h, tokens/s) in parentheses: where the memory does not fit, the "
                      "speed it would run at", soft_wrap=True)
    if rows and all(runtimes.get(n) is None for n, f in rows if f and f.fits):
        console.print("est. hours need the amount of work: workload.tokens (fine-tune) or "
                      "workload.requests (inference); memory needs neither", soft_wrap=True)
