"""RunPodProvider: one GraphQL query (``gpuTypes``) to ``https://api.runpod.io/graphql``.

Credentials as RunPod's SDK/CLI and SkyPilot read them: ``RUNPOD_API_KEY``, sent as
``Authorization: Bearer <key>``; never logged.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime

from gpuopt.providers import http_json
from gpuopt.providers.base import CredentialsMissing, FetchResult
from gpuopt.providers.clouds import get_cloud
from gpuopt.providers.runpod.parse import GPU_TYPES_QUERY, parse_gpu_types

API_URL = "https://api.runpod.io/graphql"
KEY_ENV = "RUNPOD_API_KEY"


class RunPodProvider:
    cloud = "runpod"

    def __init__(self, *, api_url: str = API_URL, api_key: str | None = None,
                 retry_total: int = 4, backoff_factor: float = 1.0) -> None:
        self.api_url = api_url
        self._api_key = api_key
        self.retry_total = retry_total
        self.backoff_factor = backoff_factor

    def _key(self) -> str | None:
        return self._api_key or os.environ.get(KEY_ENV, "").strip() or None

    def check_credentials(self) -> None:
        if self._key() is None:
            raise CredentialsMissing(f"runpod: no API key: set {KEY_ENV}")

    def fetch(self, now: datetime, regions: Sequence[str] | None = None) -> FetchResult:
        """Every offer; ``regions`` does not apply (RunPod prices are not regional)."""
        self.check_credentials()
        with http_json.session(retry_total=self.retry_total, backoff_factor=self.backoff_factor,
                               headers={"Authorization": f"Bearer {self._key()}"}) as s:
            payload = http_json.request_json(s, self.cloud, "POST", self.api_url,
                                             json={"query": GPU_TYPES_QUERY})
        sky_names = get_cloud(self.cloud).skypilot_gpu_names
        offers, warnings = parse_gpu_types(payload, now, sky_names)
        return FetchResult(self.cloud, tuple(offers), tuple(warnings))
