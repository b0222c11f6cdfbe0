"""Messages are never hard-wrapped on stdout either (issue 14): when stdout is a pipe, a
file or CI, a line longer than COLUMNS comes out whole, as error lines on stderr already
did; only tables adapt to the width. Before, `out_console` folded them at COLUMNS
(``checkpoint directory: /tmp/...`` broke mid-path at 80 columns, mid-word at 40)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.e2e.cli import gpuopt_command

LONG_PATH = "/" + "/".join(f"a-rather-long-directory-name-{i}" for i in range(6)) + "/ckpt"


@pytest.mark.parametrize("columns", ["40", "80"])
def test_out_and_err_consoles_print_a_long_message_on_one_line(
    columns: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpuopt.orchestrator.cli.console import err_console, out_console

    monkeypatch.setenv("COLUMNS", columns)
    message = f"checkpoint directory: {LONG_PATH} (the words after it stay on this line)"
    assert len(message) > 2 * int(columns)
    out_console().print(message)
    err_console().print(message)
    out, err = capsys.readouterr()
    assert out == message + "\n"
    assert err == message + "\n"


def test_tables_still_fit_the_width_with_a_long_title(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The consoles soft-wrap; a table is still laid out for the width (title wrapped)."""
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.tables import NUM, TEXT, Col, print_table

    monkeypatch.setenv("COLUMNS", "40")
    cols = [Col("name", TEXT), Col("$/h", NUM)]
    rows = [["a text column that wraps inside its cell", "1,234.56"]]
    print_table(out_console(), cols, rows, title="a title much longer than forty columns, "
                "which the table wraps to its own width")
    out = capsys.readouterr().out
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 40, out
    assert "1,234.56" in out and "…" not in out


def _gpuopt(*args: str, columns: str, cwd: Path, timeout: float = 120) -> \
        subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": columns}
    return subprocess.run([*gpuopt_command(), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=env)


def test_plan_notes_stay_whole_at_40_columns() -> None:
    res = _gpuopt("plan", "deploy/examples/quickstart.yaml", columns="40", cwd=REPO_ROOT)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "expected $ includes expected preemption losses; od = on-demand" in lines
    shown = any("preempt." in ln and "expected $" in ln for ln in lines)  # the header
    assert ("preempt. = expected preemptions over the run" in lines) == shown
    (pick,) = [ln for ln in lines if ln.startswith("Pick: ")]
    assert len(pick) > 40 and re.search(r": \$[\d.]+ vs \$[\d.]+$", pick), pick


def test_a_long_checkpoint_path_stays_on_one_line_at_40_columns(tmp_path: Path) -> None:
    """`submit --wait` on a job in a deep directory: its summary names the checkpoint
    directory, whole, on one line of a piped stdout."""
    deep = tmp_path.joinpath(*(f"a-rather-long-directory-name-{i}" for i in range(4)))
    deep.mkdir(parents=True)
    quickstart = (REPO_ROOT / "deploy" / "examples" / "quickstart.yaml").read_text()
    short = quickstart.replace("TRAIN_STEPS: 600", "TRAIN_STEPS: 40")
    assert short != quickstart
    (deep / "job.yaml").write_text(short, encoding="utf-8")
    (deep / "train_counter.py").write_bytes(
        (REPO_ROOT / "deploy" / "examples" / "train_counter.py").read_bytes())
    res = _gpuopt("submit", "job.yaml", "--wait", columns="40", cwd=deep, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    job_id = re.search(r"submitted (\S+)", res.stdout)
    assert job_id, res.stdout
    expected = f"checkpoint directory: {deep / 'checkpoints' / 'quickstart' / job_id.group(1)}"
    assert len(expected) > 80
    assert expected in res.stdout.splitlines(), res.stdout
