"""HTTP/JSON for the clouds whose public API is plain REST or GraphQL (Lambda, RunPod,
Vast.ai): a ``requests`` session with urllib3's ``Retry``.

Retries 429 and 5xx (and connection errors) with exponential backoff, honouring
``Retry-After`` on throttled answers (at most ``backoff_max``: a server asking for an hour
does not get it), for every method (RunPod's GraphQL reads are POSTs). What is left after
the retries becomes a :class:`ProviderError` naming the cloud and the HTTP status (a
401/403 says the key was refused).

Every answer is bounded (issue 26.9): its body is read in chunks, at most
``MAX_BODY_BYTES``, and the whole request (retries, waits and body) must end within
``REQUEST_DEADLINE_S``; a server that drips a byte a second is given up on at the
deadline, not after the last byte. (Each socket read also has ``READ_TIMEOUT_S``, so one
silent read can overrun the deadline by at most that.) The poll bounds a whole cloud on
top of this (orchestrator/prices/poll.py).

I/O only: the adapters' ``parse`` modules read the decoded JSON. ``requests`` is
imported inside the functions (it is each of these clouds' extra).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from gpuopt.providers.base import ProviderError

if TYPE_CHECKING:
    import requests

READ_TIMEOUT_S = 30
CONNECT_TIMEOUT_S = 10
# The largest answer read: Vast.ai's offer search (3,000 offers of ~2.5 KB) is ~8 MB,
# Lambda's and RunPod's are tens of KB, an Azure Retail Prices page ~100 KB; 64 MiB is
# 8x the largest real one, and a bound on what a broken or hostile server can make us hold.
MAX_BODY_BYTES = 64 * 1024 * 1024
# One request, retries and body included: the real answers take seconds; the retries
# (4, backoff up to 60 s) fit in a few minutes at worst.
REQUEST_DEADLINE_S = 180.0
CHUNK_BYTES = 64 * 1024
RETRY_STATUSES = (429, 500, 502, 503, 504)


def session(
    *, retry_total: int, backoff_factor: float, backoff_max: float = 60.0,
    headers: Mapping[str, str] | None = None,
) -> requests.Session:
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    class CappedRetry(Retry):
        """urllib3's Retry, with a server's Retry-After capped at backoff_max."""

        def get_retry_after(self, response: Any) -> float | None:
            asked = super().get_retry_after(response)
            return None if asked is None else min(asked, backoff_max)

    retry = CappedRetry(
        total=retry_total, backoff_factor=backoff_factor, backoff_max=backoff_max,
        status_forcelist=RETRY_STATUSES, allowed_methods=None,
        respect_retry_after_header=True, raise_on_status=False,
    )
    s = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    s.mount("https://", adapter)
    s.mount("http://", adapter)
    s.headers.update({"Accept": "application/json", "User-Agent": "gpuopt"})
    s.headers.update(dict(headers or {}))
    return s


def read_bounded(chunks: Iterable[bytes], cloud: str, deadline: float,
                 limit: int = MAX_BODY_BYTES) -> bytes:
    """The body from ``chunks``, refused (ProviderError) beyond ``limit`` bytes or past
    ``deadline`` (a time.monotonic() value)."""
    buf = bytearray()
    for chunk in chunks:
        buf += chunk
        if len(buf) > limit:
            raise ProviderError(f"{cloud}: answer larger than {limit // (1024 * 1024)} MiB; "
                                "not read")
        if time.monotonic() > deadline:
            raise ProviderError(f"{cloud}: answer not complete within the request's "
                                f"deadline ({len(buf):,} bytes read); given up")
    return bytes(buf)


def _chunks(response: requests.Response) -> Iterator[bytes]:
    """The body as it arrives: urllib3's read1 returns what one socket read brought
    (``iter_content`` waits for a whole chunk, which a drip takes forever to fill)."""
    raw = response.raw
    while True:
        chunk = raw.read1(CHUNK_BYTES, decode_content=True)
        if not chunk:
            return
        yield chunk


def request_json(
    s: requests.Session, cloud: str, method: str, url: str, *,
    deadline_s: float = REQUEST_DEADLINE_S, max_bytes: int = MAX_BODY_BYTES, **kwargs: Any
) -> Any:
    """The decoded JSON answer (numbers as Decimal); ProviderError for anything else,
    including an answer beyond ``max_bytes`` or not complete within ``deadline_s``."""
    import requests

    deadline = time.monotonic() + deadline_s
    read_timeout = min(READ_TIMEOUT_S, deadline_s)
    try:
        response = s.request(method, url, timeout=(CONNECT_TIMEOUT_S, read_timeout),
                             stream=True, **kwargs)
    except requests.RequestException as err:
        raise ProviderError(f"{cloud}: API unreachable: {short_error(err)}") from err
    with response:
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise ProviderError(f"{cloud}: answer of {int(declared):,} bytes is larger than "
                                f"{max_bytes // (1024 * 1024)} MiB; not read")
        from urllib3.exceptions import HTTPError as Urllib3Error

        try:
            body = read_bounded(_chunks(response), cloud, deadline, max_bytes)
        except (requests.RequestException, Urllib3Error, OSError) as err:
            raise ProviderError(f"{cloud}: API answer broken off: {short_error(err)}") from err
    text = body.decode(response.encoding or "utf-8", errors="replace")
    if response.status_code in (401, 403):
        raise ProviderError(f"{cloud}: API refused the key (HTTP {response.status_code}): "
                            f"{text[:200]}")
    if response.status_code != 200:
        raise ProviderError(f"{cloud}: API answered HTTP {response.status_code} after "
                            f"retries: {text[:200]}")
    try:
        return json.loads(text, parse_float=Decimal)
    except ValueError as err:
        raise ProviderError(f"{cloud}: answer is not JSON: {err}") from err
    except RecursionError:
        raise ProviderError(f"{cloud}: answer nests too deeply") from None


_QUERY = re.compile(r"\?[^\s'\")]+")


def short_error(err: Exception) -> str:
    """The error's first line, without URL query strings (a URL-encoded filter says
    nothing to a reader and fills the log line), at most 200 characters."""
    text = _QUERY.sub("?...", str(err).strip())
    return text.splitlines()[0][:200] if text else type(err).__name__


def json_decimal(value: Any) -> Decimal | None:
    """A JSON number (or numeric string) as a finite Decimal; anything else -> None
    (null, booleans, NaN, Infinity, junk), for the parsers to drop the row it is in."""
    if value is None or isinstance(value, bool):
        return None
    try:
        d = Decimal(str(value))
    except InvalidOperation:
        return None
    return d if d.is_finite() else None
