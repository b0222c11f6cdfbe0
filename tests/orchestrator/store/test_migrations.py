from __future__ import annotations

import os
import stat
from pathlib import Path

import sqlalchemy as sa

from gpuopt.orchestrator.store import open_store
from gpuopt.orchestrator.store.migrate import current_revision, script_head
from gpuopt.orchestrator.store.migrations import HEAD


def test_head_constant_matches_alembic() -> None:
    assert script_head() == HEAD


def test_migrates_from_empty_to_head(db_url: str) -> None:
    store = open_store(db_url)
    try:
        assert current_revision(store.engine) == HEAD
        names = set(sa.inspect(store.engine).get_table_names())
        assert {"offer_series", "price_change", "alembic_version"} <= names
    finally:
        store.close()


def test_downgrade_to_base_and_up_again(db_url: str) -> None:
    from alembic import command

    from gpuopt.orchestrator.store.migrate import alembic_config

    store = open_store(db_url)
    try:
        command.downgrade(alembic_config(store.engine), "base")
        assert "price_change" not in sa.inspect(store.engine).get_table_names()
        assert current_revision(store.engine) is None
        reopened = open_store(db_url)
        assert current_revision(reopened.engine) == HEAD
        reopened.close()
    finally:
        store.close()


def test_sqlite_file_is_private_and_wal(tmp_path: Path) -> None:
    db = tmp_path / "sub" / "gpuopt.db"
    store = open_store(f"sqlite:///{db}")
    try:
        assert stat.S_IMODE(os.stat(db).st_mode) == 0o600
        with store.engine.connect() as conn:
            assert conn.execute(sa.text("PRAGMA journal_mode")).scalar() == "wal"
            assert conn.execute(sa.text("PRAGMA busy_timeout")).scalar() > 0
    finally:
        store.close()


def test_open_if_exists_does_not_create(tmp_path: Path) -> None:
    from gpuopt.orchestrator.store import open_store_if_exists

    db = tmp_path / "none.db"
    assert open_store_if_exists(f"sqlite:///{db}") is None
    assert not db.exists()


def test_a_schema_from_a_newer_gpuopt_is_refused_plainly(db_url: str) -> None:
    """Seen when two branches shared one default store: a revision this release has no
    file for made every command end in Alembic's traceback. Now: exit 2, what to do, and
    the database left as it was."""
    import pytest

    from gpuopt.core.errors import UserError

    store = open_store(db_url)
    with store.engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0999_from_the_future'"))
    store.close()
    with pytest.raises(UserError) as err:
        open_store(db_url)
    assert err.value.exit_code == 2
    assert "schema revision '0999_from_the_future', which this gpuopt does not know" in str(
        err.value)
    assert "upgrade gpuopt" in str(err.value)
    engine = sa.create_engine(db_url)
    try:
        assert current_revision(engine) == "0999_from_the_future"  # untouched
    finally:
        engine.dispose()
