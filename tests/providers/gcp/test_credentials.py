"""check_credentials with no credentials anywhere: one clear CredentialsMissing line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuopt.providers.base import CredentialsMissing
from gpuopt.providers.gcp import GcpProvider


@pytest.fixture
def no_gcp_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT",
                "CLOUDSDK_CORE_PROJECT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))  # empty gcloud config dir
    # No metadata server: refuse connections at once instead of probing 169.254.169.254.
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:1")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:1")
    # google-auth's documented switch to skip the GCE probe (and its ~3 s of backoff);
    # it reads the variable at import, so mirror it on the already-imported module.
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    from google.auth.compute_engine import _metadata

    monkeypatch.setattr(_metadata, "_NO_GCE_CHECK", True)


def test_missing_credentials(no_gcp_credentials: None) -> None:
    with pytest.raises(CredentialsMissing) as err:
        GcpProvider().check_credentials()
    message = str(err.value)
    assert "\n" not in message and message.startswith("gcp:")
    assert "GOOGLE_APPLICATION_CREDENTIALS" in message


def test_credentials_without_project(
    no_gcp_credentials: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = tmp_path / "adc.json"
    key.write_text('{"type": "authorized_user", "client_id": "x.apps.googleusercontent.com",'
                   ' "client_secret": "s", "refresh_token": "r"}')
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    with pytest.raises(CredentialsMissing, match="GOOGLE_CLOUD_PROJECT"):
        GcpProvider().check_credentials()
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    GcpProvider().check_credentials()  # found: no error, no network


def test_construction_does_no_io(no_gcp_credentials: None) -> None:
    GcpProvider()  # would raise if it resolved credentials
