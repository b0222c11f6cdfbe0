"""`gpuopt plan job.yaml`: placements ranked by the expected cost of finishing the job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from datetime import datetime

    from gpuopt.orchestrator.placement_inputs import PlannedJob
    from gpuopt.policies.placement import Plan


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)


def plan(
    job_file: Annotated[Path, typer.Argument(help="The job.yaml to place.")],
    top: Annotated[int, typer.Option("--top", min=1, help="How many placements to list.")] = 15,
    minimize: Annotated[
        str, typer.Option("--minimize", help="cost (default): the cheapest placement; time: "
                          "the fastest within the budget (and deadline).")
    ] = "cost",
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the ranked list, the cost/time frontier and what was left out "
        "as JSON.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help="Every column (instance type), "
                                       "however wide the terminal.")] = False,
    config: Annotated[
        Path | None, typer.Option("--config", help="Configuration file (TOML).")
    ] = None,
) -> None:
    """Rank where JOB_FILE would finish cheapest, within its deadline and budget.

    Example: gpuopt plan deploy/examples/qlora-7b.yaml --top 5 --minimize time
    """
    from datetime import UTC, datetime

    from gpuopt.core.errors import UserError
    from gpuopt.jobs.loader import load_job_spec
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.placement_inputs import plan_spec
    from gpuopt.orchestrator.store import open_store_if_exists

    if minimize not in ("cost", "time"):
        raise UserError(f"--minimize {minimize}: choose cost or time", exit_code=2)
    now = datetime.now(UTC)
    spec = load_job_spec(job_file, purpose="plan", now=now)
    settings = load_config(config)
    store = open_store_if_exists(settings.database.url)
    try:
        planned = plan_spec(spec, settings, store, now, top=top, minimize=minimize)
    finally:
        if store is not None:
            store.close()
    if as_json:
        plan = planned.plan
        typer.echo(json.dumps({
            "minimize": minimize,
            "candidates": [c.to_json() for c in plan.candidates],
            "frontier": [c.to_json() for c in plan.frontier],
            "excluded": [{"gpu": e.gpu, "reason": e.reason} for e in plan.excluded],
            "nearest_miss": plan.nearest_miss,
        }, indent=2))
        if not plan.candidates:
            raise typer.Exit(3)
        return
    print_plan(spec.name or job_file.name, planned, wide=wide, now=now)
    from gpuopt.orchestrator.cli.console import err_console
    from gpuopt.orchestrator.cli.gpu_names import bare_gpu_notes

    for note in bare_gpu_notes(job_file.read_text(encoding="utf-8")):
        err_console().print(f"note: {note}", markup=False, highlight=False)
    if not planned.plan.candidates:
        raise typer.Exit(3)


def print_plan(title: str, planned: PlannedJob, *, wide: bool = False,
               now: datetime | None = None) -> None:
    from rich.markup import escape

    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.snapshot_age import prices_source
    from gpuopt.orchestrator.cli.tables import ID, NUM, Col, print_table, short_market

    console = out_console()
    plan = planned.plan
    days = sorted({c.offer.observed_at.date() for c in plan.candidates})
    src = (prices_source("snapshot", days[0], now, days[-1])
           if planned.offers_source == "snapshot" and days
           else prices_source(planned.offers_source, planned.snapshot_as_of, now))
    # Narrower terminals drop, in this order: instance, #, risk, est. h.
    cols = [Col("#", NUM, optional=3), Col("GPUs", ID), Col("where", ID),
            Col("instance", ID, optional=4), Col("market", ID), Col("$/h", NUM),
            Col("est. h", NUM, optional=1), Col("expected $", NUM),
            Col("risk", ID, optional=2), Col("preempt.", NUM)]
    rows = []
    for i, c in enumerate(plan.candidates, 1):
        o = c.offer
        spot = o.market.value == "spot"
        rows.append([
            str(i), f"{o.gpu_count}x{o.gpu}", f"{o.cloud}/{o.zone or o.region}",
            o.instance_type, short_market(o.market.value), f"{o.price_per_hour:,.2f}",
            f"{c.est_hours:,.1f}", f"{c.expected_cost:,.2f}", c.risk_level,
            f"{c.expected_preemptions:.1f}" if spot else "-",
        ])
    print_table(console, cols, rows, wide=wide,
                title=f"{title}: {len(plan.candidates)} cheapest placements "
                f"({planned.offer_count} offers, {src})")
    if plan.candidates:
        from gpuopt.orchestrator.cli.provenance import launchable_lines, price_sources

        # Two lines that each fit 80 columns (messages are never wrapped for the width).
        console.print("expected $ includes expected preemption losses; od = on-demand\n"
                      "preempt. = expected preemptions over the run", style="dim")
        shown = [c.offer for c in plan.candidates]
        console.print(escape(price_sources(shown)), style="dim")
        for line in launchable_lines(o.cloud for o in shown):
            console.print(escape(line), style="dim")
        for line in measured_notes(plan):
            console.print(escape(line), style="dim")
    if plan.best is not None:
        console.print(f"[bold]Pick:[/] {escape(plan.best.reason)}")
        print_frontier(plan)
    if plan.excluded:
        console.print("[bold]Left out:[/]")
        for ex in plan.excluded:
            console.print(f"  {ex.gpu}: {escape(ex.reason)}")
    if plan.nearest_miss:
        console.print(f"[bold red]Fits nowhere:[/] {escape(plan.nearest_miss)}")


def measured_notes(plan: Plan) -> list[str]:
    """Which shown configurations' figures come from measured runs (gpuopt calibration)."""
    seen: dict[str, list[str]] = {}
    for c in (*plan.candidates, *plan.frontier):
        key = f"{c.offer.gpu} x{c.offer.gpu_count}"
        if key in seen:
            continue
        notes = []
        if c.runtime.source != "model":
            notes.append(f"est. h from tokens/s {c.runtime.source}")
        if c.fit.memory_source != "model":
            notes.append(f"memory {c.fit.memory_source}")
        seen[key] = notes
    return [f"{key}: {', '.join(notes)}" for key, notes in seen.items() if notes]


def frontier_lines(plan: Plan) -> list[str]:
    """The cost/time frontier below the pick, one placement a line (fits 80 columns)."""
    best = plan.best
    rows = [c for c in plan.frontier if best is None or c.offer.key != best.offer.key]
    if best is not None:
        rows = [c for c in rows if c.expected_hours < best.expected_hours
                or c.expected_cost < best.expected_cost]
    if not rows:
        return ["Frontier: nothing else is faster for its price within the limits"]
    out = ["Frontier (faster for more, or cheaper and slower; expected):"]
    for c in rows:
        o = c.offer
        layout = f" {c.runtime.layout}" if c.runtime.layout not in ("", "1 GPU") else ""
        hours = format(c.expected_hours, ",.1f" if c.expected_hours >= 10 else ".2f")
        out.append(f"  {hours:>8} h {'$' + format(c.expected_cost, ',.2f'):>11}"
                   f"  {o.gpu} x{o.gpu_count}{layout} {o.market.value} {o.cloud} "
                   f"{o.zone or o.region}")
    return out


def print_frontier(plan: Plan) -> None:
    from rich.markup import escape

    from gpuopt.orchestrator.cli.console import out_console

    console = out_console()
    lines = frontier_lines(plan)
    console.print(f"[bold]{escape(lines[0])}[/]", soft_wrap=True)
    for line in lines[1:]:
        console.print(escape(line), soft_wrap=True, highlight=False)
