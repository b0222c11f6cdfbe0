"""Suite-wide fixtures: every test gets its own GPUOPT_HOME and no test reaches a cloud;
databases of each kind for the tests that need a store.

PostgreSQL: a throwaway database gpuopt_test_<random> on 127.0.0.1:5432 (trust auth,
user postgres; GPUOPT_TEST_PG overrides the admin URL), created once per test session
and dropped at the end; each test that asks for it gets an empty schema. When the server
is unreachable those cases are skipped with the reason (CI has the server).
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Hypothesis runs derandomized (the same examples on every run, on every machine) and
# without its example database, so the README's test command gives the same verdict
# every time; a failure it ever found is kept as an @example beside its test.
# HYPOTHESIS_PROFILE=explore searches with fresh random examples (and remembers failures).
settings.register_profile("deterministic", derandomize=True, database=None,
                          print_blob=True)
settings.register_profile("explore", derandomize=False, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

# No test reaches the real Hugging Face Hub: a Hub id in a job (model.name: org/model)
# that is not in the table reads the huggingface_hub cache only, here in a throwaway
# directory. Set before huggingface_hub is imported (it reads both at import); the tests
# of the Hub path run against a local stand-in (tests/hubstub.py) and undo this.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_HOME"] = os.path.join(tempfile.gettempdir(), "gpuopt-tests-no-hf-cache")

REPO_ROOT = Path(__file__).resolve().parent.parent
# the layers' files (the root's core/, jobs/, ... are links into it, absent in a checkout
# without symlinks): tests that read the product's files read them here
PACKAGE_ROOT = REPO_ROOT / "gpuopt"
# the starter configuration `gpuopt config init` writes; deploy/config.example.toml links to it
CONFIG_EXAMPLE = PACKAGE_ROOT / "orchestrator" / "config" / "config.example.toml"
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
PG_ADMIN = os.environ.get("GPUOPT_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("gpuopt-home")
    monkeypatch.setenv("GPUOPT_HOME", str(home))
    monkeypatch.delenv("GPUOPT_DATABASE_URL", raising=False)
    # Never let an SDK find real credentials or a metadata server from a test.
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    yield home


@pytest.fixture
def shared_data() -> Path:
    """../shared/data beside the repository; skipped with a clear reason where absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is absent (CI always has ../shared beside the checkout)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The URL of a throwaway PostgreSQL database for this test session."""
    import sqlalchemy as sa

    admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except Exception as err:  # pragma: no cover - depends on the machine
        admin.dispose()
        pytest.skip(
            f"PostgreSQL not reachable at {PG_ADMIN} ({type(err).__name__}); "
            "CI runs these tests against its PostgreSQL server"
        )
    name = f"gpuopt_test_{secrets.token_hex(4)}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def pg_url(pg_server: str) -> str:
    """The session's PostgreSQL database with an empty schema."""
    import sqlalchemy as sa

    engine = sa.create_engine(pg_server)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP SCHEMA public CASCADE"))
        conn.execute(sa.text("CREATE SCHEMA public"))
    engine.dispose()
    return pg_server


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database (no tables) of each kind: the test runs once per kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'gpuopt.db'}"
    return str(request.getfixturevalue("pg_url"))


# -- a real SkyPilot API server (tests/sky_server.py) -----------------------------------
_SKY_TIMINGS: list[str] = []


@pytest.fixture(scope="session")
def sky_api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One real SkyPilot API server on 127.0.0.1 (a free port) in a throwaway HOME for the
    whole session, stopped at its end; skipped with the reason where SkyPilot is absent."""
    import importlib.util

    if importlib.util.find_spec("sky") is None:
        pytest.skip("SkyPilot is not installed (pip install -e '.[skypilot]')")
    from tests import sky_server

    server = sky_server.start(tmp_path_factory.mktemp("sky-home"))
    _SKY_TIMINGS.append(f"SkyPilot API server on {server.url}: ready in "
                        f"{server.start_seconds:.1f} s (`sky api start` + clouds enabled)")
    try:
        yield server
    finally:
        sky_server.stop(server)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in _SKY_TIMINGS:
        terminalreporter.write_line(line)
