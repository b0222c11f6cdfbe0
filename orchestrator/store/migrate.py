"""Alembic, configured in code: upgrade on open, and a helper to autogenerate revisions.

``python -m gpuopt.orchestrator.store.migrate revision -m "add jobs"`` autogenerates a revision
from the SQLModel tables (against a scratch SQLite database at the current head).
"""

from __future__ import annotations

import sys
from pathlib import Path

from sqlalchemy import Engine, inspect, text

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
VERSION_TABLE = "alembic_version"


def alembic_config(engine: Engine | None = None):  # type: ignore[no-untyped-def]
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("path_separator", "os")
    if engine is not None:
        cfg.attributes["engine"] = engine
    return cfg


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        if not inspect(conn).has_table(VERSION_TABLE):
            return None
        row = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).first()
        return row[0] if row else None


def upgrade(engine: Engine, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(alembic_config(engine), revision)


def upgrade_if_needed(engine: Engine) -> None:
    """Run Alembic only when the store is not at HEAD (keeps opening an up-to-date store fast)."""
    from gpuopt.orchestrator.store.migrations import HEAD

    if current_revision(engine) != HEAD:
        upgrade(engine)


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
