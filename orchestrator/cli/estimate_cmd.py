"""`gpuopt estimate job.yaml`: the memory breakdown and the smallest GPU count that fits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from policies.fit import Fit


def register(app: typer.Typer) -> None:
    app.command("estimate")(estimate)


def _parse_gpu(value: str) -> tuple[str, int | None]:
    from providers.errors import UserError
    from providers.hardware import get_gpu

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
        str | None, typer.Option("--gpu", help="Estimate one configuration: NAME[:COUNT].")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Estimate peak GPU memory of a job and the smallest GPU count that fits it."""
    from jobs.loader import load_job_spec
    from jobs.memory import GIB, estimate_memory
    from policies.fit import check_fit, fits_for_all, smallest_fit
    from providers.hardware import GPUS

    spec = load_job_spec(job_file)
    arch, workload = spec.resolved_model(), spec.workload
    max_gpus = spec.resources.max_gpus_per_node
    if gpu is not None:
        name, count = _parse_gpu(gpu)
        if count is None:
            found = smallest_fit(arch, workload, GPUS[name], max_gpus)
            count = found.count if found else 1
        est = estimate_memory(arch, workload, count)
        one = check_fit(GPUS[name], count, est)
        fits = {name: one if one.fits else None}
        rows: list[tuple[str, Fit | None]] = [(name, one)]
    else:
        est = estimate_memory(arch, workload, 1)
        fits = fits_for_all(arch, workload, spec.resources.gpus, max_gpus)
        rows = [(n, f) for n, f in fits.items()]
    breakdown = {k: v / GIB for k, v in est.components.items()}
    if as_json:
        doc = {
            "per_gpu_gib": round(est.total_bytes / GIB, 3),
            "breakdown": {k: round(v, 3) for k, v in breakdown.items()},
            "fits": [f.to_json() for f in fits.values() if f is not None],
        }
        typer.echo(json.dumps(doc))
        return
    _print_tables(spec.name or job_file.name, arch.name, est.gpus, breakdown, rows)


def _print_tables(title: str, model: str, gpus: int, breakdown: dict[str, float],
                  rows: list[tuple[str, Fit | None]]) -> None:
    from rich.table import Table

    from orchestrator.cli.console import out_console
    from policies.fit import HEADROOM_FRACTION

    console = out_console()
    table = Table(title=f"{title} ({model}): peak per GPU, {gpus} GPU(s)", title_justify="left")
    table.add_column("component")
    table.add_column("GiB", justify="right")
    for key, value in breakdown.items():
        if value > 0:
            table.add_row(key, f"{value:.2f}")
    table.add_row("[bold]total[/]", f"[bold]{sum(breakdown.values()):.2f}[/]")
    console.print(table)
    fit_table = Table(
        title=f"Smallest fit (usable = {HEADROOM_FRACTION:.0%} of GPU memory)", title_justify="left"
    )
    for col in ("GPU", "count", "per GPU GiB", "free GiB"):
        fit_table.add_column(col, justify="left" if col == "GPU" else "right")
    for name, fit in rows:
        if fit is None or not fit.fits:
            fit_table.add_row(name, "-", "-", "[red]does not fit[/]")
        else:
            fit_table.add_row(name, str(fit.count), f"{fit.per_gpu_gib:.2f}",
                              f"{fit.free_gib:.2f}")
    console.print(fit_table)
