"""VastProvider: ``GET https://console.vast.ai/api/v0/bundles/?q=<search JSON>``.

Credentials as the vastai CLI and SkyPilot read them: ``VAST_API_KEY``, else the file
``vastai set api-key`` writes: ``~/.config/vastai/vast_api_key`` (current CLI) or
``~/.vast_api_key`` (older CLIs). The offer search itself is
public; the key, when there is one, is sent as ``Authorization: Bearer <key>`` and
never logged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from gpuopt.providers import http_json
from gpuopt.providers.base import FetchResult
from gpuopt.providers.vast.parse import COUNTS, parse_offers, search_offers

API_URL = "https://console.vast.ai/api/v0"
KEY_ENV = "VAST_API_KEY"
KEY_FILES = ("~/.config/vastai/vast_api_key", "~/.vast_api_key")
LIMIT = 3000


def read_api_key(env: Mapping[str, str] | None = None,
                 key_files: Sequence[str] = KEY_FILES) -> str | None:
    env = os.environ if env is None else env
    if env.get(KEY_ENV, "").strip():
        return env[KEY_ENV].strip()
    for key_file in key_files:
        try:
            key = Path(os.path.expanduser(key_file)).read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if key:
            return key
    return None


def search_query(limit: int = LIMIT) -> dict[str, Any]:
    """Rentable, unrented machines with 1/2/4/8 GPUs, cheapest first (the CLI's operators)."""
    return {"rentable": {"eq": True}, "rented": {"eq": False},
            "num_gpus": {"in": list(COUNTS)}, "order": [["dph_total", "asc"]],
            "limit": limit}


class VastProvider:
    cloud = "vast"

    def __init__(self, *, api_url: str = API_URL, api_key: str | None = None,
                 key_files: Sequence[str] = KEY_FILES, retry_total: int = 4,
                 backoff_factor: float = 1.0, limit: int = LIMIT) -> None:
        self.api_url = api_url.rstrip("/")
        self._api_key = api_key
        self.key_files = tuple(key_files)
        self.retry_total = retry_total
        self.backoff_factor = backoff_factor
        self.limit = limit

    def check_credentials(self) -> None:
        """Never raises: Vast.ai's offer search is public."""

    def fetch(self, now: datetime, regions: Sequence[str] | None = None) -> FetchResult:
        key = self._api_key or read_api_key(key_files=self.key_files)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        with http_json.session(retry_total=self.retry_total, backoff_factor=self.backoff_factor,
                               headers=headers) as s:
            payload = http_json.request_json(
                s, self.cloud, "GET", f"{self.api_url}/bundles/",
                params={"q": json.dumps(search_query(self.limit))})
        offers, warnings = parse_offers(search_offers(payload), now)
        if regions:
            offers = [o for o in offers if o.region in regions]
        return FetchResult(self.cloud, tuple(offers), tuple(warnings))
