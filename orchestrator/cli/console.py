"""Rich consoles for stdout and stderr, created on demand (no module-level state)."""

from __future__ import annotations

from rich.console import Console


def out_console() -> Console:
    return Console(highlight=False, soft_wrap=False)


def err_console() -> Console:
    # Messages are never hard-wrapped: a long path or URL stays on one line, whatever
    # the terminal's width (only tables adapt to it).
    return Console(stderr=True, highlight=False, soft_wrap=True)
