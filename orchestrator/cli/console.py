"""Rich consoles for stdout and stderr, created on demand (no module-level state).

Messages are never hard-wrapped, on either stream: a long path, URL or sentence stays
on one line whatever the width (a terminal folds it itself; a pipe, a log or CI keeps
it whole). Only tables adapt to the width: ``tables.print_table`` prints them with
``soft_wrap=False``.
"""

from __future__ import annotations

from rich.console import Console


def out_console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def err_console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)
