"""Issue 26.8: a configuration string with a control character is refused when the
configuration is read (exit 2, the file, its line and the key), instead of reaching a mail
header: ``[report] from_address`` with CR/LF passed validation and `report --email` died
with a traceback, exit 1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuopt.orchestrator.config import ConfigError, load_config


def _refused(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> str:
    f = tmp_path / "config.toml"
    f.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(f, env=env or {})
    assert info.value.exit_code == 2
    message = str(info.value)
    assert "\r" not in message and "\n" not in message.split(":", 1)[1].split("\n  ")[0]
    return message.replace(str(f), "FILE")


@pytest.mark.parametrize(("text", "where", "char"), [
    ('[report]\nfrom_address = "gpuopt@example.com\\r\\nBcc: all@example.com"\n',
     "FILE:2 [report] from_address:", "U+000D (CR)"),
    ('[report]\ntimezone = "UTC"\n\nfrom_address = "a@b.org\\nX: y"\n',
     "FILE:4 [report] from_address:", "U+000A (LF)"),
    ('[report.recipients]\nnlp = ["a@b.org", "c@d.org\\r\\nBcc: x@y.org"]\n',
     "FILE:2 [report.recipients] nlp (item 2):", "U+000D (CR)"),
    ('[report.recipients]\n"ml\\r\\nBcc: x@y.org" = ["a@b.org"]\n',
     "FILE:2 [report] recipients:", "U+000D (CR)"),
    ('[report]\nrecipients = { "nlp\\u001b[2J" = ["a@b.org"] }\n',
     "FILE:2 [report] recipients:", "U+001B (ESC)"),
    ('[smtp]\nhost = "mail.example.com\\r\\nRCPT TO:<x@y.org>"\n', "FILE:2 [smtp] host:",
     "U+000D (CR)"),
    ('[smtp]\nport = 25\nusername = "ops\\u202eadmin"\n', "FILE:3 [smtp] username:",
     "U+202E (bidi control)"),
    ('[daemon]\nmetrics_address = "127.0.0.1:9464\\u0085"\n',
     "FILE:2 [daemon] metrics_address:", "U+0085"),
    ('[[reserved]]\ncloud = "aws"\nregion = "us-east-1\\u001b"\ninstance_type = "p5"\n'
     'count = 1\n', "FILE:3 [[reserved]] entry 1: region:", "U+001B (ESC)"),
    ('report.from_address = "a@b.org\\r"\n', "FILE:1 [report] from_address:", "U+000D"),
])
def test_control_characters_are_refused_with_file_line_and_key(
        tmp_path: Path, text: str, where: str, char: str) -> None:
    message = _refused(tmp_path, text)
    assert where in message, message
    assert char in message and "remove it" in message


def test_an_environment_override_names_the_variable(tmp_path: Path) -> None:
    message = _refused(tmp_path, "", env={"GPUOPT_REPORT_FROM_ADDRESS": "a@b.org\r\nBcc: x@y.z"})
    assert "environment variable GPUOPT_REPORT_FROM_ADDRESS: contains the control " \
        "character U+000D (CR)" in message


def test_from_address_is_one_address(tmp_path: Path) -> None:
    message = _refused(tmp_path, '[report]\nfrom_address = "a@b.org, c@d.org"\n')
    assert re.search(r"FILE:2 \[report\] from_address: .*one address", message), message
    f = tmp_path / "ok.toml"
    f.write_text('[report]\nfrom_address = "gpuopt reports <gpuopt@example.com>"\n')
    assert load_config(f, env={}).report.from_address == "gpuopt reports <gpuopt@example.com>"


def test_report_email_with_a_crlf_sender_exits_2_without_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpuopt.orchestrator.cli.app import main

    f = tmp_path / "config.toml"
    f.write_text('[report]\nfrom_address = "gpuopt@example.com\\r\\nBcc: all@example.com"\n'
                 'recipients = { everyone = ["ops@example.com"] }\n')
    with pytest.raises(SystemExit) as exc:
        main(["report", "--email", "--config", str(f)])
    out, err = capsys.readouterr()
    assert exc.value.code == 2
    assert "Traceback" not in out + err
    assert f"{f}:2 [report] from_address: contains the control character U+000D (CR)" in err
