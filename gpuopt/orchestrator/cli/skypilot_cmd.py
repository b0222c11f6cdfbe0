"""`gpuopt skypilot sync-catalog [--restore]`: gpuopt's live prices into SkyPilot's catalog.

The offers are the latest the store holds (or the embedded snapshot on a machine that
has never polled); tests hand in their own through ``register(app, offers=...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from gpuopt.providers.offer import Offer

OffersSource = Callable[[], "Iterable[Offer]"]


def register(app: typer.Typer, offers: OffersSource | None = None) -> None:
    group = typer.Typer(help="SkyPilot integration.\n\n"
                        "Example: gpuopt skypilot sync-catalog", no_args_is_help=True)

    @group.command("sync-catalog")
    def sync_catalog(
        restore: Annotated[
            bool, typer.Option("--restore", help="Put SkyPilot's own catalog files back.")
        ] = False,
    ) -> None:
        """Merge gpuopt's latest prices into SkyPilot's cached catalogs (reversible).

        Example: gpuopt skypilot sync-catalog && sky show-gpus A10G --infra aws
        """
        from gpuopt.core.errors import UserError
        from gpuopt.jobs.executors import sky_catalog
        from gpuopt.orchestrator.cli.console import err_console, out_console
        from gpuopt.providers.extras import require_extra

        out = out_console()
        if restore:
            restored = sky_catalog.restore_catalogs()
            out.print(f"restored {len(restored)} catalog file(s)" if restored
                      else "nothing to restore: gpuopt has not changed SkyPilot's catalogs")
            return
        require_extra("skypilot", "gpuopt skypilot sync-catalog")
        reports = sky_catalog.sync_catalogs((offers or _latest_offers)())
        if not reports:
            raise UserError("no offers to export: run `gpuopt prices refresh` first")
        for cloud, report in reports.items():
            if report.refused:
                err_console().print(f"{cloud}: not exported: {report.refused}",
                                    highlight=False)
                continue
            skipped = f", {len(report.skipped)} offers skipped" if report.skipped else ""
            out.print(f"{cloud}: {report.rows} rows written{skipped}", highlight=False)
            for why, n in report.reasons():
                out.print(f"  {n} skipped: {why}", highlight=False)
        if all(r.refused for r in reports.values()):
            raise UserError("nothing exported: SkyPilot has no catalog cached for "
                            f"{', '.join(reports)}", exit_code=2)
        out.print(f"catalogs under {sky_catalog.catalog_root()} (undo: --restore)")

    app.add_typer(group, name="skypilot")


def _latest_offers() -> list[Offer]:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.prices.current import current_offers
    from gpuopt.orchestrator.store import open_store_if_exists

    store = open_store_if_exists(load_config().database.url)
    try:
        return current_offers(store)
    finally:
        if store is not None:
            store.close()
