"""`gpuopt simulate`: replay a spot policy on availability traces (or sweep many starts)."""

from __future__ import annotations

import json
import math
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpuopt.policies.hazard import RESTART_OVERHEAD_HOURS

if TYPE_CHECKING:
    from gpuopt.orchestrator.simulate.traces import Trace
    from gpuopt.policies.spot.model import Information
    from gpuopt.policies.spot.replay import Scenario, SimResult
    from gpuopt.policies.spot.sweep import Job, SweepResult, TraceSet

EXIT_BAD_INPUT = 2
ENGINES = ("replay", "daemon")
BASELINES = ("on-demand", "greedy", "uniform-progress", "uniform-progress-zones")


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)


def _bad(message: str) -> Exception:
    from gpuopt.core.errors import UserError

    return UserError(message, exit_code=EXIT_BAD_INPUT)


def _money(value: str, flag: str) -> Decimal:
    try:
        d = Decimal(value)
    except InvalidOperation:
        raise _bad(f"{flag} {value!r}: give a price in USD per hour, e.g. 0.9731") from None
    if not d.is_finite() or d < 0:
        raise _bad(f"{flag} {value!r}: the price must be a number >= 0")
    return d


def _seconds(hours: float, flag: str, *, positive: bool = True) -> float:
    if not math.isfinite(hours) or hours < 0 or (positive and hours == 0):
        raise _bad(f"{flag} {hours:g}: must be a number {'> 0' if positive else '>= 0'}")
    return float(Decimal(repr(hours)) * 3600)


