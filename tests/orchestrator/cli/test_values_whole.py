"""At 80 columns no table value breaks mid-word (issue 29.9: `demo@example.` / `com`)."""

from __future__ import annotations

import pytest


def _views(owner: str) -> list[dict[str, object]]:
    return [{"id": "quickstart-train-6vw8zw", "name": "quickstart-train-counter",
             "owner": owner, "team": "support-ml", "status": "running", "attempts": 1,
             "placement": "T4 x1 spot azure/eastus", "cost": "0.000703",
             "cost_is_simulated": True},
            {"id": "qlora-llama2-7b-2fq8x1", "name": "qlora-llama2-7b-support-bot",
             "owner": "alice@example.com", "team": "nlp", "status": "succeeded",
             "attempts": 2, "placement": "A100-80GB x8 spot azure/westeurope",
             "cost": "1322.12", "cost_is_simulated": False}]


@pytest.mark.parametrize("columns", ["80", "72", "100"])
def test_jobs_owner_is_never_split(columns: str, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.jobs_cmd import print_jobs

    monkeypatch.setenv("COLUMNS", columns)
    print_jobs(out_console(), _views("demo@example.com"))
    out = capsys.readouterr().out
    words = out.split()
    for value in ("demo@example.com", "alice@example.com", "azure/westeurope",
                  "azure/eastus"):
        if any(value[:6] in w for w in words):  # the column is shown: whole, then
            assert value in words, f"{value!r} broken:\n{out}"
    assert all(len(line.rstrip()) <= int(columns) for line in out.splitlines()
               if not line.startswith("* "))


def test_text_column_is_at_least_its_longest_word() -> None:
    from gpuopt.orchestrator.cli.tables import Col

    assert Col("owner").needed(["demo@example.com", "x"]) == len("demo@example.com")
