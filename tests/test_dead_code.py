"""vulture at 80% confidence finds no dead code in the product (gpuopt/): a name it reports
is deleted, or, when something vulture cannot see uses it, listed with why in
tests/vulture_whitelist.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import PACKAGE_ROOT, REPO_ROOT

WHITELIST = REPO_ROOT / "tests" / "vulture_whitelist.py"


def _vulture(*paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vulture", *paths, "--min-confidence", "80"],
        capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def has_vulture() -> None:
    import importlib.util

    if importlib.util.find_spec("vulture") is None:
        pytest.skip("vulture is not installed (pip install -e '.[dev]')")


@pytest.mark.usefixtures("has_vulture")
def test_vulture_finds_nothing_in_the_product() -> None:
    found = _vulture(str(PACKAGE_ROOT), str(WHITELIST))
    assert found.stdout == "" and found.returncode == 0, found.stdout + found.stderr


@pytest.mark.usefixtures("has_vulture")
def test_each_whitelist_entry_is_needed() -> None:
    """Without the whitelist vulture reports exactly the names it lists (none stale)."""
    import ast

    listed = {node.value.id for node in ast.parse(WHITELIST.read_text()).body
              if isinstance(node, ast.Expr) and isinstance(node.value, ast.Name)}
    found = _vulture(str(PACKAGE_ROOT)).stdout
    reported = {line.split("'")[1] for line in found.splitlines() if "'" in line}
    assert reported == listed
