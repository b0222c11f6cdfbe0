"""core/lazy_import.py: heavy modules named at a module's top, imported on first use;
and the CLI (``gpuopt --help``) imports no cloud SDK, SkyPilot nor matplotlib."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpuopt.core.lazy_import import LazyModule, lazy_attributes, load_all
from tests.conftest import PACKAGE_ROOT

HEAVY = ("boto3", "botocore", "sky", "google", "azure", "matplotlib")


def _imported_after(statement: str) -> list[str]:
    """The top-level packages of HEAVY imported by ``statement`` in a fresh interpreter."""
    code = (f"import sys\n{statement}\nimport json\n"
            f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=PACKAGE_ROOT.parent)
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def test_the_cli_and_the_adapters_import_no_heavy_dependency() -> None:
    assert _imported_after("import gpuopt.orchestrator.cli.app") == []
    assert _imported_after(
        "import gpuopt.providers.aws.fetch, gpuopt.providers.gcp.fetch, "
        "gpuopt.providers.azure.provider, gpuopt.jobs.executors.sky_sdk, "
        "gpuopt.jobs.executors.skypilot, gpuopt.providers.clouds") == []


def test_the_subprocess_check_sees_an_import() -> None:
    assert _imported_after("import json, email.mime.text") == []
    pytest.importorskip("boto3")
    assert _imported_after(
        "from gpuopt.providers.aws import fetch\nfetch.boto3.Session") == ["boto3", "botocore"]


def test_a_lazy_module_imports_on_first_attribute() -> None:
    lazy = LazyModule("email.mime.text")
    sys.modules.pop("email.mime.text", None)
    assert "email.mime.text" not in sys.modules
    assert lazy.MIMEText.__name__ == "MIMEText"
    assert "email.mime.text" in sys.modules
    package = LazyModule("email")
    assert isinstance(package.mime, LazyModule | type(sys))  # a submodule is lazy too
    with pytest.raises(AttributeError):
        _ = lazy.no_such_name
    with pytest.raises(AttributeError):
        lazy.x = 1


def test_a_missing_module_names_the_extra_that_installs_it() -> None:
    with pytest.raises(ImportError, match=r"pip install 'gpuopt\[aws\]'"):
        _ = LazyModule("gpuopt_no_such_sdk", extra="aws").Session
    with pytest.raises(ImportError):
        load_all(LazyModule("email"), LazyModule("gpuopt_no_such_sdk"))


def test_lazy_attributes_import_the_module_on_first_access() -> None:
    get = lazy_attributes("pkg", {"MIMEText": "email.mime.text"})
    assert get("MIMEText").__name__ == "MIMEText"
    with pytest.raises(AttributeError, match="no attribute 'Other'"):
        get("Other")


def test_the_chart_modules_import_matplotlib_only_to_draw() -> None:
    assert _imported_after(
        "import gpuopt.orchestrator.report.charts, gpuopt.orchestrator.prices.chart") == []
    assert _imported_after(
        "from gpuopt.orchestrator.report import charts\n"
        "charts._figure(1.0)") == ["matplotlib"]
