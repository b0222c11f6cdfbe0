"""The API's contract by hand: two members and an admin on one server; no token 401,
another user's job 403 with the owner named, a revoked token at once 401, failed
authentications rate-limited, uploads refused (traversal 422, too large 413), the
CLI's file:line messages as 422, unknown routes 404, wrong methods 405; tokens never in
answers, logs or the database."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.orchestrator.api.conftest import Api, job_yaml, tar_of

SRC = {"src/train.py": b"print('train')\n"}


def test_members_see_their_own_jobs_the_admin_all(api: Api) -> None:
    a = api.submit("alice", "a-job", tar_of({"train.py": b"print(1)\n"}))
    assert a.status_code == 201, a.text
    b = api.submit("bob", "b-job", tar_of({"train.py": b"print(2)\n"}))
    assert b.status_code == 201, b.text
    a_id, b_id = a.json()["id"], b.json()["id"]
    assert a.json()["status"] == "queued" and a.json()["executor"] == "local"
    assert "cheapest placements" in a.json()["plan_text"]

    def ids(user: str, **params: object) -> list[str]:
        res = api.client.get("/api/v1/jobs", params=params, headers=api.h(user))
        assert res.status_code == 200, res.text
        return [j["id"] for j in res.json()]

    assert ids("alice") == [a_id] and ids("bob") == [b_id]
    assert ids("root") == [a_id, b_id]
    assert ids("root", team="cv") == [b_id] and ids("root", owner="alice") == [a_id]
    assert ids("root", status="succeeded") == [] and ids("root", limit=1) == [b_id]
    # the job is the user's and its team's
    shown = api.client.get(f"/api/v1/jobs/{a_id}", headers=api.h("alice")).json()
    assert (shown["owner"], shown["team"]) == ("alice", "nlp")
    # the workdir was unpacked on the server and is the job's
    from gpuopt.orchestrator.reconcile.attempts import load_stored_spec
    from gpuopt.orchestrator.store.jobs_repo import find_job

    with api.store.session() as session:
        row = find_job(session, a_id)
    workdir = Path(load_stored_spec(row).workdir or "")
    assert (workdir / "train.py").read_bytes() == b"print(1)\n"
    assert row.submitted_by == "alice"


def test_no_token_401_wrong_user_403_admin_may(api: Api) -> None:
    a_id = api.submit("alice", "mine", tar_of({"x.py": b""})).json()["id"]
    assert api.client.get("/api/v1/jobs").status_code == 401
    assert api.client.get(f"/api/v1/jobs/{a_id}").status_code == 401
    res = api.client.post(f"/api/v1/jobs/{a_id}/cancel", headers=api.h("bob"))
    assert res.status_code == 403
    assert res.json()["detail"] == (f"job {a_id} belongs to alice: only its owner or an "
                                    "admin may cancel it")
    assert api.client.get(f"/api/v1/jobs/{a_id}", headers=api.h("bob")).status_code == 403
    res = api.client.post(f"/api/v1/jobs/{a_id}/cancel", headers=api.h("root"))
    assert res.status_code == 200 and res.json()["id"] == a_id
    from gpuopt.orchestrator.store.jobs_repo import find_job
    from gpuopt.orchestrator.store.users_repo import audit_of

    with api.store.session() as session:
        trail = [(r.actor, r.action) for r in audit_of(session, [a_id])]
        assert find_job(session, a_id).cancel_requested
    assert trail == [("alice", "submit"), ("root", "cancel")]


def test_a_revoked_token_stops_at_once(api: Api) -> None:
    from gpuopt.orchestrator.api.users import revoke

    assert api.client.get("/api/v1/me", headers=api.h("bob")).json()["name"] == "bob"
    revoke(api.store, "bob", datetime.now(UTC))
    res = api.client.get("/api/v1/me", headers=api.h("bob"))
    assert res.status_code == 401 and "revoked" in res.json()["detail"]


def test_failed_authentications_are_rate_limited(api: Api) -> None:
    from gpuopt.orchestrator.api.auth import MAX_FAILURES

    bad = {"Authorization": "Bearer gpuopt_not-a-token"}
    codes = [api.client.get("/api/v1/me", headers=bad).status_code
             for _ in range(MAX_FAILURES + 1)]
    assert codes == [401] * MAX_FAILURES + [429]
    limited = api.client.get("/api/v1/me", headers=api.h("alice"))
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1


@pytest.mark.parametrize("member", ["../evil.py", "/etc/evil.py", "a/../../evil.py"])
def test_path_traversal_is_refused(api: Api, tmp_path: Path, member: str) -> None:
    res = api.submit("alice", "trav", tar_of({member: b"x"}))
    assert res.status_code == 422 and "leaves the workdir" in res.json()["detail"]
    assert not (tmp_path / "evil.py").exists()
    assert api.client.get("/api/v1/jobs", headers=api.h("root")).json() == []


def test_oversized_uploads_are_413(api: Api) -> None:
    import os

    big = os.urandom(3 * 2**20)  # incompressible; the limit is 1 MiB + the form's 2 MiB
    res = api.submit("alice", "big", tar_of({"blob": big}))
    assert res.status_code == 413 and "MiB" in res.json()["detail"]
    bomb = tar_of({"zeros": b"\0" * (2 * 2**20)})  # small compressed, 2 MiB unpacked
    res = api.submit("alice", "bomb", bomb)
    assert res.status_code == 413 and "unpacked" in res.json()["detail"]
    assert api.client.get("/api/v1/jobs", headers=api.h("root")).json() == []


def test_input_errors_are_the_clis_messages(api: Api) -> None:
    data = {"job_yaml": "name: x\nrun: echo\nmodel:\n  name: gpt2\nworkload:\n  type: "
            "finetune\n  tokens: lots\n", "filename": "jobs/x.yaml"}
    res = api.client.post("/api/v1/jobs", data=data, headers=api.h("alice"))
    assert res.status_code == 422, res.text
    assert res.json()["detail"].startswith("jobs/x.yaml:7 workload.tokens")
    assert res.json()["exit_code"] == 2
    # a workdir named but not sent: the server does not read the submitter's disk
    res = api.client.post("/api/v1/jobs", headers=api.h("alice"), data={
        "job_yaml": job_yaml("nowd"), "filename": "nowd.yaml"})
    assert res.status_code == 422 and res.json()["detail"].startswith("nowd.yaml:3 workdir")
    # a member's job in another team
    res = api.client.post("/api/v1/jobs", headers=api.h("alice"), data={
        "job_yaml": data["job_yaml"].replace("tokens: lots", "tokens: 1m") + "team: cv\n",
        "filename": "t.yaml"})
    assert res.status_code == 422 and "t.yaml:8 team: 'cv' is not your team" in \
        res.json()["detail"]


def test_unknown_routes_and_methods(api: Api) -> None:
    assert api.client.get("/api/v1/nope", headers=api.h("root")).status_code == 404
    assert api.client.delete("/api/v1/jobs", headers=api.h("root")).status_code == 405
    res = api.client.get("/api/v1/jobs/nope-123", headers=api.h("root"))
    assert res.status_code == 404 and "no job 'nope-123'" in res.json()["detail"]


def test_the_token_is_never_in_answers_logs_or_the_database(
        api: Api, caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    caplog.set_level(logging.DEBUG)
    token = api.tokens["alice"]
    seen = [api.submit("alice", "t1", tar_of({"a": b"1"}))]
    job_id = seen[0].json()["id"]
    for path in ("/api/v1/jobs", f"/api/v1/jobs/{job_id}", "/api/v1/me",
                 "/api/v1/prices?limit=3"):
        seen.append(api.client.get(path, headers=api.h("alice")))
    seen.append(api.client.get("/api/v1/me", headers={"Authorization": f"Bearer {token}x"}))
    for res in seen:
        assert token not in res.text and token not in str(res.headers)
    assert token not in caplog.text
    db = (tmp_path / "gpuopt.db").read_bytes() + (tmp_path / "gpuopt.db-wal").read_bytes() \
        if (tmp_path / "gpuopt.db-wal").exists() else (tmp_path / "gpuopt.db").read_bytes()
    assert token.encode() not in db


def test_plan_prices_report(api: Api) -> None:
    body = {"job_yaml": job_yaml("p", workdir=False), "filename": "p.yaml", "top": 3}
    res = api.client.post("/api/v1/plan", json=body, headers=api.h("bob"))
    assert res.status_code == 200 and len(res.json()["candidates"]) == 3
    text = api.client.post("/api/v1/plan?format=text&width=80", json=body,
                           headers=api.h("bob")).text
    assert "3 cheapest placements" in text and "Pick:" in text
    res = api.client.post("/api/v1/estimate", json={**body, "gpu": "L4"},
                          headers=api.h("bob"))
    assert res.status_code == 200 and res.json()["per_gpu_gib"] > 0
    assert api.client.get("/api/v1/report", headers=api.h("bob")).json()["scope"] is not None
    res = api.client.get("/api/v1/report?team=nlp", headers=api.h("bob"))
    assert res.status_code == 403 and "reads only its team's (cv)" in res.json()["detail"]
    assert api.client.get("/api/v1/report?team=nlp", headers=api.h("root")).status_code == 200


def test_a_body_without_length_is_counted_and_cut_at_the_limit(api: Api) -> None:
    def chunks() -> object:
        for _ in range(5):  # 5 MiB: beyond 1 MiB + the form's 2 MiB
            yield b"x" * 2**20

    res = api.client.post("/api/v1/jobs", content=chunks(), headers={
        **api.h("alice"), "Content-Type": "multipart/form-data; boundary=b"})
    assert res.status_code == 413


def test_only_an_admin_chooses_another_executor(api: Api) -> None:
    res = api.submit("alice", "sky", tar_of({"a": b""}), executor="skypilot")
    assert res.status_code == 403 and "only an admin" in res.json()["detail"]


@pytest.mark.postgres
def test_members_and_admin_on_postgresql(pg_api: Api) -> None:
    a = pg_api.submit("alice", "pg-a", tar_of({"t.py": b"1"}))
    b = pg_api.submit("bob", "pg-b", tar_of({"t.py": b"2"}))
    assert a.status_code == b.status_code == 201, (a.text, b.text)

    def ids(user: str) -> list[str]:
        return [j["id"] for j in pg_api.client.get("/api/v1/jobs",
                                                   headers=pg_api.h(user)).json()]

    assert ids("alice") == [a.json()["id"]] and ids("bob") == [b.json()["id"]]
    assert ids("root") == [a.json()["id"], b.json()["id"]]
    res = pg_api.client.post(f"/api/v1/jobs/{a.json()['id']}/cancel", headers=pg_api.h("bob"))
    assert res.status_code == 403 and "belongs to alice" in res.json()["detail"]
