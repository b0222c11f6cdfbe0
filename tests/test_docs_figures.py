"""The README and docs/ (issue 29.1): a short README whose every command runs as written,
links that resolve, a working [smtp] example, and figures generated from their sources
(docs/update_figures.py) that are current. Cheap: no benchmark runs here."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO_ROOT

README = REPO_ROOT / "README.md"
SETUP = ("python3 -m venv .venv && .venv/bin/pip install -e . && "
         ".venv/bin/gpuopt submit deploy/examples/quickstart.yaml --wait")
TESTS = ".venv/bin/pip install -q -e '.[dev]' && .venv/bin/python -m pytest"


def _figures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("update_figures",
                                                  REPO_ROOT / "docs" / "update_figures.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("update_figures", mod)
    spec.loader.exec_module(mod)
    return mod


def _bash_commands(text: str) -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    return [ln.strip() for b in blocks for ln in b.splitlines() if ln.strip()]


def test_readme_is_short_and_keeps_the_two_setup_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250
    assert SETUP in lines and TESTS in lines  # .ci/run greps them verbatim


def test_every_readme_command_runs_as_written_from_the_venv() -> None:
    commands = _bash_commands(README.read_text(encoding="utf-8"))
    assert len(commands) >= 10
    for cmd in commands:
        assert cmd.startswith((".venv/bin/", "python3 -m venv .venv")), cmd
        assert not re.search(r"(^|&& )gpuopt ", cmd), cmd
        assert not re.search(r"\b[A-Z]{3,}_?[A-Z]*\b", cmd.replace("COLUMNS", "")), (
            f"a placeholder in a command meant to run as written: {cmd}")


def test_readme_tour_covers_estimate_plan_submit_status_daemon_report() -> None:
    commands = " ".join(_bash_commands(README.read_text(encoding="utf-8")))
    for sub in ("estimate", "plan", "submit", "status", "daemon", "report"):
        assert f".venv/bin/gpuopt {sub}" in commands, sub


@pytest.mark.parametrize("page", ["README.md", *sorted(
    f"docs/{p.name}" for p in (REPO_ROOT / "docs").glob("*.md"))])
def test_links_resolve(page: str) -> None:
    path = REPO_ROOT / page
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        assert (path.parent / target).exists(), f"{page}: broken link {target}"


def test_readme_links_every_topic_page() -> None:
    text = README.read_text(encoding="utf-8")
    for page in ("estimator", "planner", "spot-policy", "operations", "job-file",
                 "checkpoint-contract", "clouds"):
        assert f"(docs/{page}.md" in text, page


def test_operations_smtp_example_is_a_working_configuration(tmp_path: Path) -> None:
    from gpuopt.orchestrator.config import load_config

    text = (REPO_ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    (toml,) = [b for b in re.findall(r"```toml\n(.*?)```", text, re.S) if "[smtp]" in b]
    secret = tmp_path / "smtp-password"  # the example's file, where this test can write
    secret.write_text("s3cret\n")
    secret.chmod(0o600)
    assert "/etc/gpuopt/smtp-password" in toml
    cfg = tmp_path / "gpuopt.toml"
    cfg.write_text(toml.replace("/etc/gpuopt/smtp-password", str(secret)))
    settings = load_config(cfg, env={})
    assert settings.smtp.host == "smtp.example.com" and settings.smtp.port == 587
    assert "support-ml" in str(settings.report)


def test_figures_are_current() -> None:
    assert _figures().stale_blocks() == [], (
        "run .venv/bin/python docs/update_figures.py and commit the result")


def test_a_hand_edited_figure_is_caught() -> None:
    fig = _figures()
    page = (REPO_ROOT / "docs" / "estimator.md").read_text(encoding="utf-8")
    assert "<!-- figures:memory-calibration -->" in page
    tampered = re.sub(r"(\d+) of (\d+) public points",
                      lambda m: f"{int(m[1]) - 1} of {m[2]} public points", page, count=1)
    assert tampered != page
    assert fig.render(tampered, "estimator.md") == page