def simulate(
    trace: Annotated[
        list[Path],
        typer.Option("--trace", help="Trace JSON (repeat for several zones; a folder = its "
                     "*.json files)."),
    ],
    task_hours: Annotated[float, typer.Option("--task-hours", help="Work to do, hours.")],
    deadline_hours: Annotated[
        list[float],
        typer.Option("--deadline-hours", help="Deadline after start, hours (repeatable with "
                     "--sweep: one table per deadline, and the points of --plot)."),
    ],
    restart_overhead_hours: Annotated[
        float, typer.Option("--restart-overhead-hours", help="Lost per (re)start, hours.")
    ] = RESTART_OVERHEAD_HOURS,
    spot_price: Annotated[
        str, typer.Option("--spot-price", help="Spot USD/h (default: p3.2xlarge, as the paper).")
    ] = "0.9731",
    on_demand_price: Annotated[
        str, typer.Option("--on-demand-price", help="On-demand USD/h.")
    ] = "3.06",
    start_hour: Annotated[
        float, typer.Option("--start-hour", help="Offset into the trace, hours.")
    ] = 0.0,
    policy: Annotated[
        str, typer.Option("--policy", help="auto | on-demand | greedy | uniform-progress | "
                            "uniform-progress-zones")
    ] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    sweep: Annotated[
        bool, typer.Option("--sweep", help="Replay many start offsets, all policies, with the "
                           "omniscient optimum as yardstick.")
    ] = False,
    starts: Annotated[
        int, typer.Option("--starts", help="With --sweep: start offsets per trace set.")
    ] = 24,
    zones: Annotated[
        str, typer.Option("--zones", help="With --sweep: single (each trace alone), multi "
                          "(traces of one folder and instance type together), or both.")
    ] = "both",
    plot: Annotated[
        Path | None, typer.Option("--plot", help="With --sweep: draw mean cost vs deadline "
                                  "to this PNG.")
    ] = None,
    information: Annotated[
        str | None, typer.Option("--information", help="What the policy learns of spot: tick "
                          "(every zone's availability each tick, the published model), launch "
                          "(only what launches and the held spot tell, as the daemon), "
                          "launch-probe (the same, launching spot from a held attempt "
                          "without stopping it first, as the daemon with [spot] probe) or "
                          "launch-probe+signals (and the clouds' capacity signals, derived from "
                          "the traces; as the daemon with [spot] signals). "
                          "Default: tick with --engine replay, launch with --engine daemon.")
    ] = None,
    engine: Annotated[
        str, typer.Option("--engine", help="replay (the trace replay, fast) or daemon (the "
                          "daemon's real reconcile step, placement and policy on a throwaway "
                          "store, launches answered from the traces; slow).")
    ] = "replay",
) -> None:
    """Replay a spot / on-demand policy on real spot-availability traces.

    Example: gpuopt simulate --trace us-west-2a_v100_1.json --task-hours 48 --deadline-hours 52
    """
    from gpuopt.orchestrator.simulate.traces import load_traces
    from gpuopt.policies.spot.registry import POLICIES
    from gpuopt.policies.spot.sweep import Job

    if policy not in POLICIES:
        raise _bad(f"--policy {policy!r}: choose one of {', '.join(POLICIES)}")
    if engine not in ENGINES:
        raise _bad(f"--engine {engine!r}: choose one of {', '.join(ENGINES)}")
    info = _engine_information(engine, information)
    task_s = _seconds(task_hours, "--task-hours")
    overhead_s = _seconds(restart_overhead_hours, "--restart-overhead-hours", positive=False)
    deadlines = [_seconds(h, "--deadline-hours") for h in deadline_hours]
    for h, d in zip(deadline_hours, deadlines, strict=True):
        if d < task_s:
            raise _bad(f"--deadline-hours {h:g} is shorter than --task-hours {task_hours:g}: "
                       "give a deadline at least as long as the task")
    job = Job(task_s, overhead_s, _money(spot_price, "--spot-price"),
              _money(on_demand_price, "--on-demand-price"))
    traces = load_traces(trace)
    if sweep:
        if engine == "daemon":
            raise _bad("--engine daemon replays one run (it is slow); for a sweep use "
                       "benchmarks/simulate_sweep.py --engine daemon")
        if zones not in ("single", "multi", "both"):
            raise _bad(f"--zones {zones!r}: choose single, multi or both")
        if starts < 1:
            raise _bad("--starts must be >= 1")
        _run_sweep(traces, job, deadlines, starts, zones, plot, as_json, info)
        return
    if plot is not None:
        raise _bad("--plot draws the curve of a sweep: add --sweep")
    if len(deadlines) != 1:
        raise _bad("give exactly one --deadline-hours (several only with --sweep)")
    _run_one(traces, job, deadlines[0], start_hour, policy, as_json, info, engine)


def _engine_information(engine: str, information: str | None) -> Information:
    """The information model: what the policy learns of spot. The daemon learns only
    from launches and what it holds, so ``--engine daemon`` runs ``launch`` (stop, then
    launch), ``launch-probe`` (make before break, ``[spot] probe``) or
    ``launch-probe+signals`` (and ``[spot] signals``, the signals recorded as its polls
    would record them)."""
    from gpuopt.policies.spot.model import Information

    default = Information.LAUNCH if engine == "daemon" else Information.TICK
    info = default if information is None else _information(information)
    if engine == "daemon" and info is Information.TICK:
        raise _bad(f"--information {info.value}: --engine daemon runs the launch "
                   "information model only (the daemon learns of spot only from its "
                   "launches and the spot it holds): launch or launch-probe; drop "
                   "--information or use --engine replay")
    return info


def _information(value: str) -> Information:
    from gpuopt.policies.spot.model import Information

    try:
        return Information(value)
    except ValueError:
        choices = ", ".join(i.value for i in Information)
        raise _bad(f"--information {value!r}: choose one of {choices}") from None


