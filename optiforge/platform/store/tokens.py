"""API bearer tokens: only their SHA-256 is stored; the plaintext is returned once."""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import update

from optiforge import validation as v
from optiforge.platform.store.base import StoreBase
from optiforge.platform.store.errors import NotFoundError
from optiforge.platform.store.models import TokenRow, utcnow

TOKEN_PREFIX = "oft_"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class TokensMixin(StoreBase):
    def create_token(self, owner: str) -> str:
        """A new bearer token for ``owner`` (256 random bits). Only its hash is stored, so
        this return value is the one chance to see it."""
        owner = v.text(owner, "owner")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with self._write() as s:
            s.add(TokenRow(token_sha256=_digest(token), owner=owner, created_at=utcnow(),
                           revoked_at=None))
        return token

    def owner_for_token(self, token: str) -> str | None:
        """The owner of a live token, or ``None`` (unknown or revoked)."""
        if not isinstance(token, str):
            raise TypeError(f"token: expected a string, got {type(token).__name__}")
        if not token:
            return None
        with self._read() as s:
            row = s.get(TokenRow, _digest(token))
            return None if row is None or row.revoked_at is not None else row.owner

    def revoke_token(self, token: str) -> None:
        """Revoke a token (idempotent for an already revoked one; unknown -> NotFoundError)."""
        if not isinstance(token, str):
            raise TypeError(f"token: expected a string, got {type(token).__name__}")
        with self._write() as s:
            row = s.get(TokenRow, _digest(token))
            if row is None:
                raise NotFoundError("token: unknown token")
            s.execute(update(TokenRow).where(TokenRow.token_sha256 == row.token_sha256,
                                             TokenRow.revoked_at.is_(None))
                      .values(revoked_at=utcnow()))
