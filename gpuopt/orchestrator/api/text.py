"""The CLI's own text, rendered on the server for a remote CLI (same width, same
words): a recording console of the client's width, escaped as the CLI's is."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

MIN_WIDTH, MAX_WIDTH = 40, 400


def rendered(draw: Callable[[Console], None], width: int) -> str:
    import io

    from gpuopt.orchestrator.cli.console import safe_console

    width = min(max(width, MIN_WIDTH), MAX_WIDTH)
    console = safe_console(file=io.StringIO(), width=width, highlight=False, soft_wrap=True,
                           color_system=None, force_terminal=False, record=False)
    draw(console)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    return str(out)
