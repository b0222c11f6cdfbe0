"""Suite-wide isolation: every test gets its own GPUOPT_HOME, and no test reaches a cloud."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("gpuopt-home")
    monkeypatch.setenv("GPUOPT_HOME", str(home))
    monkeypatch.delenv("GPUOPT_DATABASE_URL", raising=False)
    # Never let an SDK find real credentials or a metadata server from a test.
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    yield home


@pytest.fixture
def shared_data() -> Path:
    """../shared/data beside the repository; skipped with a clear reason where absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is absent (CI always has ../shared beside the checkout)")
    return SHARED_DATA
