"""Alembic environment: runs on the connection handed over in config.attributes
["connection"] (already in its transaction, holding the schema lock: see migrate.py),
else on the engine in config.attributes["engine"]."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection
from sqlmodel import SQLModel

from gpuopt.orchestrator.store import tables

tables.import_all_tables()
config = context.config
target_metadata = SQLModel.metadata


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,  # ALTER TABLE on SQLite goes through batch mode
        compare_type=True,
    )


def run_migrations_online() -> None:
    given: Connection | None = config.attributes.get("connection")
    if given is not None:  # the caller commits
        _configure(given)
        context.run_migrations()
        return
    engine = config.attributes.get("engine")
    if engine is None:
        from gpuopt.orchestrator.store.engine import make_engine
        from gpuopt.orchestrator.store.url import resolve_url

        engine = make_engine(resolve_url(None))
    with engine.begin() as connection:
        _configure(connection)
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline (SQL script) migrations are not supported")
run_migrations_online()
