"""Finding SkyPilot's catalog directory and reading its files (the I/O around parse.py).

SkyPilot keeps its catalogs in ``<runtime dir>/.sky/catalogs/<schema version>/<cloud>/
vms.csv`` (sky/catalog/common.py ``_ABSOLUTE_VERSIONED_CATALOG_DIR``: the runtime dir is
``$SKY_RUNTIME_DIR`` or ``~``; the version is sky.skylet.constants.CATALOG_SCHEMA_VERSION,
"v8" in SkyPilot 0.14). SkyPilot is imported only to find that default.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from gpuopt.core.errors import UserError
from gpuopt.providers.clouds import registered_clouds
from gpuopt.providers.skypilot_catalog.parse import ParsedCatalog, parse_catalog
from gpuopt.providers.skypilot_catalog.source import FILE_NAME, source_label

# A catalog file larger than this is not a SkyPilot catalog (AWS's, the largest, is ~4 MB).
MAX_FILE_BYTES = 64 * 1024 * 1024


# SkyPilot's catalog schema version (sky.skylet.constants.CATALOG_SCHEMA_VERSION in the
# pinned release; a test checks the two agree). Read without importing SkyPilot: every
# call into SkyPilot goes through jobs/executors/sky_sdk.py, above this layer.
CATALOG_SCHEMA_VERSION = "v8"


def default_catalog_dir() -> Path:
    """The directory the installed SkyPilot reads its catalog from (``$SKY_RUNTIME_DIR``
    or ``~``, then .sky/catalogs/<version>, as SkyPilot's runtime_utils does); UserError
    (exit 2) without SkyPilot (then --catalog-dir is needed)."""
    import importlib.util
    import os

    if importlib.util.find_spec("sky") is None:
        raise UserError("SkyPilot is not installed, so there is no default catalog "
                        "directory: pass --catalog-dir (a directory of <cloud>/vms.csv "
                        "files) or set [prices] catalog_dir", exit_code=2)
    base = Path(os.path.expanduser(os.environ.get("SKY_RUNTIME_DIR", "~")))
    return base / ".sky" / "catalogs" / CATALOG_SCHEMA_VERSION


@dataclass(frozen=True, slots=True)
class CatalogFile:
    cloud: str
    path: Path
    mtime: datetime


def catalog_files(root: Path, clouds: Sequence[str] | None = None
                  ) -> tuple[list[CatalogFile], list[str]]:
    """The registered clouds' catalog files under ``root`` (and notes on folders that are
    not a cloud gpuopt knows). UserError (exit 2) when ``root`` is not a directory."""
    if not root.is_dir():
        raise UserError(f"{root}: not a directory of SkyPilot catalog files "
                        f"(<cloud>/{FILE_NAME})", exit_code=2)
    by_sky = {c.skypilot_name: c.name for c in registered_clouds()}
    found, notes = [], []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        path = folder / FILE_NAME
        if not path.is_file():
            continue
        cloud = by_sky.get(folder.name)
        if cloud is None:
            notes.append(f"{path}: {folder.name} is not a cloud gpuopt knows: not read")
            continue
        if clouds is not None and cloud not in clouds:
            continue
        mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(microsecond=0)
        found.append(CatalogFile(cloud, path, mtime))
    return found, notes


def read_catalog(f: CatalogFile) -> ParsedCatalog:
    """Parse one file (CatalogFormatError / UserError naming it when it cannot be read)."""
    from gpuopt.providers.clouds import get_cloud

    size = f.path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise UserError(f"{f.path}: {size:,} bytes, more than a catalog file's "
                        f"{MAX_FILE_BYTES:,}: not read", exit_code=2)
    try:
        text = f.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"{f.path}: cannot be read ({type(err).__name__}: {err})",
                        exit_code=2) from None
    cloud = get_cloud(f.cloud)
    zone_names = zone_id_names(f.path.parent, cloud.skypilot_zone_id_mapping)
    return parse_catalog(cloud, text, str(f.path), f.mtime, source_label(f.mtime),
                         zone_names or None)


def zone_id_names(folder: Path, mapping: str) -> dict[str, str]:
    """Zone id -> this account's zone name, from SkyPilot's newest zone mapping
    (``mapping``, a glob: the registry's ``skypilot_zone_id_mapping``, AWS's
    ``az_mappings-*.csv``) beside the catalog (SkyPilot writes it with the account's
    credentials); empty without one, or for a cloud without a mapping (``mapping``
    empty). A file that cannot be read is ignored (the zones stay ids)."""
    import csv

    if not mapping:
        return {}
    files = sorted(folder.glob(mapping), key=lambda p: p.stat().st_mtime)
    if not files:
        return {}
    try:
        with files[-1].open(encoding="utf-8", newline="") as fh:
            return {r["AvailabilityZone"]: r["AvailabilityZoneName"]
                    for r in csv.DictReader(fh)
                    if r.get("AvailabilityZone") and r.get("AvailabilityZoneName")}
    except (OSError, UnicodeDecodeError, csv.Error):
        return {}
