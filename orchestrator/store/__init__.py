"""The store: SQLModel tables on SQLite (default) or PostgreSQL, schema by Alembic.

Open it with :func:`open_store` (``url`` None = ``GPUOPT_DATABASE_URL`` or the SQLite file
in the data directory); it migrates the schema to the newest revision on open::

    store = open_store()
    with store.transaction() as session:      # commits on success, rolls back on error
        record_offers(session, offers)

Adding tables (jobs, attempts, ledger, ...) in a later change:

1. Define the SQLModel classes in a new module here (e.g. ``jobs.py``) and import that
   module in ``tables.py``'s ``import_all_tables()`` so Alembic's autogenerate sees it.
2. Write the migration: ``python -m orchestrator.store.migrate revision -m "jobs"``
   (autogenerates from the models against a scratch SQLite database) and review the
   generated file in ``migrations/versions/``; hand-write ``op.create_table`` calls if
   you prefer. Name it ``NNNN_<slug>.py`` with ``revision = "NNNN"`` and
   ``down_revision`` = the previous head. Use ``op.batch_alter_table`` for ALTERs so
   SQLite works.
3. Set ``HEAD`` in ``migrations/__init__.py`` to the new revision (a test checks it
   equals Alembic's head; it lets an up-to-date store open without loading Alembic).
4. The store tests run every migration from empty on SQLite and PostgreSQL.
"""

from __future__ import annotations

from orchestrator.store.engine import Store, open_store, open_store_if_exists

__all__ = ["Store", "open_store", "open_store_if_exists"]
