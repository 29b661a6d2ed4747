"""API bearer tokens: only their SHA-256 is stored; the plaintext is returned once.

Each token also has a random public id (12 hex digits, unrelated to the token), so an operator
can list tokens and revoke one, or all of an owner's, without ever holding the plaintext.
"""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import ColumnElement, select, update
from sqlalchemy.orm import Session

from optiforge import validation as v
from optiforge.platform.store.base import StoreBase, new_id
from optiforge.platform.store.errors import NotFoundError
from optiforge.platform.store.models import TokenRow, utcnow
from optiforge.platform.store.records import TokenInfo

TOKEN_PREFIX = "oft_"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _info(row: TokenRow) -> TokenInfo:
    return TokenInfo(id=row.id, owner=row.owner, created_at=row.created_at, revoked_at=row.revoked_at)


def _check_token(token: object) -> str:
    if not isinstance(token, str):
        raise TypeError(f"token: expected a string, got {type(token).__name__}")
    return token


class TokensMixin(StoreBase):
    def create_token(self, owner: str) -> str:
        """A new bearer token for ``owner`` (256 random bits). Only its hash is stored, so
        this return value is the one chance to see it (:meth:`token_info` gives its id)."""
        owner = v.text(owner, "owner")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with self._write() as s:
            s.add(TokenRow(token_sha256=_digest(token), id=new_id(), owner=owner,
                           created_at=utcnow(), revoked_at=None))
        return token

    def owner_for_token(self, token: str) -> str | None:
        """The owner of a live token, or ``None`` (unknown or revoked)."""
        token = _check_token(token)
        if not token:
            return None
        with self._read() as s:
            row = s.get(TokenRow, _digest(token))
            return None if row is None or row.revoked_at is not None else row.owner

    def token_info(self, token: str) -> TokenInfo:
        """The id, owner and dates of a token given in plaintext (revoked ones included).

        Raises
        ------
        NotFoundError
            No such token.
        """
        with self._read() as s:
            return _info(self._token_row(s, token))

    def list_tokens(self, owner: str | None = None) -> list[TokenInfo]:
        """Every token (or ``owner``'s), oldest first, revoked ones included; never the tokens."""
        q = select(TokenRow)
        if owner is not None:
            q = q.where(TokenRow.owner == v.text(owner, "owner"))
        with self._read() as s:
            return [_info(r) for r in s.scalars(q.order_by(TokenRow.created_at, TokenRow.id))]

    def revoke_token(self, token: str) -> None:
        """Revoke a token given in plaintext (idempotent for an already revoked one).

        Raises
        ------
        NotFoundError
            No such token.
        """
        with self._write() as s:
            self._revoke(s, TokenRow.token_sha256 == self._token_row(s, token).token_sha256)

    def revoke_token_id(self, token_id: str) -> TokenInfo:
        """Revoke the token with this public id (idempotent); returns it as now stored.

        Raises
        ------
        NotFoundError
            No token has this id.
        """
        tid = self._check_id(token_id, "token_id")
        with self._write() as s:
            row = s.scalars(select(TokenRow).where(TokenRow.id == tid)).first()
            if row is None:
                raise NotFoundError(f"token_id: no token {tid!r}")
            self._revoke(s, TokenRow.id == tid)
            s.refresh(row)
            return _info(row)

    def revoke_owner_tokens(self, owner: str) -> int:
        """Revoke every live token of ``owner``; returns how many were live.

        Raises
        ------
        NotFoundError
            ``owner`` has never had a token (most likely a misspelt name).
        """
        owner = v.text(owner, "owner")
        with self._write() as s:
            if s.scalars(select(TokenRow.id).where(TokenRow.owner == owner).limit(1)).first() is None:
                raise NotFoundError(f"owner: no tokens for owner {owner!r}")
            return self._revoke(s, TokenRow.owner == owner)

    @staticmethod
    def _token_row(s: Session, token: object) -> TokenRow:
        row = s.get(TokenRow, _digest(_check_token(token)))
        if row is None:
            raise NotFoundError("token: unknown token")
        return row

    @staticmethod
    def _revoke(s: Session, where: ColumnElement[bool]) -> int:
        result = s.execute(update(TokenRow).where(where, TokenRow.revoked_at.is_(None))
                           .values(revoked_at=utcnow()))
        return result.rowcount
