"""API users and their tokens: made here, stored only as hashes (store/users_repo.py).

A token is ``gpuopt_`` + 32 random bytes in URL-safe base64 (``secrets.token_urlsafe``:
256 bits from the OS's CSPRNG); the prefix lets secret scanners recognise a leaked one.
The store keeps its SHA-256 only. A fast hash is enough here, unlike for passwords:
bcrypt/scrypt/argon2 slow down guessing a *low-entropy* secret from a stolen hash, but
no amount of guessing finds a 256-bit random value, and a fast hash lets each request
find its user with one indexed lookup instead of a slow hash per user. The token is
printed once, by ``gpuopt users add``, and never logged.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from gpuopt.core.errors import UserError

if TYPE_CHECKING:
    from gpuopt.orchestrator.store import Store

TOKEN_PREFIX = "gpuopt_"
TOKEN_BYTES = 32
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")


@dataclass(frozen=True, slots=True)
class User:
    """Who a request is (never carries the token)."""

    name: str
    team: str | None
    is_admin: bool

    def may_see(self, owner_user: str | None, team: str | None = None) -> bool:
        return self.is_admin or owner_user == self.name

    def may_read_team(self, team: str | None) -> bool:
        return self.is_admin or (team is not None and team == self.team)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def check_name(name: str, what: str = "user name") -> str:
    if not NAME.match(name):
        raise UserError(f"{what} {name!r}: use 1-64 letters, digits, '.', '_', '@' or '-', "
                        "starting with a letter or digit", exit_code=2)
    return name


def add_user(store: Store, name: str, team: str | None, is_admin: bool,
             now: datetime) -> str:
    """Create ``name`` and return its token (the only time it is seen)."""
    from gpuopt.orchestrator.store.user_tables import ApiUserRow
    from gpuopt.orchestrator.store.users_repo import find_user, insert_user

    check_name(name)
    if team is not None:
        check_name(team, "team")
    token = new_token()
    with store.transaction() as session:
        row = find_user(session, name)
        if row is not None and row.revoked_at is None:
            raise UserError(f"user {name!r} exists: `gpuopt users revoke {name}` first (a "
                            "revoked user can be added again, with a new token), or choose "
                            "another name", exit_code=2)
        if row is None:
            row = ApiUserRow(name=name, team=team, is_admin=is_admin,
                             token_sha256=token_hash(token), created_at=now)
        else:  # a revoked user again: a new token; the audit trail keeps its name
            row.team, row.is_admin, row.token_sha256 = team, is_admin, token_hash(token)
            row.created_at, row.revoked_at = now, None
        insert_user(session, row)
    return token


def revoke(store: Store, name: str, now: datetime) -> None:
    from gpuopt.orchestrator.store.users_repo import revoke_user

    with store.transaction() as session:
        if not revoke_user(session, name, now):
            raise UserError(f"no live user {name!r}: see `gpuopt users list`", exit_code=2)


def authenticate(store: Store, token: str) -> User | None:
    """The live user holding ``token`` (None: unknown or revoked)."""
    from gpuopt.orchestrator.store.users_repo import user_by_token_hash

    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    with store.session() as session:
        row = user_by_token_hash(session, token_hash(token))
    if row is None:
        return None
    return User(row.name, row.team, row.is_admin)
