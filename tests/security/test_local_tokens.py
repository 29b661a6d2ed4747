"""Token management from the shell: list and revoke without the plaintext (the real CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from local_security_helpers import assert_one_error_line, cli_env, run_cli

from optiforge.platform.store import Store


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return cli_env(tmp_path / "home")


def _ok(env: dict[str, str], *args: str) -> str:
    r = run_cli(env, *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _store(env: dict[str, str]) -> Store:
    return Store(f"sqlite:///{env['OPTIFORGE_HOME']}/optiforge.db")


def test_create_json_list_and_revoke_by_id(env) -> None:
    created = json.loads(_ok(env, "token", "create", "--owner", "alice", "--json"))
    assert set(created) == {"token", "id", "owner", "created_at", "revoked_at"}
    plain = _ok(env, "token", "create", "--owner", "alice").strip()  # scripts read stdout as is
    assert plain.startswith("oft_") and "\n" not in plain
    _ok(env, "token", "create", "--owner", "bob")

    listing = _ok(env, "token", "list")
    assert created["token"] not in listing and plain not in listing
    rows = json.loads(listing)
    assert [r["owner"] for r in rows] == ["alice", "alice", "bob"]
    assert set(rows[0]) == {"id", "owner", "created_at", "revoked_at"}
    assert [r["id"] for r in json.loads(_ok(env, "token", "list", "--owner", "alice"))] == \
        [rows[0]["id"], rows[1]["id"]]

    assert _ok(env, "token", "revoke", "--id", created["id"]).strip() == f"revoked {created['id']}"
    store = _store(env)
    assert store.owner_for_token(created["token"]) is None
    assert store.owner_for_token(plain) == "alice"
    store.close()
    after = {r["id"]: r["revoked_at"] for r in json.loads(_ok(env, "token", "list"))}
    assert after[created["id"]] is not None and after[rows[1]["id"]] is None


def test_revoke_all_of_an_owner(env) -> None:
    alice = [_ok(env, "token", "create", "--owner", "alice").strip() for _ in range(2)]
    bob = _ok(env, "token", "create", "--owner", "bob").strip()
    assert _ok(env, "token", "revoke", "--owner", "alice").strip() == "revoked 2 live tokens of alice"
    store = _store(env)
    assert [store.owner_for_token(t) for t in alice] == [None, None]
    assert store.owner_for_token(bob) == "bob"
    store.close()


def test_revoking_by_plaintext_still_works(env) -> None:
    token = _ok(env, "token", "create", "--owner", "carol").strip()
    assert _ok(env, "token", "revoke", token).strip() == "revoked"
    store = _store(env)
    assert store.owner_for_token(token) is None
    store.close()


@pytest.mark.parametrize(
    ("args", "word"),
    [
        ((), "exactly one"),
        (("--id", "abc", "--owner", "alice"), "exactly one"),
        (("oft_x", "--id", "abc"), "exactly one"),
        (("--id", "000000000000"), "token_id"),
        (("--owner", "nobody"), "owner"),
        (("oft_unknown",), "token"),
    ],
)
def test_revoke_bad_input_is_one_line(env, args: tuple[str, ...], word: str) -> None:
    _ok(env, "token", "create", "--owner", "alice")
    assert_one_error_line(run_cli(env, "token", "revoke", *args), word)
