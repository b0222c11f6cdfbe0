"""check_credentials: boto3's own chain, one clear line, no network call."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from gpuopt.core.errors import UserError
from gpuopt.providers.aws import AwsProvider
from gpuopt.providers.base import CredentialsMissing


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("check_credentials must not touch the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_no_credentials_raises_one_clear_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_network: None
) -> None:
    empty = tmp_path / "empty"
    empty.write_text("")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_SECURITY_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                 "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(CredentialsMissing) as err:
        AwsProvider().check_credentials()
    message = str(err.value)
    assert isinstance(err.value, UserError)
    assert "\n" not in message and message.startswith("aws: ")
    assert "AWS_ACCESS_KEY_ID" in message and "skipping AWS" in message


def test_env_credentials_are_enough(aws_env: None, no_network: None) -> None:
    AwsProvider().check_credentials()  # does not raise


def test_construction_does_no_io_and_defaults_to_the_catalog(no_network: None) -> None:
    from gpuopt.providers.aws.catalog import DEFAULT_REGIONS, INSTANCE_GPU_COUNTS

    p = AwsProvider()
    assert p.cloud == "aws" and p.regions == DEFAULT_REGIONS
    assert set(p.instance_types) == set(INSTANCE_GPU_COUNTS)
    assert set(INSTANCE_GPU_COUNTS.values()) <= {1, 2, 4, 8}
