"""HTTP/JSON for the clouds whose public API is plain REST or GraphQL (Lambda, RunPod,
Vast.ai): a ``requests`` session with urllib3's ``Retry``.

Retries 429 and 5xx (and connection errors) with exponential backoff, honouring
``Retry-After`` on throttled answers, for every method (RunPod's GraphQL reads are
POSTs). What is left after the retries becomes a :class:`ProviderError` naming the cloud
and the HTTP status (a 401/403 says the key was refused).
I/O only: the adapters' ``parse`` modules read the decoded JSON. ``requests`` is
imported inside the functions (it is each of these clouds' extra).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from gpuopt.providers.base import ProviderError

if TYPE_CHECKING:
    import requests

READ_TIMEOUT_S = 60
CONNECT_TIMEOUT_S = 10
RETRY_STATUSES = (429, 500, 502, 503, 504)


def session(
    *, retry_total: int, backoff_factor: float, backoff_max: float = 60.0,
    headers: Mapping[str, str] | None = None,
) -> requests.Session:
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    retry = Retry(
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


def request_json(
    s: requests.Session, cloud: str, method: str, url: str, **kwargs: Any
) -> Any:
    """The decoded JSON answer (numbers as Decimal); ProviderError for anything else."""
    import requests

    try:
        response = s.request(method, url, timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S),
                             **kwargs)
    except requests.RequestException as err:
        raise ProviderError(f"{cloud}: API unreachable: {_short(err)}") from err
    if response.status_code in (401, 403):
        raise ProviderError(f"{cloud}: API refused the key (HTTP {response.status_code}): "
                            f"{response.text[:200]}")
    if response.status_code != 200:
        raise ProviderError(f"{cloud}: API answered HTTP {response.status_code} after "
                            f"retries: {response.text[:200]}")
    try:
        return json.loads(response.text, parse_float=Decimal)
    except ValueError as err:
        raise ProviderError(f"{cloud}: answer is not JSON: {err}") from err


def _short(err: Exception) -> str:
    text = str(err).strip()
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
