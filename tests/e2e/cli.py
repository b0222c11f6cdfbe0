"""Find the installed `gpuopt` console script for tests that drive it as a user would."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def gpuopt_command() -> list[str]:
    """The console script beside this interpreter (the venv), else the one on PATH.

    A missing script is a failed install, so it fails the test instead of skipping it.
    """
    exe = Path(sys.executable).parent / "gpuopt"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("gpuopt")
    assert found is not None, "the gpuopt console script is not installed (pip install -e .)"
    return [found]
