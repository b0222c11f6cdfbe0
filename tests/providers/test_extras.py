"""A command that needs a missing extra names the `pip install` to run, exit 2, no traceback.

The missing SDK is simulated the way Python sees an uninstalled package: ``sys.modules[name]
= None`` makes ``import name`` raise ImportError and ``find_spec(name)`` answer None.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpuopt.orchestrator.cli.app import main
from gpuopt.providers.extras import MissingExtra, missing_modules, require_extra
from tests.conftest import REPO_ROOT

QUICKSTART = REPO_ROOT / "deploy" / "examples" / "quickstart.yaml"
QLORA = REPO_ROOT / "deploy" / "examples" / "qlora-7b.yaml"


def _uninstall(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for name in modules:
        monkeypatch.setitem(__import__("sys").modules, name, None)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return int(exited.value.code or 0), err


def test_require_extra_names_the_pip_install(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not missing_modules("aws")  # the tests install every extra (dev pulls all)
    _uninstall(monkeypatch, "boto3")
    assert "boto3" in missing_modules("aws")
    with pytest.raises(MissingExtra) as err:
        require_extra("aws", "polling aws prices")
    assert err.value.exit_code == 2
    assert "pip install 'gpuopt[aws]'" in str(err.value) and "boto3" in str(err.value)


def test_prices_refresh_without_the_cloud_sdk(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _uninstall(monkeypatch, "boto3")
    code, err = _run(["prices", "refresh", "--cloud", "aws"], capsys)
    assert code == 2
    assert "pip install 'gpuopt[aws]'" in err
    assert not (Path(__import__("os").environ["GPUOPT_HOME"]) / "data" / "gpuopt.db").exists()


def test_the_daemons_poll_skips_a_cloud_without_its_sdk(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    from gpuopt.orchestrator.prices.poll import load_providers, poll_prices

    _uninstall(monkeypatch, "google.cloud.compute_v1")
    providers = load_providers(["gcp"])
    assert isinstance(providers["gcp"], MissingExtra)
    result = poll_prices(None, providers, datetime(2026, 1, 1, tzinfo=UTC))["gcp"]  # type: ignore[arg-type]
    assert result.status == "skipped"
    assert result.error is not None and "pip install 'gpuopt[gcp]'" in result.error


def test_skypilot_executor_without_skypilot(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _uninstall(monkeypatch, "sky")
    code, err = _run(["submit", str(QLORA), "--executor", "skypilot", "--dry-run"], capsys)
    assert code == 2 and "pip install 'gpuopt[skypilot]'" in err


def test_sync_catalog_without_skypilot(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    _uninstall(monkeypatch, "sky")
    code, err = _run(["skypilot", "sync-catalog"], capsys)
    assert code == 2 and "pip install 'gpuopt[skypilot]'" in err


def test_the_daemons_skypilot_executor_without_skypilot(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    from gpuopt.orchestrator.reconcile.attempts import ExecutorCache

    _uninstall(monkeypatch, "sky")
    with pytest.raises(MissingExtra, match=r"pip install 'gpuopt\[skypilot\]'"):
        ExecutorCache()("skypilot")
    assert ExecutorCache()("local").kind == "local"  # the core still runs jobs locally


def test_the_local_demo_needs_no_extra(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    _uninstall(monkeypatch, "sky", "boto3", "botocore", "google.cloud.compute_v1",
               "google.cloud.billing_v1", "azure.mgmt.compute", "azure.identity", "azure.core")
    code, err = _run(["submit", str(QUICKSTART), "--dry-run"], capsys)
    assert code == 0, err
