"""API tokens: plaintext once, stored hashed, listed and revoked by id or owner."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime, timezone

import pytest
from sqlalchemy import text

from optiforge.platform.store import NotFoundError, Store
from optiforge.platform.store.engine import current_revision, downgrade, make_engine, upgrade


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


def test_list_tokens_never_shows_the_token(store: Store) -> None:
    owner_a, owner_b = f"a-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"
    first = store.create_token(owner_a)
    second = store.create_token(owner_a)
    other = store.create_token(owner_b)
    mine = store.list_tokens(owner_a)
    assert [t.id for t in mine] == [store.token_info(first).id, store.token_info(second).id]
    assert all(t.owner == owner_a and t.revoked_at is None for t in mine)
    assert len({t.id for t in mine}) == 2 and all(len(t.id) == 12 for t in mine)
    everyone = {t.id for t in store.list_tokens()}
    assert store.token_info(other).id in everyone and {t.id for t in mine} <= everyone
    for token in (first, second, other):  # neither the token nor its digest is handed out
        for info in store.list_tokens():
            assert token not in repr(info) and hashlib.sha256(token.encode()).hexdigest() not in repr(info)


def test_revoke_by_id_without_the_plaintext(store: Store) -> None:
    owner = f"c-{uuid.uuid4().hex[:8]}"
    keep, drop = store.create_token(owner), store.create_token(owner)
    info = store.revoke_token_id(store.token_info(drop).id)
    assert info.revoked_at is not None and info.owner == owner
    assert store.owner_for_token(drop) is None and store.owner_for_token(keep) == owner
    again = store.revoke_token_id(info.id)  # idempotent: the first revocation time stays
    assert again.revoked_at == info.revoked_at
    with pytest.raises(NotFoundError, match="token_id"):
        store.revoke_token_id("000000000000")
    with pytest.raises(TypeError, match="token_id"):
        store.revoke_token_id(5)


def test_revoke_every_token_of_an_owner(store: Store) -> None:
    owner, bystander = f"d-{uuid.uuid4().hex[:8]}", f"e-{uuid.uuid4().hex[:8]}"
    tokens = [store.create_token(owner) for _ in range(3)]
    safe = store.create_token(bystander)
    store.revoke_token(tokens[0])
    assert store.revoke_owner_tokens(owner) == 2  # the two still live
    assert all(store.owner_for_token(t) is None for t in tokens)
    assert store.owner_for_token(safe) == bystander
    assert store.revoke_owner_tokens(owner) == 0
    with pytest.raises(NotFoundError, match="owner"):
        store.revoke_owner_tokens(f"nobody-{uuid.uuid4().hex[:8]}")


def test_tokens_made_before_revision_0002_keep_working(storage_url: str) -> None:
    """A database at the previous revision: its tokens get ids and stay valid after upgrade."""
    engine = make_engine(storage_url)
    upgrade(engine, "0001")
    now = datetime.now(timezone.utc)
    stamp = now.replace(tzinfo=None) if engine.dialect.name == "sqlite" else now
    plaintexts = {"alice": "oft_old-token-of-alice", "bob": "oft_old-token-of-bob"}
    with engine.begin() as conn:
        for owner, token in plaintexts.items():
            conn.execute(text("INSERT INTO tokens (token_sha256, owner, created_at, revoked_at) "
                              "VALUES (:h, :o, :c, NULL)"),
                         {"h": hashlib.sha256(token.encode()).hexdigest(), "o": owner, "c": stamp})
    engine.dispose()

    store = Store(storage_url)  # opening migrates to head
    with store.engine.connect() as conn:
        assert current_revision(conn) >= "0002"  # head: later revisions apply too
    assert {o: store.owner_for_token(t) for o, t in plaintexts.items()} == {"alice": "alice", "bob": "bob"}
    listed = store.list_tokens()
    assert sorted(t.owner for t in listed) == ["alice", "bob"]
    assert len({t.id for t in listed}) == 2 and all(len(t.id) == 12 for t in listed)
    store.revoke_token_id(store.token_info(plaintexts["alice"]).id)
    assert store.owner_for_token(plaintexts["alice"]) is None
    assert store.owner_for_token(plaintexts["bob"]) == "bob"
    new = store.create_token("carol")  # and new tokens work beside the migrated ones
    assert store.owner_for_token(new) == "carol"

    downgrade(store.engine, "0001")  # the way back keeps the tokens (without their ids)
    with store.engine.connect() as conn:
        owners = conn.execute(text("SELECT owner FROM tokens ORDER BY owner")).scalars().all()
    assert owners == ["alice", "bob", "carol"]
    store.close()
