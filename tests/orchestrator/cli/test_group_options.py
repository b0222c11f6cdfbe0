"""An option given at a group's level is honoured by its subcommand or refused (exit 2),
never dropped (issue 29.13: `gpuopt daemon --config cfg.toml run` ran on defaults)."""

from __future__ import annotations

from pathlib import Path

import pytest


def _main(*argv: str) -> int:
    from gpuopt.orchestrator.cli.app import main

    with pytest.raises(SystemExit) as done:
        main(list(argv))
    code = done.value.code
    return code if isinstance(code, int) else 0


def _config(tmp_path: Path) -> Path:
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f'[database]\nurl = "sqlite:///{tmp_path}/mine.db"\n'
                   "[daemon]\nmetrics_address = \"127.0.0.1:19464\"\n")
    return cfg


def test_daemon_group_config_reaches_run(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuopt.orchestrator.daemon.runner as runner

    seen = []

    def capture(settings, log_format=None):  # type: ignore[no-untyped-def]
        seen.append((settings, log_format))
        return 0

    monkeypatch.setattr(runner, "run_daemon", capture)
    assert _main("daemon", "--config", str(_config(tmp_path)), "--log-format", "json",
                 "run") == 0
    (settings, log_format), = seen
    assert settings.daemon.metrics_address == "127.0.0.1:19464"
    assert "mine.db" in settings.database.url
    assert log_format == "json"


def test_daemon_group_config_reaches_status(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _main("daemon", "--config", str(_config(tmp_path)), "status")
    assert "mine.db" in capsys.readouterr().out


def test_an_option_the_subcommand_does_not_take_is_refused(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert _main("daemon", "--log-format", "json", "status") == 2
    err = capsys.readouterr().err
    assert "--log-format is an option of `gpuopt daemon` itself" in err
    assert _main("prices", "--gpu", "H100", "history") == 2
    assert "--gpu is an option of `gpuopt prices` itself" in capsys.readouterr().err


def test_given_twice_differently_is_refused(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert _main("daemon", "--config", str(tmp_path / "a.toml"), "status", "--config",
                 str(tmp_path / "b.toml")) == 2
    assert "--config given twice, differently" in capsys.readouterr().err


def test_prices_group_config_reaches_history(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.toml"
    assert _main("prices", "--config", str(missing), "history", "--gpu", "T4") == 2
    assert f"config file {missing} does not exist" in capsys.readouterr().err
