"""optiforge.platform.config: home folder, database URL, artifacts folders."""

from __future__ import annotations

import pytest

from optiforge.platform import config


def test_home_from_env_is_created_and_absolute(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("OPTIFORGE_HOME", str(tmp_path / "h" / "nested"))
    home = config.home()
    assert home == (tmp_path / "h" / "nested").resolve() and home.is_dir()


def test_home_defaults_to_dot_optiforge(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("OPTIFORGE_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert config.home() == tmp_path.resolve() / ".optiforge"


def test_database_url(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("OPTIFORGE_HOME", str(tmp_path))
    monkeypatch.delenv("OPTIFORGE_DB", raising=False)
    assert config.database_url() == f"sqlite:///{tmp_path.resolve() / 'optiforge.db'}"
    monkeypatch.setenv("OPTIFORGE_DB", "postgresql+psycopg://u:p@h:5432/db")
    assert config.database_url() == "postgresql+psycopg://u:p@h:5432/db"
    monkeypatch.setenv("OPTIFORGE_DB", str(tmp_path / "other.db"))
    assert config.database_url() == f"sqlite:///{tmp_path.resolve() / 'other.db'}"


def test_store_uses_config_by_default(monkeypatch, tmp_path) -> None:
    from optiforge.platform.store import Store

    monkeypatch.setenv("OPTIFORGE_HOME", str(tmp_path))
    monkeypatch.delenv("OPTIFORGE_DB", raising=False)
    store = Store()
    cid = store.create_campaign(task="t", agent="a", llm="m", budget=1, seed=0, executor="local")
    assert (tmp_path / "optiforge.db").exists()
    assert store.artifact_dir(cid) == tmp_path.resolve() / "artifacts" / cid
    store.close()


def test_artifacts_dir(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("OPTIFORGE_HOME", str(tmp_path))
    d = config.artifacts_dir("0123456789ab")
    assert d == tmp_path.resolve() / "artifacts" / "0123456789ab" and d.is_dir()
    for bad in ("../x", "a/b", "", "..", 5):
        with pytest.raises(ValueError, match="campaign_id"):
            config.artifacts_dir(bad)
