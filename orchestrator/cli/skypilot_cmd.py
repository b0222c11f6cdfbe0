"""`gpuopt skypilot sync-catalog [--restore]`: gpuopt's live prices into SkyPilot's catalog.

The offers come from a callable handed to :func:`register` (the lead wires the store's
"latest price per offer" query in), so this module stays free of the store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from providers.offer import Offer

OffersSource = Callable[[], "Iterable[Offer]"]


def register(app: typer.Typer, offers: OffersSource | None = None) -> None:
    group = typer.Typer(help="SkyPilot integration.", no_args_is_help=True)

    @group.command("sync-catalog")
    def sync_catalog(
        restore: Annotated[
            bool, typer.Option("--restore", help="Put SkyPilot's own catalog files back.")
        ] = False,
    ) -> None:
        """Write gpuopt's latest prices into ~/.sky/catalogs (merging; reversible)."""
        from jobs.executors import sky_catalog
        from orchestrator.cli.console import out_console
        from providers.errors import UserError

        out = out_console()
        if restore:
            restored = sky_catalog.restore_catalogs()
            out.print(f"restored {len(restored)} catalog file(s)" if restored
                      else "nothing to restore: gpuopt has not changed SkyPilot's catalogs")
            return
        if offers is None:
            raise UserError("no price source is configured: run `gpuopt prices poll` first")
        reports = sky_catalog.sync_catalogs(offers())
        if not reports:
            raise UserError("no offers to export: run `gpuopt prices poll` first")
        for cloud, report in reports.items():
            out.print(f"{cloud}: {report.rows} rows written"
                      + (f", {len(report.skipped)} offers skipped" if report.skipped else ""))
        out.print(f"catalogs under {sky_catalog.catalog_root()} (undo: --restore)")

    app.add_typer(group, name="skypilot")
