"""Alembic, configured in code: upgrade on open, and a helper to autogenerate revisions.

Schema creation and upgrades are serialised between processes (every command opens the
store and may be the first on a brand-new database): the migration runs on one
connection that first takes the database's own lock -- ``pg_advisory_xact_lock`` on
PostgreSQL (released at commit), ``BEGIN EXCLUSIVE`` on SQLite (tied to the database
file, whatever name it was opened by) -- then re-reads the revision and upgrades only if
it is still behind. The fast path (already at HEAD) takes no lock.

``python -m gpuopt.orchestrator.store.migrate revision -m "add jobs"`` autogenerates a revision
from the SQLModel tables (against a scratch SQLite database at the current head), named
``NNNN_<slug>`` (docs/migrations.md).

The revisions were renumbered into file order; a database written before that holds an
old id, which :data:`RENAMED_REVISIONS` maps to its new one before Alembic reads it
(exactly: Alembic would match an unknown ``0006`` by prefix to ``0006_offer_host_scores``
and skip two migrations).
"""

from __future__ import annotations

import sys
from pathlib import Path

from sqlalchemy import Connection, Engine, inspect, text

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
VERSION_TABLE = "alembic_version"
# One advisory lock key per database for schema changes ("gpuoptmg").
MIGRATION_LOCK_KEY = 0x6770756F70746D67
# A revision id: four digits, an underscore, a lower-case slug; the file is ``<id>.py``.
REVISION_ID_PATTERN = r"[0-9]{4}_[a-z0-9]+(?:_[a-z0-9]+)*"
# alembic_version.version_num is VARCHAR(32).
MAX_REVISION_ID_LENGTH = 32
# The ids before the renumbering (chain order was 0001 0002 0003 0006 0004 0007
# 0009_availability 0008_telemetry 0007_resolved_spec ...) -> the ids in file order.
# Ids that did not change are not listed. Never remove an entry.
RENAMED_REVISIONS: dict[str, str] = {
    "0001": "0001_price_history",
    "0002": "0002_jobs",
    "0003": "0003_daemon",
    "0006": "0004_bigint_progress",
    "0004": "0005_lifecycle",
    "0007": "0006_offer_host_scores",
    "0009_availability": "0007_availability",
    "0007_resolved_spec": "0009_resolved_spec",
}


def alembic_config(engine: Engine | None = None,  # type: ignore[no-untyped-def]
                   connection: Connection | None = None):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("path_separator", "os")
    cfg.set_main_option("file_template", "%%(rev)s")  # the file is named by the revision id
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


def _rename_old_revision(conn: Connection) -> None:
    """Rewrite a pre-renumbering id in alembic_version to its new id (exact match only)."""
    found = _revision_on(conn)
    renamed = RENAMED_REVISIONS.get(found) if found is not None else None
    if renamed is not None:
        conn.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = :new "
                          "WHERE version_num = :old"), {"new": renamed, "old": found})


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return _revision_on(conn)


def upgrade(engine: Engine, revision: str = "head") -> None:
    from alembic import command

    with engine.begin() as conn:
        _rename_old_revision(conn)
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
    if found is not None and found not in RENAMED_REVISIONS:
        refuse_unknown_revision(engine, found)
    with engine.connect() as conn:
        _lock_schema(conn)
        _rename_old_revision(conn)  # before Alembic reads the revision
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


def next_revision_id(head: str | None, message: str) -> str:
    """The id after ``head`` for a revision described by ``message``: ``0014_add_jobs``.

    Raises ValueError when ``message`` holds no letter or digit to make a slug of."""
    import re

    number = int(head[:4]) + 1 if head else 1
    slug = "_".join(re.findall(r"[a-z0-9]+", message.lower()))
    if not slug:
        raise ValueError(f"the message {message!r} gives no slug for the revision id")
    return f"{number:04d}_{slug}"[:MAX_REVISION_ID_LENGTH].rstrip("_")


def main(argv: list[str]) -> None:
    import argparse
    import tempfile

    from alembic import command

    from gpuopt.orchestrator.store.engine import make_engine

    parser = argparse.ArgumentParser(prog="python -m orchestrator.store.migrate")
    sub = parser.add_subparsers(dest="cmd", required=True)
    rev = sub.add_parser("revision", help="autogenerate a new revision from the tables")
    rev.add_argument("-m", "--message", required=True)
    args = parser.parse_args(argv)
    rev_id = next_revision_id(script_head(), args.message)
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
