"""An API app on a real store (SQLite, or PostgreSQL where asked) with three users:
alice (team nlp), bob (team cv), root (admin); driven in-process by Starlette's
TestClient (real HTTP semantics through the ASGI app)."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

JOB = """\
name: {name}
run: python3 -c "print('hi')"
workdir: ./src
model:
  name: gpt2
workload:
  type: finetune
  method: full
  precision: fp32
  batch_size: 8
  seq_len: 512
  tokens: 5m
resources:
  gpus: [T4, L4, A10G]
  max_gpus_per_node: 1
deadline: 2h
checkpoint:
  dir: ckpt
  interval: 1m
"""


def job_yaml(name: str, workdir: bool = True) -> str:
    text = JOB.format(name=name)
    return text if workdir else text.replace("workdir: ./src\n", "")


def tar_of(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@dataclass
class Api:
    client: Any
    store: Any
    tokens: dict[str, str]

    def h(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[user]}"}

    def submit(self, user: str, name: str, workdir: bytes | None = None,
               **form: str) -> Any:
        files = {"workdir": ("src.tar.gz", workdir, "application/gzip")} if workdir else None
        data = {"job_yaml": job_yaml(name, workdir is not None), "filename": f"{name}.yaml",
                "executor": "local", **form}
        return self.client.post("/api/v1/jobs", data=data, files=files, headers=self.h(user))


def make_api(db_url: str, tmp: Path, max_upload_mib: int = 1) -> Api:
    from fastapi.testclient import TestClient

    from gpuopt.orchestrator.api.app import build_app
    from gpuopt.orchestrator.api.context import ApiContext
    from gpuopt.orchestrator.api.users import add_user
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    settings = Settings.model_validate({"executor": {"default": "local"},
                                        "api": {"max_upload_mib": max_upload_mib}})
    now = datetime.now(UTC)
    tokens = {"alice": add_user(store, "alice", "nlp", False, now),
              "bob": add_user(store, "bob", "cv", False, now),
              "root": add_user(store, "root", None, True, now)}
    ctx = ApiContext(store=store, settings=settings, upload_root=tmp / "uploads",
                     session_secret=b"k" * 32)
    return Api(TestClient(build_app(ctx)), store, tokens)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    made = make_api(f"sqlite:///{tmp_path / 'gpuopt.db'}", tmp_path)
    yield made
    made.store.close()


@pytest.fixture
def pg_api(pg_url: str, tmp_path: Path) -> Iterator[Api]:
    made = make_api(pg_url, tmp_path)
    yield made
    made.store.close()
