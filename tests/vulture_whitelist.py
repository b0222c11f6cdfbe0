"""Names vulture (tests/test_dead_code.py, 80% confidence) reports as unused that are used.

Each entry says why. Add one only with its reason; a name that is really unused is deleted.
"""

# gpuopt/orchestrator/store/tables.py: import_all_tables() imports every table module for
# its side effect: the import registers the module's SQLModel tables in SQLModel.metadata
# (Alembic's autogenerate and env.py read it).
availability_tables  # noqa: B018, F821
daemon_tables  # noqa: B018, F821
jobs_tables  # noqa: B018, F821
secret_tables  # noqa: B018, F821
telemetry_tables  # noqa: B018, F821
user_tables  # noqa: B018, F821
