"""A job's ``secrets:`` values: read where ``submit`` runs, sealed in the store for the
nodes that may run the job, removed with the job's end; never from anyone else's
environment, never in the clear in the database or a log.

SkyPilot's ``secrets:`` (``sky launch --secret HF_TOKEN`` reads HF_TOKEN from the
caller's environment) works the same way here: the job file names the secret, ``gpuopt
submit`` reads its value from the environment it runs in (values_from_environment).

At rest (docs/secrets.md argues the choice): each node that launches jobs -- a daemon,
or ``submit --wait`` -- has a key pair; the private key is a 0600 file in its data
directory (``keys/job-secrets.key``), the public key is published in the store
(``secret_keys``). ``submit`` seals the values (libsodium's sealed box, the construction
GitHub uses for Actions secrets: X25519 + XSalsa20-Poly1305, only the private key opens
it) once for every published key, in the transaction that inserts the job; the node that
launches an attempt opens the box sealed for its key. So two daemons on two hosts on one
PostgreSQL can both run the job, a remote submitter (or the HTTP API) needs only the
public keys, and the rows go in the transaction that ends the job (jobs_repo.transition):
there is no moment, and no kill -9, at which a secret exists for a job that is not
stored, or outlives one that ended. A node that holds no key the job was sealed for
refuses the launch, saying which hosts can run it; the values are never looked up in
the node's own environment.

Rows of older releases: ``<data dir>/secrets/<job id>.json`` (0600) is still read for a
job with no sealed row, and removed with the job or by the sweep at start.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuopt.core.errors import UserError

if TYPE_CHECKING:
    from gpuopt.orchestrator.store.engine import Store
    from gpuopt.orchestrator.store.secrets_repo import SealedBox as SealedBoxRow
    from gpuopt.orchestrator.store.secrets_repo import Session

REDACTED = "***"
KEY_FILE = "job-secrets.key"


class SecretsUnavailable(UserError):
    """This node cannot open the job's secrets (no key it was sealed for; the job ended)."""

    exit_code = 2


def legacy_secrets_file(job_id: str) -> Path:
    from gpuopt.orchestrator.paths import data_dir

    return data_dir() / "secrets" / f"{job_id}.json"


def values_from_environment(names: Iterable[str], env: Mapping[str, str], source: str) -> dict[
        str, str]:
    """The named secrets' values from ``env``; a missing one is a UserError (exit 2)."""
    values: dict[str, str] = {}
    missing = []
    for name in names:
        value = env.get(name)
        if value is None or value == "":
            missing.append(name)
        elif "\x00" in value:
            raise UserError(f"{source}: secret {name} contains a NUL character", exit_code=2)
        else:
            values[name] = value
    if missing:
        raise UserError(
            f"{source}: secrets {', '.join(missing)} not set: export them in the environment "
            "you submit from (their values are never written to the job file or the database)",
            exit_code=2,
        )
    return values


# -- this node's key ---------------------------------------------------------------------
def _key_path() -> Path:
    from gpuopt.orchestrator.paths import data_dir

    return data_dir() / "keys" / KEY_FILE


def key_id_of(public_key: bytes) -> str:
    return hashlib.sha256(public_key).hexdigest()[:32]


