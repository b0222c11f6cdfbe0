"""The line of a key in a TOML text (config errors say file:line [section] key)."""

from __future__ import annotations

import tomllib

from gpuopt.orchestrator.config.toml_lines import line_of, split_key

TEXT = '''# comment: key = 1
[daemon]
poll_interval = "5m"  # = not a key
note = """
fake = "inside a string"
"""
fake2 = 1

[report.recipients]
"ml team" = ["a@b.org"]
'nlp' = ["c@d.org"]

[[reserved]]
cloud = "aws"
[[reserved]]
cloud = "gcp"
count = 2
[smtp]
tls.mode = "x"
'''


def test_lines_of_keys_tables_and_array_entries() -> None:
    tomllib.loads(TEXT)  # the text is TOML
    assert line_of(TEXT, ("daemon", "poll_interval")) == 3
    assert line_of(TEXT, ("daemon", "fake")) == 2  # not a key: its table's header
    assert line_of(TEXT, ("daemon", "fake2")) == 7
    assert line_of(TEXT, ("report", "recipients", "ml team", 0)) == 10
    assert line_of(TEXT, ("report", "recipients", "nlp")) == 11
    assert line_of(TEXT, ("reserved", 1, "count")) == 17
    assert line_of(TEXT, ("reserved", 0, "cloud")) == 14
    assert line_of(TEXT, ("smtp", "tls", "mode")) == 19
    assert line_of(TEXT, ("telemetry", "interval")) is None


def test_split_key() -> None:
    assert split_key('a."b.c".d') == ["a", "b.c", "d"]
    assert split_key('"x\\u001by"') == ["x\x1by"]
    assert split_key("a b") is None and split_key("") is None
