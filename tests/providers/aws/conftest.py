"""Fixtures for the AWS adapter tests: fake credentials, recorded payloads, stubbed clients."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

PAYLOADS = Path(__file__).parent / "payloads"


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fake static credentials, no config files, no instance metadata: never the network."""
    empty = tmp_path / "empty"
    empty.write_text("")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                 "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def _timestamps(obj: Any) -> Any:
    """botocore hands timestamps back as datetimes; the recorded JSON holds ISO strings."""
    if isinstance(obj, dict):
        return {k: datetime.fromisoformat(v) if k == "Timestamp" else _timestamps(v)
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [_timestamps(v) for v in obj]
    return obj


def load(path: str) -> Any:
    data = json.loads((PAYLOADS / path).read_text())
    return _timestamps(data) if path.startswith("ec2/") else data


def wire(name: str) -> bytes:
    return (PAYLOADS / "wire" / name).read_bytes()


class StubbedClients:
    """A client factory for AwsProvider whose clients are real boto3 clients behind a
    botocore Stubber (which validates every request and response against the model)."""

    def __init__(self) -> None:
        from gpuopt.providers.aws.fetch import client_factory

        self._make = client_factory()
        self.stubbers: dict[tuple[str, str], Any] = {}

    def __call__(self, service: str, region: str) -> Any:
        return self.stub(service, region).client

    def stub(self, service: str, region: str) -> Any:
        from botocore.stub import Stubber

        key = (service, region)
        if key not in self.stubbers:
            stubber = Stubber(self._make(service, region))
            stubber.activate()
            self.stubbers[key] = stubber
        return self.stubbers[key]

    def assert_drained(self) -> None:
        for stubber in self.stubbers.values():
            stubber.assert_no_pending_responses()


@pytest.fixture
def clients(aws_env: None) -> Iterator[StubbedClients]:
    stubbed = StubbedClients()
    yield stubbed
    for stubber in stubbed.stubbers.values():
        stubber.deactivate()
