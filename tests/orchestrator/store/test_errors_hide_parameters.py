"""Issue 13.6: a failed statement's error never carries its parameters (a job's spec, a
secret): PostgreSQL refuses NUL characters, and the message it produced used to dump them."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from gpuopt.orchestrator.store import open_store


@pytest.mark.postgres
def test_postgres_error_does_not_show_the_parameters(pg_url: str) -> None:
    store = open_store(pg_url)
    try:
        with pytest.raises(sa.exc.DBAPIError) as info, store.engine.begin() as conn:
            conn.execute(sa.text("SELECT CAST(:v AS text)"),
                         {"v": "spec with secret-1234\x00 inside"})
        assert "secret-1234" not in str(info.value)
        assert "hidden due to hide_parameters" in str(info.value)
    finally:
        store.close()
