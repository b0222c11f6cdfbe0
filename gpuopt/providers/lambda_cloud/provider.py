"""LambdaProvider: ``GET https://cloud.lambdalabs.com/api/v1/instance-types``.

Credentials as Lambda's own tools and SkyPilot read them: ``LAMBDA_API_KEY``, else the
``api_key = <key>`` line of ``~/.lambda_cloud/lambda_keys`` (SkyPilot's file). Sent as
``Authorization: Bearer <key>``; never logged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from gpuopt.providers import http_json
from gpuopt.providers.base import CredentialsMissing, FetchResult
from gpuopt.providers.lambda_cloud.parse import parse_instance_types

API_URL = "https://cloud.lambdalabs.com/api/v1"
KEY_ENV = "LAMBDA_API_KEY"
KEYS_FILE = "~/.lambda_cloud/lambda_keys"


def read_api_key(env: Mapping[str, str] | None = None, keys_file: str = KEYS_FILE) -> str | None:
    env = os.environ if env is None else env
    if env.get(KEY_ENV, "").strip():
        return env[KEY_ENV].strip()
    path = Path(os.path.expanduser(keys_file))
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        key, sep, value = line.partition("=")
        if sep and key.strip() == "api_key" and value.strip():
            return value.strip()
    return None


class LambdaProvider:
    cloud = "lambda"

    def __init__(self, *, api_url: str = API_URL, api_key: str | None = None,
                 keys_file: str = KEYS_FILE, retry_total: int = 4,
                 backoff_factor: float = 1.0) -> None:
        self.api_url = api_url.rstrip("/")
        self._api_key = api_key
        self.keys_file = keys_file
        self.retry_total = retry_total
        self.backoff_factor = backoff_factor

    def _key(self) -> str | None:
        return self._api_key or read_api_key(keys_file=self.keys_file)

    def check_credentials(self) -> None:
        if self._key() is None:
            raise CredentialsMissing(
                f"lambda: no API key: set {KEY_ENV} or write 'api_key = <key>' to {KEYS_FILE}")

    def fetch(self, now: datetime, regions: Sequence[str] | None = None) -> FetchResult:
        self.check_credentials()
        key = self._key()
        with http_json.session(retry_total=self.retry_total, backoff_factor=self.backoff_factor,
                               headers={"Authorization": f"Bearer {key}"}) as s:
            payload = http_json.request_json(s, self.cloud, "GET",
                                             f"{self.api_url}/instance-types")
        offers, warnings = parse_instance_types(
            payload, now, frozenset(regions) if regions else None)
        return FetchResult(self.cloud, tuple(offers), tuple(warnings))
