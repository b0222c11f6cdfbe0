"""Alembic environment: runs on the engine handed over in config.attributes["engine"]."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

from gpuopt.orchestrator.store import tables

tables.import_all_tables()
config = context.config
target_metadata = SQLModel.metadata


def run_migrations_online() -> None:
    engine = config.attributes.get("engine")
    if engine is None:
        from gpuopt.orchestrator.store.engine import make_engine
        from gpuopt.orchestrator.store.url import resolve_url

        engine = make_engine(resolve_url(None))
    with engine.begin() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=True,  # ALTER TABLE on SQLite goes through batch mode
            compare_type=True,
        )
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline (SQL script) migrations are not supported")
run_migrations_online()
