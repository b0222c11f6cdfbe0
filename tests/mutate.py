"""Hypothesis strategies that break a document on purpose: structurally (drop, duplicate,
retype, nest keys; hostile values) and textually (byte flips, truncation, insertion).

Used by the property tests of job.yaml and the TOML configuration (issue 13): every
mutant must end as a valid document or one clean error, never a traceback or a hang.
"""

from __future__ import annotations

import copy
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Derandomized: the same cases on every run and machine; no deadline (CI is loaded),
# but each case runs under case_time_limit().
FUZZ = settings(derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])



def fuzz(examples: int) -> settings:
    """FUZZ with ``examples`` cases."""
    return settings(FUZZ, max_examples=examples)


HOSTILE_VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, -(2**63), 2**63, 2**64 + 1, 10**30, -(10**30),
    float("inf"), float("-inf"), float("nan"), 1e308, 1e-308, "", " ", "\x00", "a\x00b",
    "\x7f\x01\x1b[31m", "\udcff".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
    "9" * 400, "1e999", "-5", "0s", ".inf", "NaN", "x" * 5000, [], {}, [[[[[]]]]],
    {"a": {"b": {"c": {}}}}, "9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00Z",
    "BAD=NAME", "../../../../etc/passwd", "/dev/zero", "s3://", "ü" * 10,
)

# The ones that broke something before issue 13 (one of each kind), for exhaustive runs.
CORE_HOSTILE: tuple[Any, ...] = (
    None, True, -1, 2**63, 10**30, float("inf"), float("nan"), "", "a\x00b", "9" * 400,
    "1e999", "x" * 5000, [], {"a": {}}, "9999-12-31T23:59:59-14:00", "BAD=NAME",
)

value = st.one_of(
    st.sampled_from(HOSTILE_VALUES),
    st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30), st.booleans(), st.none(),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(),
                                                         max_size=2),
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


def leaf_paths(doc: Any) -> list[tuple[Any, ...]]:
    """The key path of every scalar in ``doc``."""
    return [p for p in _paths(doc) if p and not isinstance(_get(doc, p), dict | list)]


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def replaced(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A deep copy of ``doc`` with the value at ``path`` replaced by ``new``."""
    out = copy.deepcopy(doc)
    _parent(out, path)[path[-1]] = copy.deepcopy(new)
    return out


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        doc = doc[part]
    return doc


def _mutate_once(doc: Any, data: st.DataObject) -> Any:
    paths = [p for p in _paths(doc) if p]
    if not paths:
        return data.draw(value)
    path = data.draw(st.sampled_from(paths))
    parent, last = _parent(doc, path), path[-1]
    kind = data.draw(st.sampled_from(["drop", "retype", "nest", "list", "rename", "add"]))
    if kind == "drop":
        del parent[last]
    elif kind == "retype":
        parent[last] = data.draw(value)
    elif kind == "nest":
        parent[last] = {"x": parent[last]}
    elif kind == "list":
        parent[last] = [parent[last], parent[last]]
    elif kind == "rename" and isinstance(parent, dict):
        parent[data.draw(st.sampled_from(["", "\x00", "a b", str(last) + "_", "1"]))] = (
            parent.pop(last))
    elif isinstance(parent, dict):
        parent[data.draw(st.text(max_size=8))] = data.draw(value)
    return doc


def mutate(doc: Any, data: st.DataObject, max_steps: int = 3) -> Any:
    """``doc`` (a deep copy) after 1..max_steps structural mutations."""
    out = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, max_steps))):
        out = _mutate_once(out, data)
    return out


def mutate_bytes(raw: bytes, data: st.DataObject) -> bytes:
    """``raw`` with a byte flipped, a cut, an insertion or a duplicated line."""
    kind = data.draw(st.sampled_from(["flip", "truncate", "insert", "duplicate"]))
    at = data.draw(st.integers(0, max(len(raw) - 1, 0)))
    if kind == "flip" and raw:
        return raw[:at] + bytes([raw[at] ^ data.draw(st.integers(1, 255))]) + raw[at + 1:]
    if kind == "truncate":
        return raw[:at]
    if kind == "insert":
        return raw[:at] + data.draw(st.binary(min_size=1, max_size=8)) + raw[at:]
    lines = raw.splitlines(keepends=True)
    if not lines:
        return raw
    i = data.draw(st.integers(0, len(lines) - 1))
    return b"".join([*lines[:i + 1], lines[i], *lines[i + 1:]])


class CaseTookTooLong(Exception):
    pass


@contextmanager
def case_time_limit(seconds: int = 5) -> Iterator[None]:
    """Fail a case that runs longer than ``seconds`` (SIGALRM; main thread only)."""
    def _alarm(_sig: int, _frame: object) -> None:
        raise CaseTookTooLong(f"a case ran longer than {seconds} s")

    old: Callable[..., Any] | int | None = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
