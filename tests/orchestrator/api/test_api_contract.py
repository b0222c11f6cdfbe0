"""The API against its own OpenAPI schema (schemathesis): for every operation, generated
requests (bounded: a few examples each, derandomized) with an admin's token never get a
5xx, and get only statuses, content types and bodies the schema documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.orchestrator.api.conftest import make_api

EXAMPLES = 8  # per operation: the whole contract runs in well under a minute


def test_the_api_keeps_its_contract(tmp_path: Path) -> None:
    from hypothesis import given

    made = make_api(f"sqlite:///{tmp_path / 'gpuopt.db'}", tmp_path)
    try:
        app = made.client.app
        app.state.ctx.limiter.max_failures = 10**6  # the contract here, not the rate limit
        auth = {"Authorization": f"Bearer {made.tokens['root']}"}
        schema = schemathesis.openapi.from_asgi("/api/v1/openapi.json", app)
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) == 11  # jobs x5, me, plan, estimate, prices x2, report
        seen: dict[str, set[int]] = {}
        for op in operations:
            @given(case=op.as_strategy())
            @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                      suppress_health_check=list(HealthCheck))
            def run(case: Any) -> None:
                response = case.call(headers=auth)
                assert response.status_code < 500, (case.method, case.path, response.text)
                case.validate_response(response, checks=[
                    status_code_conformance, content_type_conformance,
                    response_schema_conformance])
                seen.setdefault(f"{case.method} {case.operation.path}", set()).add(
                    response.status_code)

            run()
        # every operation was exercised; the error paths were reached, not only 200s
        assert len(seen) == len(operations)
        assert {422, 404} <= {code for codes in seen.values() for code in codes}
    finally:
        made.store.close()


def test_the_schema_is_served_and_documents_errors() -> None:
    from fastapi.testclient import TestClient

    from gpuopt.orchestrator.api.app import build_app
    from gpuopt.orchestrator.api.context import ApiContext
    from gpuopt.orchestrator.config.model import Settings

    ctx = ApiContext(store=None, settings=Settings(), upload_root=Path("/nonexistent"))  # type: ignore[arg-type]
    doc = TestClient(build_app(ctx)).get("/api/v1/openapi.json").json()
    ops = {(m.upper(), p): op for p, item in doc["paths"].items() for m, op in item.items()}
    assert ("POST", "/api/v1/jobs") in ops and ("GET", "/api/v1/jobs/{job_id}/logs") in ops
    for (_method, _path), op in ops.items():
        assert {"401", "429"} <= set(op["responses"]), _path
    assert {"403", "404"} <= set(ops[("POST", "/api/v1/jobs/{job_id}/cancel")]["responses"])
    assert {"413", "422"} <= set(ops[("POST", "/api/v1/jobs")]["responses"])
    assert doc["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
