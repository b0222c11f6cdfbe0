"""Job secrets at rest: sealed for the nodes that may run the job, never in the clear.

- ``secret_keys``: the public key of each node (a daemon, or a ``submit --wait``) that
  may launch jobs with secrets; its private key stays in that node's data directory
  (orchestrator/submit/job_secrets.py). ``key_id`` is the first 32 hex digits of the public
  key's SHA-256.
- ``job_secrets``: one sealed box per (job, key): the job's secret values as JSON,
  encrypted to that key (libsodium's ``crypto_box_seal``: only the private key opens
  it). Inserted in the job's own insert transaction and deleted in the transaction that
  ends the job (orchestrator/store/jobs_repo.transition), so no secret outlives its job
  and none exists for a job that was never stored.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, ForeignKey, String, Text
from sqlmodel import Field, SQLModel

from gpuopt.orchestrator.store.types import UTCDateTime


class SecretKeyRow(SQLModel, table=True):
    __tablename__ = "secret_keys"

    key_id: str = Field(primary_key=True, max_length=32)
    public_key: str = Field(max_length=64)  # base64 of the 32-byte X25519 public key
    host: str = Field(max_length=128)  # where its private key lives (for people)
    published_at: datetime = Field(sa_type=UTCDateTime)


class JobSecretRow(SQLModel, table=True):
    __tablename__ = "job_secrets"

    job_id: str = Field(sa_column=Column(String(40), ForeignKey("jobs.id", ondelete="CASCADE"),
                                         primary_key=True))
    key_id: str = Field(primary_key=True, max_length=32)
    sealed: str = Field(sa_type=Text)  # base64 of the sealed box
