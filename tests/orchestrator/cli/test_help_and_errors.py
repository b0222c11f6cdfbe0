"""Every command's --help has an example; --version; shell completion; typer's own usage
errors said in gpuopt's `error: ...` style (exit 2); bad input exits 2 everywhere."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import typer
from typer.testing import CliRunner

from gpuopt.orchestrator.cli.app import build_app, main


def _paths(cmd: object, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from _paths(sub, (*path, name))


def test_every_command_help_has_an_example() -> None:
    root = typer.main.get_command(build_app())
    paths = list(_paths(root))
    assert len(paths) >= 20  # the tree was walked: root, groups and their commands
    runner = CliRunner()
    missing = []
    for path in paths:
        res = runner.invoke(build_app(), [*path, "--help"], env={"COLUMNS": "80"})
        assert res.exit_code == 0, (path, res.output)
        examples = [ln.strip() for ln in res.output.splitlines()
                    if ln.strip().startswith("Example: ")]
        if not any(e.startswith("Example: gpuopt ") or " gpuopt " in e for e in examples):
            missing.append(" ".join(path) or "(root)")
    assert missing == []


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    code, out, _ = _main(capsys, "--version")
    assert code == 0 and out == f"gpuopt {version('gpuopt')}\n"


def test_shell_completion_is_offered(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _main(capsys, "--help")
    assert code == 0 and "--install-completion" in out and "--show-completion" in out
    # In a process of its own, as a shell runs it: typer's completion reads process-wide
    # state (the environment, the detected shell) that earlier in-process tests may change.
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "gpuopt.orchestrator.cli.app",
                          "--show-completion", "bash"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0 and "_GPUOPT_COMPLETE" in res.stdout, res.stderr


@pytest.mark.parametrize(("argv", "expect"), [
    (["plan", "--top", "x", "job.yaml"],
     "error: invalid value for '--top': Input should be a valid integer"),
    (["plan", "--bogus"], "error: no such option: --bogus (see `gpuopt plan --help`)"),
    (["jobs", "--limit", "-1"], "error: invalid value for '--limit'"),
    (["nope"], "error: no such command 'nope'"),
    (["report", "--week", "2026-X"], "error: --week: '2026-X' is not an ISO week"),
    (["report", "--week", "2026-W60"], "error: --week: 2026-W60 is not an ISO week"),
    (["jobs", "--status", "done"], "error: --status 'done': choose from live, queued"),
])
def test_usage_errors_read_like_gpuopt_errors(capsys: pytest.CaptureFixture[str],
                                              argv: list[str], expect: str) -> None:
    code, out, err = _main(capsys, *argv)
    assert code == 2
    assert err.startswith(expect), err
    assert "Usage:" not in err and "Traceback" not in err and out == ""
    assert err.count("\n") == 1  # one line, never hard-wrapped


def test_no_arguments_prints_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _main(capsys)
    assert code == 2 and "Commands:" in out + err
