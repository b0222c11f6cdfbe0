"""`gpuopt prices` (latest offers), `prices refresh`, `prices history`, `prices held`,
`prices export-snapshot`."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpuopt.orchestrator.cli.completion import (
    complete_cloud,
    complete_gpu,
    complete_market,
    complete_region,
)
from gpuopt.orchestrator.cli.config_cmd import ConfigOption
from gpuopt.providers.clouds import cloud_names

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from datetime import date

    from rich.console import Console

    from gpuopt.orchestrator.config import Settings
    from gpuopt.orchestrator.prices.poll import CloudPollResult
    from gpuopt.orchestrator.store.price_history import HistoryPoint
    from gpuopt.providers.offer import Offer
    from gpuopt.providers.offer_filter import OfferFilter
    from gpuopt.providers.snapshot import Places

GpuOpt = Annotated[str | None, typer.Option("--gpu", help="GPU model, e.g. A100-80GB, H100.",
                                            autocompletion=complete_gpu)]
CloudOpt = Annotated[str | None, typer.Option("--cloud", help="One of the clouds: "
                                              f"{', '.join(cloud_names())}.",
                                              autocompletion=complete_cloud)]
MarketOpt = Annotated[
    str | None, typer.Option("--market", help="on-demand, spot, reserved-1y or reserved-3y.",
                             autocompletion=complete_market)
]
RegionOpt = Annotated[str | None, typer.Option("--region", help="e.g. us-east-1, us-central1.",
                                               autocompletion=complete_region)]
WideOpt = Annotated[bool, typer.Option("--wide", help="Every column (instance type, vCPU, "
                                       "RAM), however wide the terminal.")]


def _age(now: datetime, then: datetime) -> str:
    seconds = max(0, int((now - then).total_seconds()))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def from_group(ctx: typer.Context, name: str, value: Path | None) -> Path | None:
    from gpuopt.orchestrator.cli.group_options import from_group as group_value

    return group_value(ctx, name, value)


def _settings(config: Path | None) -> Settings:
    from gpuopt.orchestrator.config import load_config

    return load_config(config)


def show_prices(
    ctx: typer.Context,
    gpu: GpuOpt = None,
    cloud: CloudOpt = None,
    market: MarketOpt = None,
    region: RegionOpt = None,
    max_price: Annotated[
        float | None, typer.Option("--max-price", help="Max USD per GPU-hour.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print offers as JSON.")] = False,
    limit: Annotated[int, typer.Option("--limit", min=0,
                                       help="Rows in the table (0 = all).")] = 50,
    wide: WideOpt = False,
    config: ConfigOption = None,
) -> None:
    """Latest GPU prices, cheapest per GPU-hour first (snapshot when no history yet).

    Example: gpuopt prices --gpu H100 --market spot --limit 10
    """
    if ctx.invoked_subcommand is not None:
        from gpuopt.orchestrator.cli.group_options import refuse_unhonoured

        refuse_unhonoured(ctx, {"config"})  # the subcommands read it (from_group)
        return
    from gpuopt.orchestrator.cli.remote import remote_or_none

    if (remote := remote_or_none()) is not None:
        from gpuopt.orchestrator.cli import remote_cmds

        remote_cmds.prices(remote, gpu, cloud, market, region, max_price, limit, as_json)
        return
    from datetime import UTC

    from gpuopt.orchestrator.cli.console import err_console, out_console
    from gpuopt.orchestrator.prices.current import current_offers_with_source
    from gpuopt.orchestrator.store import open_store_if_exists
    from gpuopt.providers.offer_filter import OfferFilter

    flt = OfferFilter.build(gpu=gpu, cloud=cloud, market=market, region=region,
                            max_price_per_gpu_hour=max_price)
    settings = _settings(config)
    store = open_store_if_exists(settings.database.url)
    try:
        current = current_offers_with_source(store, flt)
    finally:
        if store is not None:
            store.close()
    if as_json:
        import json

        typer.echo(json.dumps([o.to_json() for o in current.offers], indent=1))
        return
    now = datetime.now(UTC)
    if current.source == "snapshot" and current.snapshot_as_of is not None:
        from gpuopt.orchestrator.cli.snapshot_age import snapshot_note

        note = snapshot_note(current.snapshot_as_of, now, current.snapshot_newest)
        err_console().print(f"No price history yet, showing the embedded snapshot: {note}",
                            style="yellow", markup=False)
    if not current.offers:
        err_console().print("no offers match these filters")
        return
    _offer_table(current.offers[: limit or None], now, out_console(), wide, current.places)
    if limit and len(current.offers) > limit:
        err_console().print(f"{len(current.offers) - limit} more offers (use --limit 0 for all)")


# "where" is cloud/region-or-zone, as `gpuopt plan` writes it. It wraps only when longer
# than the big clouds' places ("gcp/europe-west4-a"): a marketplace's location
# ("vast/United Kingdom, GB, EU") folds at its spaces instead of pushing the instance type
# out of an 80-column table.
WHERE_MIN = 18


def _where(o: Offer) -> str:
    return f"{o.cloud}/{o.zone or o.region}"

def _offer_table(offers: list[Offer], now: datetime, console: Console, wide: bool,
                 places: Places | None = None) -> None:
    """``places``: a "global" offer (RunPod) says how many data centres it stands for."""
    from gpuopt.core.places import short_place
    from gpuopt.orchestrator.cli.tables import (
        ID,
        NUM,
        Col,
        natural_width,
        print_table,
        short_market,
        table_width,
    )
    from gpuopt.policies.plan.places import where_label

    # Narrower terminals drop vCPU and RAM first, then the age and $/h (= $/GPU-h x GPUs),
    # then the instance type.
    cols = [Col("$/GPU-h", NUM), Col("$/h", NUM, optional=2), Col("GPUs", ID),
            Col("where", min_width=WHERE_MIN), Col("instance type", ID, optional=1),
            Col("market", ID), Col("vCPU", NUM, optional=3), Col("RAM GiB", NUM, optional=3),
            Col("age", NUM, optional=2)]
    def rows_with(where: Callable[[Offer], str]) -> list[list[str]]:
        return [[f"{o.price_per_gpu_hour:.4f}", f"{o.price_per_hour:,.4f}",
                 f"{o.gpu_count}x{o.gpu}", where(o), o.instance_type,
                 short_market(o.market.value), f"{o.vcpus:g}", f"{o.ram_gib:g}",
                 _age(now, o.observed_at)] for o in offers]

    known = places or {}
    rows = rows_with(lambda o: where_label(o, known) or _where(o))
    main = [i for i, c in enumerate(cols) if c.optional in (0, 1)]
    # A "global" offer's label folded over two lines ("runpod (48 data / centres)") reads
    # badly: its short form (runpod/48 DCs) when the table does not fit unwrapped.
    if not wide and natural_width(cols, rows, main) > console.width:
        rows = rows_with(lambda o: where_label(o, known, short=True) or _where(o))
    # A place too long to keep whole beside the instance type is shortened (aws/use1a)
    # rather than broken mid-word or the instance type dropped.
    if not wide and table_width(cols, rows, main) > console.width:
        rows = rows_with(lambda o: where_label(o, known, short=True)
                         or short_place(o.cloud, o.region, o.zone))
    print_table(console, cols, rows, wide=wide)


SOURCES = ("sdk", "skypilot-catalog")


def refresh(
    ctx: typer.Context,
    cloud: Annotated[
        list[str] | None, typer.Option("--cloud", help="Only this cloud (repeatable).",
                                       autocompletion=complete_cloud)
    ] = None,
    source: Annotated[str, typer.Option(
        "--source", help="sdk (each cloud's own API) or skypilot-catalog (SkyPilot's "
        "catalog files: every region and zone of every cloud in them).")] = "sdk",
    catalog_dir: Annotated[Path | None, typer.Option(
        "--catalog-dir", help="With --source skypilot-catalog: a directory of <cloud>/"
        "vms.csv files (default: [prices] catalog_dir, else the installed SkyPilot's).")
    ] = None,
    config: ConfigOption = None,
) -> None:
    """Poll the clouds now (or read SkyPilot's catalog files) and store what changed.

    Example: gpuopt prices refresh --cloud aws --cloud gcp
    Example: gpuopt prices refresh --source skypilot-catalog --catalog-dir ~/.sky/catalogs/v8
    """
    from datetime import UTC

    from gpuopt.core.errors import UserError

    if source not in SOURCES:
        raise UserError(f"--source {source!r}: use {' or '.join(SOURCES)}", exit_code=2)
    if catalog_dir is not None and source != "skypilot-catalog":
        raise UserError("--catalog-dir goes with --source skypilot-catalog", exit_code=2)
    if source == "skypilot-catalog":
        _refresh_from_catalog(cloud, catalog_dir, config)
        return

    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from gpuopt.orchestrator.cli.console import err_console, out_console
    from gpuopt.orchestrator.prices.poll import load_providers, poll_prices
    from gpuopt.orchestrator.store import open_store
    from gpuopt.providers.clouds import get_cloud

    settings = _settings(from_group(ctx, "config", config))
    clouds = tuple(cloud) if cloud else settings.clouds.poll_clouds()
    for name in clouds:
        get_cloud(name)  # UserError (exit 2) naming the known clouds
    providers = load_providers(clouds)
    _require_some_sdk(providers, explicit=bool(cloud))
    store = open_store(settings.database.url)
    regions = {c: settings.clouds.regions_for(c) for c in clouds}
    console = err_console()
    try:
        with Progress(SpinnerColumn(), TextColumn("{task.description:<8}"),
                      TextColumn("{task.fields[state]}"), TimeElapsedColumn(),
                      console=console, transient=False) as progress:
            tasks = {c: progress.add_task(c, total=1, state="waiting") for c in clouds}

            def on_progress(c: str, state: str) -> None:
                progress.update(tasks[c], state=state, completed=1 if state == "done" else 0)

            results = poll_prices(store, providers, datetime.now(UTC), regions, on_progress)
    finally:
        store.close()
    _print_poll(out_console(), results)
    if results and all(r.failed for r in results.values()):
        raise typer.Exit(1)


def _refresh_from_catalog(cloud: list[str] | None, catalog_dir: Path | None,
                          config: Path | None) -> None:
    """`prices refresh --source skypilot-catalog`: exit 2 when a file was refused (the
    others are stored), 1 when the directory has no catalog file gpuopt knows."""
    from datetime import UTC

    from rich.markup import escape

    from gpuopt.orchestrator.cli.console import err_console, out_console
    from gpuopt.orchestrator.prices.catalog_poll import catalog_dir as resolve_dir
    from gpuopt.orchestrator.prices.catalog_poll import poll_catalog
    from gpuopt.orchestrator.store import open_store
    from gpuopt.providers.clouds import get_cloud

    settings = _settings(config)
    for name in cloud or ():
        get_cloud(name)  # UserError (exit 2) naming the known clouds
    root = resolve_dir(catalog_dir or settings.prices.catalog_dir)
    store = open_store(settings.database.url)
    try:
        results, notes = poll_catalog(store, root, datetime.now(UTC),
                                      tuple(cloud) if cloud else None)
    finally:
        store.close()
    for note in notes:
        err_console().print(f"[yellow]note[/] {escape(note)}")
    if not results:
        err_console().print(f"{root}: no catalog file of a cloud gpuopt knows "
                            f"(<cloud>/vms.csv)", markup=False)
        raise typer.Exit(1)
    _print_poll(out_console(), results)
    if any(r.status == "error" for r in results.values()):
        raise typer.Exit(2)  # a file refused (it says which, where and why)


def _print_poll(out: Console, results: Mapping[str, CloudPollResult]) -> None:
    """What each cloud's poll stored, held and rejected. A cloud's words (errors, instance
    types, regions) are its own: printed as text, never as markup (and escaped by the
    console, see console.py)."""
    from rich.markup import escape

    for c, r in results.items():
        if r.status == "skipped":
            out.print(f"[yellow]{c}: skipped[/] - {escape(str(r.error))}")
            continue
        if r.status == "error":
            out.print(f"[red]{c}: failed[/] - {escape(str(r.error))}")
            continue
        held = f", {r.held} held (see `gpuopt prices held`)" if r.held else ""
        out.print(f"[green]{c}[/]: {r.new} new, {r.changed} changed, {r.unchanged} unchanged, "
                  f"{r.rejected} rejected{held}")
        for offer, before in r.changes[:CHANGES_SHOWN]:
            where = "/".join(p for p in (offer.region, offer.zone, offer.instance_type) if p)
            out.print(f"  {escape(where)} {offer.market.value}: {before} -> "
                      f"{offer.price_per_hour} $/h", highlight=False)
        if len(r.changes) > CHANGES_SHOWN:
            out.print(f"  ... {len(r.changes) - CHANGES_SHOWN} more changes "
                      f"(gpuopt prices history)", highlight=False)
        for line in r.rejections[:10]:
            out.print(f"  [red]rejected[/] {escape(line)}", highlight=False)
        for line in r.warnings[:10]:
            out.print(f"  [yellow]warning[/] {escape(line)}", highlight=False)


# A catalog file can move thousands of prices at once: the first ones are listed.
CHANGES_SHOWN = 50


def _require_some_sdk(providers: Mapping[str, object], explicit: bool) -> None:
    """Exit 2 with the ``pip install`` to run when a cloud asked for by name (--cloud), or
    every cloud, lacks its SDK extra; otherwise those clouds are skipped with the hint."""
    from gpuopt.core.errors import UserError
    from gpuopt.providers.extras import MissingExtra, install_hint

    missing = [c for c, p in providers.items() if isinstance(p, MissingExtra)]
    if missing and (explicit or len(missing) == len(providers)):
        raise UserError(
            f"polling {', '.join(missing)} prices needs the cloud SDKs, which this install "
            f"does not have: run {install_hint(*missing)}", exit_code=2)


def history(
    ctx: typer.Context,
    gpu: GpuOpt = None,
    market: MarketOpt = None,
    region: RegionOpt = None,
    cloud: CloudOpt = None,
    since: Annotated[str, typer.Option("--since", help="How far back, e.g. 30d, 12h.")] = "30d",
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write a chart (PNG) of $/GPU-h over time.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the points as JSON.")] = False,
    limit: Annotated[int, typer.Option("--limit", min=0, help="The newest N points in the "
                                       "table or JSON (0 = all; the chart has all).")] = 50,
    wide: WideOpt = False,
    config: ConfigOption = None,
) -> None:
    """The stored price series (one row per price change) and an optional chart.

    Before the first `gpuopt prices refresh` the embedded snapshot's prices are shown as
    the first point of each series (labelled "snapshot").

    Example: gpuopt prices history --gpu H100 --market spot --since 30d --plot h100.png
    """
    from datetime import UTC

    from gpuopt.core.durations import parse_duration
    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.cli.console import err_console, out_console
    from gpuopt.providers.offer_filter import OfferFilter

    try:
        window = parse_duration(since, positive=False, at_most=None,
                                examples="30d, 12h or 2w")
    except ValueError as err:
        raise UserError(f"--since: {err}", exit_code=2) from None
    flt = OfferFilter.build(gpu=gpu, cloud=cloud, market=market, region=region)
    now = datetime.now(UTC)
    points, as_of = _history_points(_settings(from_group(ctx, "config", config)), flt, now - window)
    if as_of is not None:
        from gpuopt.orchestrator.cli.snapshot_age import snapshot_note

        err_console().print(f"No price history yet: the embedded snapshot's prices are the "
                            f"first point ({snapshot_note(as_of, now)})", style="yellow",
                            markup=False)
    if not points:
        err_console().print("no prices match these filters in that window")
        raise typer.Exit(1)
    # The newest N stored points; of the snapshot (one point per offer), the cheapest N.
    shown = points if not limit else points[:limit] if as_of is not None else points[-limit:]
    if as_json:
        import json

        typer.echo(json.dumps([_point_json(p, as_of is not None) for p in shown], indent=1))
    else:
        _history_table(shown, as_of is not None, out_console(), wide)
        if len(shown) < len(points):
            err_console().print(f"{len(points) - len(shown)} more points "
                                "(use --limit 0 for all)")
    if plot is not None:
        from gpuopt.orchestrator.prices.chart import plot_history

        plot_history(points, plot, title=_title(flt), since=now - window, until=now)
        err_console().print(f"wrote {plot}")


def _history_points(settings: Settings, flt: OfferFilter, since: datetime,
                    ) -> tuple[list[HistoryPoint], date | None]:
    """The stored points since ``since``; on a store without any price yet, the embedded
    snapshot's matching offers as one point each (and the snapshot's date, else None)."""
    from gpuopt.orchestrator.store import open_store_if_exists
    from gpuopt.orchestrator.store.price_history import HistoryPoint, has_prices, price_history

    store = open_store_if_exists(settings.database.url)
    if store is not None:
        try:
            with store.session() as session:
                if has_prices(session):
                    return price_history(session, flt, since), None
        finally:
            store.close()
    from gpuopt.providers.snapshot import load_snapshot

    snap = load_snapshot()
    offers = sorted(flt.apply(snap.offers), key=lambda o: (o.price_per_gpu_hour, o.key))
    return [HistoryPoint(o, o.observed_at, o.observed_at) for o in offers], snap.as_of


def _point_json(p: HistoryPoint, snapshot: bool) -> dict[str, object]:
    o = p.offer
    return {"cloud": o.cloud, "region": o.region, "zone": o.zone,
            "instance_type": o.instance_type, "gpu": o.gpu, "gpu_count": o.gpu_count,
            "market": o.market.value, "price_per_hour": str(o.price_per_hour),
            "price_per_gpu_hour": str(o.price_per_gpu_hour),
            "first_seen": p.first_seen.isoformat(), "last_seen": p.last_seen.isoformat(),
            "source": "snapshot" if snapshot else "store"}


def _history_table(points: list[HistoryPoint], snapshot: bool, console: Console,
                   wide: bool) -> None:
    from gpuopt.orchestrator.cli.tables import ID, NUM, Col, print_table, short_market

    cols = [Col("where", min_width=WHERE_MIN), Col("instance type", ID, optional=1),
            Col("market", ID), Col("GPUs", ID), Col("$/h", NUM, optional=2),
            Col("$/GPU-h", NUM), Col("from", ID), Col("last seen", ID, optional=3)]
    rows = [[_where(p.offer), p.offer.instance_type,
             short_market(p.offer.market.value), f"{p.offer.gpu_count}x{p.offer.gpu}",
             f"{p.offer.price_per_hour:,.4f}", f"{p.offer.price_per_gpu_hour:.4f}",
             f"snapshot {p.first_seen:%Y-%m-%d}" if snapshot
             else f"{p.first_seen:%Y-%m-%d %H:%M}",
             "-" if snapshot else f"{p.last_seen:%Y-%m-%d %H:%M}"] for p in points]
    print_table(console, cols, rows, wide=wide)


def _title(flt: OfferFilter) -> str:
    parts = [flt.gpu or "all GPUs", flt.market.value if flt.market else "all markets",
             flt.cloud or "", flt.region or ""]
    return " - ".join(p for p in parts if p) + ": USD per GPU-hour"


def export_snapshot(
    ctx: typer.Context,
    out: Annotated[
        Path | None, typer.Option("--out", help="Output file (default: the package's snapshot).")
    ] = None,
    config: ConfigOption = None,
) -> None:
    """Regenerate the embedded price snapshot from the store's latest offers.

    Example: gpuopt prices export-snapshot --out snapshot_data.json
    """

    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.cli.console import err_console
    from gpuopt.orchestrator.store import open_store_if_exists
    from gpuopt.orchestrator.store.price_history import latest_offers
    from gpuopt.providers.snapshot import SNAPSHOT_FILE, load_snapshot, snapshot_document

    settings = _settings(from_group(ctx, "config", config))
    # The data centres each "global" row stands for (RunPod): the store keeps prices
    # only, so they are the embedded snapshot's, read before it is overwritten.
    places = load_snapshot().places
    store = open_store_if_exists(settings.database.url)
    offers: list[Offer] = []
    if store is not None:
        try:
            with store.session() as session:
                offers = latest_offers(session)
        finally:
            store.close()
    if not offers:
        raise UserError("the store has no prices: run `gpuopt prices refresh` first")
    sources = {
        o.key: f"gpuopt poll of the {o.cloud} price APIs ({o.source}), "
        f"observed {o.observed_at:%Y-%m-%d %H:%M} UTC"
        for o in offers
    }
    text = snapshot_document(
        offers, sources,
        note="Exported by `gpuopt prices export-snapshot` from the latest stored prices "
        "(USD per instance-hour).",
        places=places,
    )
    if out is None:
        from gpuopt import providers

        out = Path(providers.__file__).with_name(SNAPSHOT_FILE)
    out.write_text(text, encoding="utf-8")
    err_console().print(f"wrote {len(offers)} offers to {out}")


def held(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the held prices as JSON.")]
    = False,
    wide: Annotated[bool, typer.Option("--wide", help="Every column, however wide the "
                                       "terminal.")] = False,
    config: ConfigOption = None,
) -> None:
    """Prices held for confirmation: new series or changes outside their GPU's snapshot
    range or their series' recent band, not in the history until later polls confirm them.

    Example: gpuopt prices held --json
    """
    from gpuopt.orchestrator.cli.console import err_console, out_console
    from gpuopt.orchestrator.store import open_store_if_exists
    from gpuopt.orchestrator.store.price_history import held_views

    store = open_store_if_exists(_settings(from_group(ctx, "config", config)).database.url)
    views = []
    if store is not None:
        try:
            with store.session() as session:
                views = held_views(session)
        finally:
            store.close()
    if as_json:
        import json

        typer.echo(json.dumps(views, indent=1))
        return
    if not views:
        err_console().print("no prices are held")
        return
    from gpuopt.orchestrator.cli.tables import ID, NUM, Col, print_table, short_market

    cols = [Col("where", min_width=WHERE_MIN), Col("instance type", ID, optional=2),
            Col("market", ID), Col("held $/h", NUM), Col("was $/h", NUM, optional=1),
            Col("polls", NUM, optional=3), Col("taken after", ID),
            Col("why", min_width=12, optional=4)]
    rows = [[f"{v['cloud']}/{v['zone'] or v['region']}", v["instance_type"],
             short_market(v["market"]), v["price_per_hour"], v["previous_price_per_hour"] or "new",
             str(v["polls"]), _when(v["confirm_after"]), v["reason"]] for v in views]
    print_table(out_console(), cols, rows, wide=wide)


def _when(iso: str) -> str:
    return f"{datetime.fromisoformat(iso):%Y-%m-%d %H:%M}"


def register(app: typer.Typer) -> None:
    prices_app = typer.Typer(
        help="GPU prices: latest offers, refresh, history, held, snapshot.\n\n"
        "Example: gpuopt prices --gpu H100 --market spot",
        invoke_without_command=True,
    )
    prices_app.callback()(show_prices)
    prices_app.command("refresh")(refresh)
    prices_app.command("history")(history)
    prices_app.command("export-snapshot")(export_snapshot)
    prices_app.command("held")(held)
    app.add_typer(prices_app, name="prices")
