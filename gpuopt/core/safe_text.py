"""Text that reaches a terminal or an e-mail: what is refused at input, escaped at output.

A terminal obeys the control characters in what it prints: ESC starts a sequence that
can retitle the window, clear the screen, rewrite what was printed or, on some terminals,
answer back with keystrokes; CR overwrites the line; the bidi overrides reorder what is
shown (CVE-2021-42574, "Trojan Source"). So:

- names, owners, teams and configuration strings refuse them (``control_problem``, used
  where the job file and the configuration are read, with file:line);
- every terminal and text-mail output escapes what it did not validate itself
  (``escape_text``): values from a database written by an older version, log lines of a
  program, names in a Hugging Face config, a cloud API's instance types and regions.

Refused and escaped: C0 (U+0000-U+001F, DEL U+007F) except, in multi-line text, TAB, LF
and CR (on output a CR is kept only before LF: alone it rewrites the line); C1
(U+0080-U+009F; U+009B is a one-byte CSI); the bidi embeddings, overrides and isolates
(U+202A-U+202E, U+2066-U+2069); in one-line text also the line and paragraph separators
(U+2028, U+2029). An escape reads like Python's: ``\\x1b``, ``\\u202e``; it contains no
control character, so escaping twice changes nothing.
"""

from __future__ import annotations

BIDI_CONTROLS = frozenset((*range(0x202A, 0x202F), *range(0x2066, 0x206A)))
LINE_SEPARATORS = frozenset((0x2028, 0x2029))
MULTILINE_ALLOWED = frozenset((0x09, 0x0A, 0x0D))  # TAB, LF, CR
_NAMES = {0x00: "NUL", 0x07: "BEL", 0x08: "BS", 0x09: "TAB", 0x0A: "LF", 0x0B: "VT",
          0x0C: "FF", 0x0D: "CR", 0x1B: "ESC", 0x7F: "DEL", 0x9B: "CSI"}


def is_unsafe(ch: str, *, multiline: bool = False) -> bool:
    """Whether one character must not reach a terminal as it is."""
    code = ord(ch)
    if code < 0x20 or code == 0x7F:
        return not (multiline and code in MULTILINE_ALLOWED)
    if 0x80 <= code <= 0x9F:
        return True
    if code in BIDI_CONTROLS:
        return True
    return not multiline and code in LINE_SEPARATORS


def first_unsafe(text: str, *, multiline: bool = False) -> int | None:
    """The index of the first character ``is_unsafe`` refuses, or None."""
    for i, ch in enumerate(text):
        if is_unsafe(ch, multiline=multiline):
            return i
    return None


def describe_char(ch: str) -> str:
    """'U+001B (ESC)', 'U+202E (bidi control)', 'U+0085'."""
    code = ord(ch)
    name = _NAMES.get(code) or ("bidi control" if code in BIDI_CONTROLS else "")
    return f"U+{code:04X}" + (f" ({name})" if name else "")


def control_problem(text: str, *, multiline: bool = False) -> str | None:
    """Why ``text`` is refused as a name or setting (None: it is fine). The message says
    which character, where, and what to do."""
    at = first_unsafe(text, multiline=multiline)
    if at is None:
        return None
    allowed = " (tabs and line breaks are fine here)" if multiline else ""
    return (f"contains the control character {describe_char(text[at])} at character "
            f"{at + 1}; remove it{allowed}")


def escape_char(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_text(text: object, *, multiline: bool = False) -> str:
    """``text`` (made a str) with every unsafe character written as a visible escape;
    ``multiline`` keeps TAB and line ends (CRLF becomes LF; a lone CR is escaped). Text
    without such characters is returned as it is."""
    s = text if isinstance(text, str) else str(text)
    if multiline:
        s = s.replace("\r\n", "\n")
    if first_unsafe(s, multiline=multiline) is None and not (multiline and "\r" in s):
        return s
    return "".join(escape_char(c) if is_unsafe(c, multiline=multiline) or c == "\r" else c
                   for c in s)