def _run_one(traces: list[Trace], job: Job, deadline_s: float, start_hour: float,
             policy: str, as_json: bool, information: Information,
             engine: str = "replay") -> None:
    from gpuopt.orchestrator.simulate.traces import one_gap
    from gpuopt.policies.spot.registry import get_policy
    from gpuopt.policies.spot.replay import Scenario
    from gpuopt.policies.spot.replay import simulate as replay
    gap = one_gap(traces)
    start_s = _seconds(start_hour, "--start-hour", positive=False)
    start_tick = math.ceil(start_s / gap)
    ticks = min(len(t.data) for t in traces)
    need = math.ceil(deadline_s / gap)
    if need > ticks:  # no start fits: the deadline is what is too long
        raise _bad(f"--deadline-hours {deadline_s / 3600:g}: longer than the trace "
                   f"({ticks * gap / 3600:.1f} h); give a deadline <= {ticks * gap / 3600:.1f} h "
                   "or a longer trace")
    if start_tick + need > ticks:
        raise _bad(f"--start-hour {start_hour:g}: the trace ({ticks * gap / 3600:.1f} h) must "
                   f"cover the deadline window from the start; use a start <= "
                   f"{max(ticks - need, 0) * gap / 3600:.2f} h")
    sc = Scenario(
        traces=tuple(t.data for t in traces),
        gap_s=gap,
        task_s=job.task_s,
        deadline_s=deadline_s,
        restart_overhead_s=job.restart_overhead_s,
        spot_prices=tuple(job.spot_price for _ in traces),
        on_demand_price=job.on_demand_price,
        start_tick=start_tick,
    )
    if engine == "daemon":
        result = _run_daemon(sc, policy, as_json, information)
    else:
        result = replay(sc, get_policy(policy), information)
    if as_json:
        typer.echo(json.dumps(result_json(result, len(traces), engine)))
        return
    _print_result(result, policy, traces, deadline_s, information, engine)


def _run_daemon(sc: Scenario, policy: str, as_json: bool,
                information: Information | None = None) -> SimResult:
    """The daemon engine, with a transient progress bar on stderr (not with --json)."""
    from rich.progress import Progress

    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.cli.console import err_console
    from gpuopt.orchestrator.simulate.daemon_engine import run_daemon
    from gpuopt.policies.spot.probe import DEFAULT_PROBE_S
    from gpuopt.policies.spot.replay import SimulationError
    from gpuopt.policies.spot.replay_signals import DEFAULT_SIGNALS

    probing = information is not None and information.probes
    probe_s = DEFAULT_PROBE_S if probing else None
    signals = DEFAULT_SIGNALS if information is not None and information.signals else None
    with Progress(console=err_console(), transient=True, disable=as_json) as bar:
        task = bar.add_task("reconciling", total=sc.deadline_ticks)
        try:
            return run_daemon(sc, policy, progress=lambda t: bar.update(task, completed=t + 1),
                              probe_s=probe_s, signals=signals)
        except SimulationError as err:
            raise UserError(f"--engine daemon: {err}", exit_code=1) from None


def result_json(result: SimResult, locations: int, engine: str = "replay") -> dict[str, object]:
    return {
        "engine": engine,
        "cost": float(result.cost),
        "finish_hours": result.finish_s / 3600,
        "met_deadline": result.met_deadline,
        "preemptions": result.preemptions,
        "decisions": result.labels(locations),
    }


def _print_result(result: SimResult, policy: str, traces: list[Trace],
                  deadline_s: float, information: Information, engine: str = "replay") -> None:
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.tables import ID, NUM, Col, print_table

    labels = [h.label(len(traces)) for h in result.held()]
    gap = traces[0].gap_s
    held = {k: labels.count(k) * gap / 3600 for k in sorted(set(labels))}
    verdict = "met" if result.met_deadline else "MISSED"
    rows = [["cost", f"${result.cost:,.2f}"],
            ["finished", f"{result.finish_s / 3600:.2f} h of {deadline_s / 3600:g} h "
             f"({verdict})"],
            ["preemptions", str(result.preemptions)]]
    if information.value != "tick":
        rows.append(["failed launches", str(result.failed_launches)])
    if information.probes:  # tries refused and failed over to another in their tick
        rows.append(["refused tries", str(len(result.refused_at)
                                          + len(result.probes_failed_at))])
    rows += [[f"hours {k}", f"{hours:.2f}"] for k, hours in held.items()]
    print_table(out_console(), [Col("", ID), Col("value", NUM)], rows,
                title=f"{policy} on {', '.join(t.path.name for t in traces)} "
                      f"({information.value} information"
                      + (", daemon engine)" if engine == "daemon" else ")"))


