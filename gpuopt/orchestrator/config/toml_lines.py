"""The line of a key in a TOML text, for errors that say ``file:line [section] key``.

``tomllib`` keeps no positions, so the text is scanned for table headers (``[a.b]``,
``[[reserved]]``) and ``key =`` lines (bare, quoted and dotted keys); the line whose
key path is the longest prefix of the setting's path wins (an inline table's key is on
the line of the table's key). Lines inside multi-line strings are skipped. Pure; a text
it cannot follow only loses the line number, never the error.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*(\[\[?)\s*(.+?)\s*\]\]?\s*(#.*)?$")
_TRIPLE = re.compile(r'"""|\'\'\'')


def split_key(text: str) -> list[str] | None:
    """'a."b.c".d' -> ['a', 'b.c', 'd']; None when it is not a TOML key."""
    parts: list[str] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] in "\"'":
            quote = text[i]
            j = i + 1
            buf = []
            while j < n and text[j] != quote:
                if quote == '"' and text[j] == "\\" and j + 1 < n:
                    buf.append(_unescape(text[j:j + 10]))
                    j += _escape_len(text[j:j + 10])
                    continue
                buf.append(text[j])
                j += 1
            if j >= n:
                return None
            parts.append("".join(buf))
            i = j + 1
        else:
            m = re.match(r"[A-Za-z0-9_-]+", text[i:])
            if m is None:
                return None
            parts.append(m.group(0))
            i += m.end()
        while i < n and text[i] in " \t":
            i += 1
        if i < n:
            if text[i] != ".":
                return None
            i += 1
    return parts or None


def _escape_len(s: str) -> int:
    return {"u": 6, "U": 10}.get(s[1:2], 2)


def _unescape(s: str) -> str:
    kind = s[1:2]
    simple = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\",
              "e": "\x1b"}
    if kind in simple:
        return simple[kind]
    try:
        return chr(int(s[2:_escape_len(s)], 16))
    except ValueError:
        return s[:2]


def _key_part(line: str) -> str | None:
    """The key before ``=`` on a ``key = value`` line (outside quotes), or None."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "=":
            return line[:i].strip()
        elif ch == "#":
            return None
    return None


def key_lines(text: str) -> list[tuple[tuple[str | int, ...], int]]:
    """(key path, 1-based line) of every table header and ``key =`` line, in order;
    an array-of-tables entry is its index (``("reserved", 0, "count")``)."""
    out: list[tuple[tuple[str | int, ...], int]] = []
    table: tuple[str | int, ...] = ()
    arrays: dict[tuple[str, ...], int] = {}
    in_string = False
    for number, line in enumerate(text.splitlines(), start=1):
        triples = len(_TRIPLE.findall(line))
        if in_string:
            in_string = triples % 2 == 0
            continue
        m = _HEADER.match(line)
        if m and _key_part(line) is None:
            parts = split_key(m.group(2))
            if parts is None:
                continue
            if m.group(1) == "[[":
                index = arrays.get(tuple(parts), -1) + 1
                arrays[tuple(parts)] = index
                table = (*parts, index)
            else:
                table = tuple(parts)
            out.append((table, number))
            continue
        key = _key_part(line)
        if key:
            parts = split_key(key)
            if parts is not None:
                out.append(((*table, *parts), number))
        in_string = triples % 2 == 1
    return out


def line_of(text: str, loc: tuple[str | int, ...]) -> int | None:
    """The line of the setting at ``loc`` (or of its nearest enclosing key), or None."""
    want = tuple(str(p) for p in loc)
    best: tuple[int, int] | None = None  # (length of the matching path, line)
    for path, number in key_lines(text):
        shown = tuple(str(p) for p in path)
        if len(shown) <= len(want) and want[:len(shown)] == shown and \
                (best is None or len(shown) > best[0]):
            best = (len(shown), number)
    return best[1] if best else None
