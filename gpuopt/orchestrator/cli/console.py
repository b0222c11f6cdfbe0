"""Rich consoles for stdout and stderr, created on demand (no module-level state).

Messages are never hard-wrapped, on either stream: a long path, URL or sentence stays
on one line whatever the width (a terminal folds it itself; a pipe, a log or CI keeps
it whole). Only tables adapt to the width: ``tables.print_table`` prints them with
``soft_wrap=False``.

Nothing printed through these consoles can drive the terminal: a render hook writes every
control character of the content as a visible escape (core/safe_text.py), whatever
printed it (a job name from an older version's database, a log line, a cloud's instance
type), while rich's own styling and cursor moves (progress bars) pass untouched. Tables
escape their cells before the layout (tables.py), so escaped cells still line up.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.console import Console, RenderHook

if TYPE_CHECKING:
    from rich.console import ConsoleOptions, ConsoleRenderable, RenderableType, RenderResult
    from rich.measure import Measurement


class _Escaped:
    """A renderable whose text segments have their control characters escaped."""

    def __init__(self, inner: ConsoleRenderable) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment

        from gpuopt.core.safe_text import escape_text

        for seg in console.render(self.inner, options):
            if seg.control is None and seg.text and seg.text != "\n":
                safe = escape_text(seg.text, multiline=True)
                if safe != seg.text:
                    yield Segment(safe, seg.style)
                    continue
            yield seg

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        from rich.measure import Measurement

        return Measurement.get(console, options, self.inner)


class _EscapeHook(RenderHook):
    def process_renderables(
        self, renderables: list[ConsoleRenderable]
    ) -> list[ConsoleRenderable]:
        return [_Escaped(r) for r in renderables]


def safe_console(**kwargs: object) -> Console:
    """A Console (rich's keyword arguments) that escapes control characters it prints."""
    console = Console(**kwargs)  # type: ignore[arg-type]
    console.push_render_hook(_EscapeHook())
    return console


def out_console() -> Console:
    return safe_console(highlight=False, soft_wrap=True)


def err_console() -> Console:
    return safe_console(stderr=True, highlight=False, soft_wrap=True)


def plain_cells(cells: Iterable[object]) -> list[RenderableType]:
    """Table cells as rich Text: escaped (core/safe_text.py) and never read as markup, so
    a name like ``[link=...]x[/link]`` prints as written."""
    from rich.text import Text

    from gpuopt.core.safe_text import escape_text

    return [Text(escape_text(c)) for c in cells]
