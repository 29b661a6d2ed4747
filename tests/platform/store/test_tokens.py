"""API tokens: plaintext once, stored hashed, revocable."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import text

from optiforge.platform.store import NotFoundError, Store


def test_token_resolves_to_owner_and_is_stored_hashed(store: Store) -> None:
    token = store.create_token("alice")
    assert token.startswith("oft_") and len(token) >= 40
    assert store.owner_for_token(token) == "alice"
    other = store.create_token("alice")
    assert other != token and store.owner_for_token(other) == "alice"
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT token_sha256, owner FROM tokens WHERE owner = 'alice'")).all()
    stored = {r[0] for r in rows}
    assert hashlib.sha256(token.encode()).hexdigest() in stored
    assert all(token not in r[0] for r in rows)  # never the plaintext


def test_unknown_and_revoked_tokens(store: Store) -> None:
    token = store.create_token("bob")
    assert store.owner_for_token(token + "x") is None
    assert store.owner_for_token("") is None
    store.revoke_token(token)
    assert store.owner_for_token(token) is None
    store.revoke_token(token)  # revoking again is harmless
    with pytest.raises(NotFoundError, match="token"):
        store.revoke_token("oft_not-a-token")


def test_token_bad_input(store: Store) -> None:
    with pytest.raises(ValueError, match="owner"):
        store.create_token("  ")
    with pytest.raises(TypeError, match="token"):
        store.owner_for_token(None)