def local_key(create: bool = True) -> Any:
    """This node's private key (``nacl.public.PrivateKey``), made (0600) on first use;
    None when there is none and ``create`` is False."""
    from nacl.public import PrivateKey

    path = _key_path()
    try:
        return PrivateKey(base64.b64decode(path.read_bytes().strip()))
    except FileNotFoundError:
        if not create:
            return None
    except (OSError, ValueError) as err:
        raise UserError(f"cannot read the job-secrets key {path}: {err}; restore it from "
                        "a backup or remove it (jobs sealed for it then cannot start here)",
                        exit_code=2) from None
    from gpuopt.orchestrator.paths import ensure_private_dir

    ensure_private_dir(path.parent)
    key = PrivateKey.generate()
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(base64.b64encode(bytes(key)) + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    try:
        os.link(tmp, path)  # never replaces a key another process made meanwhile
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return PrivateKey(base64.b64decode(path.read_bytes().strip()))


def publish_key(store: Store, now: datetime, host: str | None = None) -> str:
    """Make sure this node's key exists and its public half is in the store (jobs
    submitted from now on are sealed for it too); returns its key id."""
    import socket

    from gpuopt.orchestrator.store.secrets_repo import PublishedKey, publish

    key = local_key()
    public = bytes(key.public_key)
    key_id = key_id_of(public)
    publish(store, PublishedKey(key_id=key_id, public_key=base64.b64encode(public).decode(),
                                host=(host or socket.gethostname())[:128], published_at=now))
    return key_id


# -- sealing and opening -------------------------------------------------------------------
def seal_for_job(session: Session, job_id: str, values: Mapping[str, str]) -> int:
    """In the caller's transaction (the job's insert): one sealed box of ``values`` per
    published key; returns how many. No published key is a UserError."""
    if not values:
        return 0
    from nacl.public import PublicKey, SealedBox

    from gpuopt.orchestrator.store import secrets_repo

    plain = json.dumps(dict(values)).encode()
    keys = secrets_repo.published_keys(session)
    if not keys:
        raise UserError("no node can run jobs with secrets: start `gpuopt daemon` once (it "
                        "publishes its key) or submit with --wait", exit_code=2)
    secrets_repo.add_sealed(session, (
        secrets_repo.SealedBox(job_id, k.key_id, base64.b64encode(
            SealedBox(PublicKey(base64.b64decode(k.public_key))).encrypt(plain)).decode())
        for k in keys))
    return len(keys)


def open_secrets(store: Store, job_id: str, names: Iterable[str]) -> dict[str, str]:
    """The values of ``names`` for the job, opened with this node's key (or read from an
    older release's file). SecretsUnavailable when this node cannot have them; the
    node's own environment is never consulted."""
    wanted = list(names)
    if not wanted:
        return {}
    from gpuopt.orchestrator.store.secrets_repo import sealed_for

    rows, hosts = sealed_for(store, job_id)
    saved = _opened(rows) if rows else _legacy(job_id)
    if saved is None:
        where = sorted({hosts.get(r.key_id, f"key {r.key_id[:8]}") for r in rows})
        if rows:
            raise SecretsUnavailable(
                f"job {job_id}: this node holds none of the keys its secrets were sealed for "
                f"(the nodes on {', '.join(where)} do): run it from there, or submit it "
                "again once this node's daemon has published its key")
        raise SecretsUnavailable(f"job {job_id}: its secrets are gone (removed when the job "
                                 "ended, or never stored)")
    missing = [n for n in wanted if not isinstance(saved.get(n), str)]
    if missing:
        raise SecretsUnavailable(f"job {job_id}: secrets {', '.join(missing)} were not "
                                 "stored with it")
    return {n: saved[n] for n in wanted}


def _opened(rows: Sequence[SealedBoxRow]) -> dict[str, Any] | None:
    from nacl.exceptions import CryptoError
    from nacl.public import SealedBox

    key = local_key(create=False)
    if key is None:
        return None
    mine = key_id_of(bytes(key.public_key))
    for row in rows:
        if row.key_id != mine:
            continue
        try:
            doc = json.loads(SealedBox(key).decrypt(base64.b64decode(row.sealed)))
        except (CryptoError, ValueError) as err:
            raise SecretsUnavailable(f"job {row.job_id}: its sealed secrets do not open with "
                                     f"this node's key ({type(err).__name__})") from None
        return doc if isinstance(doc, dict) else None
    return None


def _legacy(job_id: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(legacy_secrets_file(job_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def forget_legacy_file(job_id: str) -> None:
    legacy_secrets_file(job_id).unlink(missing_ok=True)


def sweep(store: Store) -> int:
    """At every start: remove the sealed secrets of jobs that are not live (left by an
    older release, or written by hand) and older releases' files of jobs that are not
    live or not stored; returns how many were removed."""
    from gpuopt.orchestrator.store.secrets_repo import sweep_sealed

    removed, live = sweep_sealed(store)
    folder = legacy_secrets_file("x").parent
    if folder.is_dir():
        for path in folder.glob("*.json"):
            if path.stem not in live:
                path.unlink(missing_ok=True)
                removed += 1
    return removed


def redact(text: str | None, values: Iterable[str]) -> str | None:
    """``text`` with every secret value replaced by ***."""
    if not text:
        return text
    for value in sorted(set(values), key=len, reverse=True):
        if len(value) >= 4:  # shorter ones would blank out ordinary words
            text = text.replace(value, REDACTED)
    return text
