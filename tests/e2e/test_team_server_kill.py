"""kill -9 of the daemon under load loses no accepted submission: benchmarks/api_load.py
at a small scale (8 clients, 14 s, SIGKILL at 5 s and a restart on the same store).
Every submission answered 201 is in the store exactly once; no request got a 5xx."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_kill_9_under_load_loses_no_accepted_submission() -> None:
    res = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "api_load.py"), "--clients", "8",
         "--seconds", "14", "--kill-at", "5"],
        capture_output=True, text=True, timeout=300, cwd=REPO)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "killed -9 at 5 s and restarted" in res.stdout
    assert "lost 0; duplicated 0" in res.stdout and "OK" in res.stdout
    accepted = int(res.stdout.split("accepted submissions ")[1].split(";")[0].replace(",", ""))
    assert accepted > 0
