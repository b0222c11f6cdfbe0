"""Alembic, configured in code: upgrade on open, and a helper to autogenerate revisions.

Schema creation and upgrades are serialised between processes (every command opens the
store and may be the first on a brand-new database): the migration runs on one
connection that first takes the database's own lock -- ``pg_advisory_xact_lock`` on
PostgreSQL (released at commit), ``BEGIN EXCLUSIVE`` on SQLite (tied to the database
file, whatever name it was opened by) -- then re-reads the revision and upgrades only if
it is still behind. The fast path (already at HEAD) takes no lock.

``python -m gpuopt.orchestrator.store.migrate revision -m "add jobs"`` autogenerates a revision
from the SQLModel tables (against a scratch SQLite database at the current head).
"""

from __future__ import annotations

import sys
from pathlib import Path

from sqlalchemy import Connection, Engine, inspect, text

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
VERSION_TABLE = "alembic_version"
# One advisory lock key per database for schema changes ("gpuoptmg").
MIGRATION_LOCK_KEY = 0x6770756F70746D67


def alembic_config(engine: Engine | None = None,  # type: ignore[no-untyped-def]
                   connection: Connection | None = None):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("path_separator", "os")
    if engine is not None:
        cfg.attributes["engine"] = engine
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def _revision_on(conn: Connection) -> str | None:
    if not inspect(conn).has_table(VERSION_TABLE):
        return None
    row = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).first()
    return row[0] if row else None


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return _revision_on(conn)


def upgrade(engine: Engine, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(alembic_config(engine), revision)


def _lock_schema(conn: Connection) -> None:
    """Take the database's schema lock in ``conn``'s transaction (held until it ends)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
    elif conn.dialect.name == "sqlite":
        # The driver has not begun a transaction yet (pysqlite begins lazily): this is
        # the transaction's BEGIN, waiting up to the busy timeout for another writer.
        conn.exec_driver_sql("BEGIN EXCLUSIVE")


def upgrade_if_needed(engine: Engine) -> None:
    """Bring the schema to HEAD, one process at a time; no lock when already there."""
    from alembic import command

    from gpuopt.orchestrator.store.migrations import HEAD

    found = current_revision(engine)
    if found == HEAD:
        return
    if found is not None:
        refuse_unknown_revision(engine, found)
    with engine.connect() as conn:
        _lock_schema(conn)
        if _revision_on(conn) != HEAD:  # another process may have upgraded meanwhile
            command.upgrade(alembic_config(engine, conn), "head")
        conn.commit()


def refuse_unknown_revision(engine: Engine, revision: str) -> None:
    """A schema this release has no migration for was written by a newer gpuopt (or
    another branch's): refuse it plainly (exit 2), never Alembic's traceback, and never
    touch it."""
    from alembic.script import ScriptDirectory

    from gpuopt.core.errors import UserError

    known = {s.revision for s in ScriptDirectory.from_config(alembic_config()).walk_revisions()}
    if revision not in known:
        where = engine.url.render_as_string(hide_password=True)
        raise UserError(
            f"the database {where} is at schema revision {revision!r}, which this gpuopt "
            f"does not know: a newer gpuopt wrote it; upgrade gpuopt, or set "
            f"database.url (GPUOPT_DATABASE_URL) to another database", exit_code=2)


def script_head() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def main(argv: list[str]) -> None:
    import argparse
    import tempfile

    from alembic import command

    from gpuopt.orchestrator.store.engine import make_engine

    parser = argparse.ArgumentParser(prog="python -m orchestrator.store.migrate")
    sub = parser.add_subparsers(dest="cmd", required=True)
    rev = sub.add_parser("revision", help="autogenerate a new revision from the tables")
    rev.add_argument("-m", "--message", required=True)
    rev.add_argument("--rev-id", default=None, help="e.g. 0002 (default: next number)")
    args = parser.parse_args(argv)
    head = script_head()
    rev_id = args.rev_id or f"{int(head or '0') + 1:04d}"
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/scratch.db")
        upgrade(engine)
        command.revision(
            alembic_config(engine), message=args.message, autogenerate=True, rev_id=rev_id
        )
        engine.dispose()
    print(f"wrote revision {rev_id}; now set HEAD = {rev_id!r} in migrations/__init__.py")


if __name__ == "__main__":
    main(sys.argv[1:])