def _run_sweep(traces: list[Trace], job: Job, deadlines: list[float], starts: int, zones: str,
               plot: Path | None, as_json: bool, information: Information) -> None:
    from rich.progress import Progress

    from gpuopt.orchestrator.cli.console import err_console
    from gpuopt.orchestrator.simulate.traces import sweep_sets
    from gpuopt.policies.spot.sweep import run_sweep, scenarios

    policies = ("auto", *BASELINES)
    sets = sweep_sets(traces, zones)
    total = sum(len(scenarios(sets, job, d, starts)) for d in deadlines)
    if total == 0:
        raise _bad("no start offset fits: the traces are shorter than the deadline window")
    with Progress(console=err_console(), transient=True, disable=as_json) as bar:
        task = bar.add_task("replaying", total=total)
        results = [
            run_sweep(sets, job, d, policies, starts, progress=lambda: bar.advance(task),
                      information=information)
            for d in deadlines
        ]
    if as_json:
        typer.echo(json.dumps([sweep_json(r) for r in results]))
    else:
        _print_sweep(results, sets)
    if plot is not None:
        draw_plot(results, plot)


def sweep_json(res: SweepResult) -> dict[str, object]:
    from gpuopt.policies.spot.sweep import OPTIMUM

    return {
        "deadline_hours": res.deadline_s / 3600,
        "runs": res.runs,
        "infeasible": res.infeasible,
        "policies": {
            name: {
                "mean_cost": float(st.mean),
                "worst_cost": float(st.worst),
                "misses": st.misses,
                "ratio_to_optimum": res.ratio(name),
            }
            for name, st in res.stats.items()
        },
        "yardstick": OPTIMUM,
    }


def _print_sweep(results: list[SweepResult], sets: list[TraceSet]) -> None:
    from rich.text import Text

    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.tables import ID, NUM, Col, print_table
    from gpuopt.policies.spot.sweep import OPTIMUM

    con = out_console()
    con.print(Text(f"{len(sets)} trace sets: " + ", ".join(s.name for s in sets)))
    cols = [Col("policy", ID), Col("mean $", NUM), Col("worst $", NUM), Col("misses", NUM),
            Col("x optimum", NUM)]
    for res in results:
        rows = []
        for name in (*res.policies, OPTIMUM):
            st = res.stats[name]
            ratio = res.ratio(name)
            rows.append([name, f"{st.mean:,.2f}", f"{st.worst:,.2f}", str(st.misses),
                         "-" if ratio is None else f"{ratio:.3f}"])
        print_table(con, cols, rows,
                    title=f"deadline {res.deadline_s / 3600:g} h: {res.runs} runs"
                    + (f" ({res.infeasible} infeasible windows skipped)" if res.infeasible
                       else ""))


def draw_plot(results: list[SweepResult], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gpuopt.policies.spot.sweep import OPTIMUM

    xs = [r.deadline_s / 3600 for r in results]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in (*results[0].policies, OPTIMUM):
        ax.plot(xs, [float(r.stats[name].mean) for r in results], marker="o", label=name)
    ax.set_xlabel("deadline (hours)")
    ax.set_ylabel("mean cost (USD)")
    ax.set_title("Mean cost vs deadline")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(out, dpi=120)
    except OSError as exc:
        raise _bad(f"--plot {out}: cannot write the PNG ({exc.strerror})") from None
    finally:
        plt.close(fig)
