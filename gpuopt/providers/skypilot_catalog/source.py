"""The source label of a price read from a SkyPilot catalog file: the file and its
modification time, within the store's 32 characters."""

from __future__ import annotations

from datetime import datetime

FILE_NAME = "vms.csv"
_PREFIX = f"catalog {FILE_NAME} "


def source_label(mtime: datetime) -> str:
    return f"{_PREFIX}{mtime:%Y-%m-%d %H:%M}"


def is_catalog_source(source: str) -> bool:
    return source.startswith(_PREFIX)
