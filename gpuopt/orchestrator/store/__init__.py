"""The store: SQLModel tables on SQLite (default) or PostgreSQL, schema by Alembic.

Open it with :func:`open_store` (``url`` None = ``GPUOPT_DATABASE_URL`` or the SQLite file
in the data directory); it migrates the schema to the newest revision on open::

    store = open_store()
    with store.transaction() as session:      # commits on success, rolls back on error
        record_offers(session, offers)

This module imports SQLAlchemy only when a store is opened (CLI start-up stays fast).

Adding tables (jobs, attempts, ledger, ...) in a later change:

1. Define the SQLModel classes in a new module here (e.g. ``jobs.py``) and import that
   module in ``tables.py``'s ``import_all_tables()`` so Alembic's autogenerate sees it.
2. Write the migration: ``python -m gpuopt.orchestrator.store.migrate revision -m "jobs"``
   (autogenerates from the models against a scratch SQLite database at the current
   head) and review the generated file in ``migrations/versions/``; hand-written
   ``op.create_table`` calls are fine too. The file is ``NNNN_<slug>.py`` (NNNN = the
   head's number + 1) with ``revision = "NNNN_<slug>"`` (the file's stem) and
   ``down_revision`` = the previous head (docs/migrations.md). Use
   ``op.batch_alter_table`` for ALTERs so SQLite works. Never edit a shipped revision.
3. Set ``HEAD`` in ``migrations/__init__.py`` to the new revision (a test checks it
   equals Alembic's head; it lets an up-to-date store open without loading Alembic).
4. The store tests run every migration from empty on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuopt.orchestrator.store.url import resolve_url, sqlite_file

if TYPE_CHECKING:
    from gpuopt.orchestrator.store.engine import Store


def open_store(url: str | None = None, *, migrate: bool = True) -> Store:
    """Open the store at ``url`` (see resolve_url) and bring its schema up to date."""
    from gpuopt.orchestrator.store.engine import open_store as _open

    return _open(url, migrate=migrate)


def open_store_if_exists(url: str | None = None) -> Store | None:
    """Like open_store, but None (without importing SQLAlchemy) when the SQLite file
    does not exist yet: a fresh machine."""
    resolved = resolve_url(url)
    file = sqlite_file(resolved)
    if file is not None and not file.exists():
        return None
    return open_store(resolved)


def __getattr__(name: str) -> object:
    if name == "Store":
        from gpuopt.orchestrator.store.engine import Store

        return Store
    raise AttributeError(name)


__all__ = ["Store", "open_store", "open_store_if_exists", "resolve_url"]
