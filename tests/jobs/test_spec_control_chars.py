"""Issue 26.7: terminal control characters in a job file are refused with file:line and
the field (exit 2): a name, owner or team with ``\\x1b]0;pwned\\x07\\x1b[2J`` was stored
and printed raw by `jobs`, the text report and the e-mail. Scripts may be multi-line (TAB,
LF, CR) but take no other control character and no bidi override (Trojan Source)."""

from __future__ import annotations

import pytest

from gpuopt.jobs.errors import SpecError
from gpuopt.jobs.loader import parse_job_spec
from gpuopt.jobs.spec import JobSpec

BASE = ("name: t\nrun: echo hi\nmodel:\n  name: gpt2\nworkload:\n  type: finetune\n"
        "  tokens: 5m\n")
PWNED = r"\x1b]0;pwned\x07\x1b[2J"  # as written in a double-quoted YAML scalar


def _error(text: str) -> str:
    with pytest.raises(SpecError) as info:
        parse_job_spec(text, "job.yaml")
    assert info.value.exit_code == 2
    return str(info.value)


@pytest.mark.parametrize(("text", "where", "char"), [
    (BASE.replace("name: t", f'name: "{PWNED}"'), "job.yaml:1 name:", "U+001B (ESC)"),
    (BASE + f'owner: "{PWNED}"\n', "job.yaml:8 owner:", "U+001B (ESC)"),
    (BASE + f'team: "{PWNED}"\n', "job.yaml:8 team:", "U+001B (ESC)"),
    (BASE + 'owner: "alice\\r\\nBcc: all@example.com"\n', "job.yaml:8 owner:", "U+000D (CR)"),
    (BASE + 'team: "ml\\u202egnp.exe"\n', "job.yaml:8 team:", "U+202E (bidi control)"),
    (BASE + 'team: "ml\\u2066x"\n', "job.yaml:8 team:", "U+2066 (bidi control)"),
    (BASE + 'owner: "a\\x9bb"\n', "job.yaml:8 owner:", "U+009B (CSI)"),  # C1
    (BASE + 'owner: "a\\x85b"\n', "job.yaml:8 owner:", "U+0085"),  # C1 NEL
    (BASE + 'owner: "a\\tb"\n', "job.yaml:8 owner:", "U+0009 (TAB)"),  # one line
    (BASE + 'owner: "a\\x7fb"\n', "job.yaml:8 owner:", "U+007F (DEL)"),
    (BASE + 'checkpoint:\n  dir: "/tmp/\\x1b[2J"\n', "job.yaml:9 checkpoint.dir:", "ESC"),
    (BASE + 'resources:\n  regions: ["us-east-1\\x1b"]\n', "job.yaml:9 resources.regions.0:",
     "ESC"),
    (BASE + 'envs:\n  A: "x\\x1by"\n', "job.yaml:9 envs.A:", "ESC"),
    (BASE + '"k\\x1b": 1\n', "job.yaml:8", "ESC"),  # a key
    (BASE.replace("run: echo hi", 'run: "echo \\u202e hi"'), "job.yaml:2 run:", "U+202E"),
    (BASE.replace("run: echo hi", 'run: "printf \\x1b[2J"'), "job.yaml:2 run:", "ESC"),
])
def test_control_characters_are_refused_with_file_line_and_field(
        text: str, where: str, char: str) -> None:
    message = _error(text)
    assert message.startswith(where), message
    assert char in message and "remove it" in message
    assert "\x1b" not in message and "\u202e" not in message  # the error is safe to print


def test_scripts_and_env_values_may_be_multi_line() -> None:
    text = BASE.replace("run: echo hi", 'run: "set -e\\r\\n\\techo a\\necho b\\n"') \
        + 'setup: |\n  pip install x\n  echo done\nenvs:\n  CERT: "line1\\nline2\\tend"\n'
    spec = parse_job_spec(text, "job.yaml")
    assert spec.run == "set -e\r\n\techo a\necho b" and spec.envs["CERT"] == "line1\nline2\tend"


def test_ordinary_unicode_names_are_kept() -> None:
    text = BASE.replace("name: t", "name: entraînement-日本語") + "owner: zoë@example.com\n" \
        + "team: مرحبا\n"  # right-to-left text without any override is fine
    spec = parse_job_spec(text, "job.yaml")
    assert (spec.name, spec.owner, spec.team) == ("entraînement-日本語", "zoë@example.com",
                                                  "مرحبا")


def test_the_model_refuses_them_without_the_loader_but_reads_stored_specs() -> None:
    """A spec validated directly (an API caller) refuses them too; a spec stored by an
    older version (context stored) is still read, and escaped wherever it is shown."""
    data = {"name": "x\x1b[2J", "model": {"name": "gpt2"},
            "workload": {"type": "finetune", "tokens": 5_000_000}}
    with pytest.raises(ValueError, match="U\\+001B"):
        JobSpec.model_validate(data)
    with pytest.raises(ValueError, match="U\\+202E"):
        JobSpec.model_validate({**data, "name": "ok", "team": "a\u202eb"})
    stored = JobSpec.model_validate(data, context={"stored": True})
    assert stored.name == "x\x1b[2J"
    legacy = parse_job_spec(BASE + f'owner: "{PWNED}"\n', "job.yaml", stored=True)
    assert legacy.owner == "\x1b]0;pwned\x07\x1b[2J"
