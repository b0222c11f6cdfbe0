"""RunPodProvider: one GraphQL query (``gpuTypes``) to ``https://api.runpod.io/graphql``.

Credentials as RunPod's SDK/CLI and SkyPilot read them: ``RUNPOD_API_KEY``, else
``~/.runpod/config.toml`` (``runpod config`` writes ``[default] api_key``; ``runpodctl
config --apiKey`` a top-level ``apikey``). Sent as ``Authorization: Bearer <key>``, as
runpod-python's ``run_graphql_query`` does (not in the URL); never logged.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from gpuopt.providers import http_json
from gpuopt.providers.base import CredentialsMissing, FetchResult
from gpuopt.providers.clouds import get_cloud
from gpuopt.providers.runpod.parse import GPU_TYPES_QUERY, parse_gpu_types

API_URL = "https://api.runpod.io/graphql"
KEY_ENV = "RUNPOD_API_KEY"
CONFIG_FILE = "~/.runpod/config.toml"


def read_api_key(env: Mapping[str, str] | None = None,
                 config_file: str = CONFIG_FILE) -> str | None:
    env = os.environ if env is None else env
    if env.get(KEY_ENV, "").strip():
        return env[KEY_ENV].strip()
    try:
        doc = tomllib.loads(Path(os.path.expanduser(config_file)).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    profile = doc.get("default")
    for value in ((profile or {}).get("api_key") if isinstance(profile, dict) else None,
                  doc.get("apikey"), doc.get("apiKey")):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


class RunPodProvider:
    cloud = "runpod"

    def __init__(self, *, api_url: str = API_URL, api_key: str | None = None,
                 config_file: str = CONFIG_FILE, retry_total: int = 4,
                 backoff_factor: float = 1.0) -> None:
        self.api_url = api_url
        self._api_key = api_key
        self.config_file = config_file
        self.retry_total = retry_total
        self.backoff_factor = backoff_factor

    def _key(self) -> str | None:
        return self._api_key or read_api_key(config_file=self.config_file)

    def check_credentials(self) -> None:
        if self._key() is None:
            raise CredentialsMissing(
                f"runpod: no API key: set {KEY_ENV} or run `runpod config` ({CONFIG_FILE})")

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
