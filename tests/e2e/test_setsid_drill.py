"""Issue 26.3, end to end: `run: "setsid python3 prog.py & wait $!"` with
`gpuopt submit --wait --preempt-after 2s`. Attempt 1's program left the attempt's process
group; it must be gone before attempt 2's program starts (before: it ran on beside
attempt 2 for about 7 s, both writing the same checkpoint).

The program records its attempt and pid, and at its start notes every earlier pid that
is still alive: the drill passes only if attempt 2 found none.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.cli import gpuopt_command

pytestmark = pytest.mark.slow

PROG = """import os, sys, time
runs = sys.argv[1]
earlier = open(runs).read().split() if os.path.exists(runs) else []
alive = []
for pid in earlier[1::2]:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        continue
    if state not in ("Z", "X"):  # a zombie is dead, only not yet reaped
        alive.append(f"{pid} ({state})")
with open(runs, "a") as fh:
    fh.write(f"{os.environ['GPUOPT_ATTEMPT']} {os.getpid()}\\n")
if alive:
    open(runs + ".overlap", "a").write(" ".join(alive) + "\\n")
time.sleep(60 if os.environ["GPUOPT_ATTEMPT"] == "1" else 0.5)
"""

JOB = """\
name: setsid-drill
run: setsid {python} {prog} {runs} & wait $!
model:
  name: gpt2
workload:
  type: finetune
  method: full
  tokens: 1m
checkpoint:
  dir: {ckpt}
"""


def test_attempt_1s_setsid_program_is_gone_before_attempt_2_starts(tmp_path: Path) -> None:
    prog, runs = tmp_path / "prog.py", tmp_path / "runs.txt"
    prog.write_text(PROG)
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(python=sys.executable, prog=prog, runs=runs,
                              ckpt=tmp_path / "ckpt"))
    res = subprocess.run([*gpuopt_command(), "submit", str(job), "--wait", "--interval",
                          "0.2", "--preempt-after", "2s"], capture_output=True, text=True,
                         timeout=240, env={**os.environ, "COLUMNS": "200"})
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"succeeded: 2 attempt\(s\), 1 preemption\(s\)", res.stdout), res.stdout
    lines = runs.read_text().split("\n")
    assert [line.split()[0] for line in lines if line] == ["1", "2"]
    assert not (tmp_path / "runs.txt.overlap").exists(), (
        "attempt 1's program was alive when attempt 2 started: "
        + (tmp_path / "runs.txt.overlap").read_text())
    first_pid = int(lines[0].split()[1])
    assert not Path(f"/proc/{first_pid}").exists() or \
        Path(f"/proc/{first_pid}/stat").read_text().split(") ")[1][0] == "Z"
