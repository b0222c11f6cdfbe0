"""`gpuopt plan job.yaml`: placements ranked by the expected cost of finishing the job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from datetime import datetime

    from rich.console import Console

    from gpuopt.orchestrator.reconcile.placement_inputs import PlannedJob
    from gpuopt.policies.placement import Candidate, Plan
    from gpuopt.providers.snapshot import Places


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
    from gpuopt.orchestrator.cli.remote import remote_or_none

    if (remote := remote_or_none()) is not None:
        from gpuopt.orchestrator.cli import remote_cmds

        remote_cmds.plan(remote, job_file, top, minimize, as_json)
        return
    from datetime import UTC, datetime

    from gpuopt.core.errors import UserError
    from gpuopt.jobs.loader import load_job_spec
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.placement_inputs import plan_spec
    from gpuopt.orchestrator.store import open_store_if_exists
    from gpuopt.orchestrator.submit.service import fits_nowhere_reason

    if minimize not in ("cost", "time"):
        raise UserError(f"--minimize {minimize}: choose cost or time", exit_code=2)
    now = datetime.now(UTC)
    spec = load_job_spec(job_file, purpose="plan", now=now)
    settings = load_config(config)
    store = open_store_if_exists(settings.database.url)
    try:
        planned = plan_spec(spec, settings, store, now, top=top, minimize=minimize,
                            hint_nodes=True)
    finally:
        if store is not None:
            store.close()
    if as_json:
        from gpuopt.policies.plan.places import places_of

        plan = planned.plan

        def row(c: Candidate) -> dict[str, object]:
            # a "global" offer (RunPod): how many data centres it stands for, else None
            n = len(places_of(c.offer, planned.places))
            return {**c.to_json(), "data_centres": n or None}

        typer.echo(json.dumps({
            "minimize": minimize,
            "candidates": [row(c) for c in plan.candidates],
            "frontier": [row(c) for c in plan.frontier],
            "excluded": [{"gpu": e.gpu, "reason": e.reason} for e in plan.excluded],
            "nearest_miss": plan.nearest_miss,
            "advice": list(planned.advice),
            "more_nodes": planned.nodes_hint,
        }, indent=2))
    else:
        print_plan(spec.name or job_file.name, planned, wide=wide, now=now)
    from gpuopt.orchestrator.cli.console import err_console
    from gpuopt.orchestrator.cli.gpu_names import bare_gpu_notes

    for note in bare_gpu_notes(job_file.read_text(encoding="utf-8")):
        err_console().print(f"note: {note}", markup=False, highlight=False)
    if not planned.plan.candidates:
        raise UserError(f"{job_file}: fits nowhere: {fits_nowhere_reason(planned)}",
                        exit_code=FITS_NOWHERE)


FITS_NOWHERE = 3  # the exit code of plan and submit when no placement is within the limits
# (submit_service.NoFit's)


def print_plan(title: str, planned: PlannedJob, *, wide: bool = False,
               now: datetime | None = None, console: Console | None = None) -> None:
    from rich.markup import escape

    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.snapshot_age import prices_source
    from gpuopt.orchestrator.cli.tables import (
        ID,
        NUM,
        Col,
        choose_columns,
        print_table,
        table_width,
    )

    console = console or out_console()
    plan = planned.plan
    days = sorted({c.offer.observed_at.date() for c in plan.candidates})
    src = (prices_source("snapshot", days[0], now, days[-1])
           if planned.offers_source == "snapshot" and days
           else prices_source(planned.offers_source, planned.snapshot_as_of, now,
                              planned.snapshot_newest))
    # Narrower terminals drop the instance, # and risk (preempt. says it in numbers), then
    # shorten places (aws/use1a, vast/US-NA), then drop preempt. GPUs, where, market,
    # $/h, est. h and expected $ are the answer and always stay.
    cols = [Col("#", NUM, optional=3), Col("GPUs", ID), Col("where", ID),
            Col("instance", ID, optional=4), Col("market", ID), Col("$/h", NUM),
            Col("est. h", NUM), Col("expected $", NUM),
            Col("risk", ID, optional=2), Col("preempt.", NUM, optional=1)]
    rows = [plan_row(i, c, short=False, places=planned.places)
            for i, c in enumerate(plan.candidates, 1)]
    with_preempt = [i for i, col in enumerate(cols) if col.optional in (0, 1)]
    if not wide and table_width(cols, rows, with_preempt) > console.width:
        # short places, and what was dropped before them stays dropped
        rows = [[cell for cell, col in zip(plan_row(i, c, short=True, places=planned.places),
                                           cols, strict=True)
                 if col.optional in (0, 1)] for i, c in enumerate(plan.candidates, 1)]
        cols = [cols[i] for i in with_preempt]
    if plan.candidates:
        print_table(console, cols, rows, wide=wide,
                    title=f"{title}: {len(plan.candidates)} cheapest placements "
                    f"({planned.offer_count} offers, {src})")
    else:
        console.print(f"[bold]{escape(title)}: no placement within the limits[/] "
                      f"({planned.offer_count} offers, {escape(src)})")
    if plan.candidates:
        from gpuopt.orchestrator.cli.provenance import launchable_lines, price_sources

        # Two lines that each fit 80 columns (messages are never wrapped for the width).
        legend = "expected $ includes expected preemption losses; od = on-demand"
        if any(cols[i].header == "preempt." for i in choose_columns(cols, rows, console.width,
                                                                   wide)):
            legend += "\npreempt. = expected preemptions over the run"
        console.print(legend, style="dim")
        if any(c.nodes > 1 for c in plan.candidates):
            console.print("2x8xH100 = 2 nodes of 8 H100 each; $/h of all the nodes",
                          style="dim")
        shown = [c.offer for c in plan.candidates]
        console.print(escape(price_sources(shown)), style="dim")
        for line in launchable_lines(o.cloud for o in shown):
            console.print(escape(line), style="dim")
        for line in measured_notes(plan):
            console.print(escape(line), style="dim")
    if plan.best is not None:
        console.print(f"[bold]Pick:[/] {escape(plan.best.reason)}")
        lo, hi = plan.best.cost_range
        console.print(f"expected ${plan.best.expected_cost:,.2f}; p10-p90 of the "
                      f"estimate's error: ${lo:,.2f} to ${hi:,.2f}", style="dim")
        print_frontier(plan, console)
    if plan.excluded:
        console.print("[bold]Left out:[/]")
        for ex in plan.excluded:
            console.print(f"  {ex.gpu}: {escape(ex.reason)}")
    if planned.nodes_hint:
        console.print(f"[bold]More nodes:[/] {escape(planned.nodes_hint)}")
    for line in planned.advice:
        console.print(f"[bold]Would fit:[/] {escape(line)}", soft_wrap=True)


def plan_row(i: int, c: Candidate, *, short: bool, places: Places | None = None
             ) -> list[str]:
    """One placement's cells; ``short`` names its place in the short form (aws/use1a);
    a "global" offer with known ``places`` says how many data centres it stands for."""
    from gpuopt.core.places import short_place
    from gpuopt.orchestrator.cli.tables import short_market
    from gpuopt.policies.plan.places import where_label

    o = c.offer
    where = where_label(o, places or {}, short=short) or (
        short_place(o.cloud, o.region, o.zone) if short else f"{o.cloud}/{o.zone or o.region}")
    return [str(i), gpus_cell(c), where, o.instance_type,
            short_market(o.market.value), f"{c.price_per_hour:,.2f}", f"{c.est_hours:,.1f}",
            f"{c.expected_cost:,.2f}", c.risk_level,
            f"{c.expected_preemptions:.1f}" if o.market.value == "spot" else "-"]


def gpus_cell(c: Candidate) -> str:
    """'8xH100', or '2x8xH100' for two nodes of eight."""
    one = f"{c.offer.gpu_count}x{c.offer.gpu}"
    return one if c.nodes == 1 else f"{c.nodes}x{one}"


def measured_notes(plan: Plan) -> list[str]:
    """Which shown configurations' figures come from measured runs (gpuopt calibration)."""
    seen: dict[str, list[str]] = {}
    for c in (*plan.candidates, *plan.frontier):
        key = c.shape
        if key in seen:
            continue
        notes = []
        if c.runtime.source != "model":
            notes.append(f"est. h from tokens/s {c.runtime.source}")
        if c.fit.memory_source != "model":
            notes.append(f"memory {c.fit.memory_source}")
        seen[key] = notes
    return [f"{key}: {', '.join(notes)}" for key, notes in seen.items() if notes]


FRONTIER_WIDTH = 80  # a frontier line's most characters (an 80-column terminal)


def frontier_lines(plan: Plan) -> list[str]:
    """The cost/time frontier below the pick, one placement a line (fits 80 columns: a
    line that would not names its market and place short, od aws/use1a)."""
    from gpuopt.core.places import short_place
    from gpuopt.orchestrator.cli.tables import short_market

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
        head = f"  {hours:>8} h {'$' + format(c.expected_cost, ',.2f'):>11}  {c.shape}{layout}"
        line = f"{head} {o.market.value} {o.cloud} {o.zone or o.region}"
        if len(line) > FRONTIER_WIDTH:
            line = (f"{head} {short_market(o.market.value)} "
                    f"{short_place(o.cloud, o.region, o.zone)}")
        out.append(line)
    return out


def print_frontier(plan: Plan, console: Console | None = None) -> None:
    from rich.markup import escape

    from gpuopt.orchestrator.cli.console import out_console

    console = console or out_console()
    lines = frontier_lines(plan)
    console.print(f"[bold]{escape(lines[0])}[/]", soft_wrap=True)
    for line in lines[1:]:
        console.print(escape(line), soft_wrap=True, highlight=False)
