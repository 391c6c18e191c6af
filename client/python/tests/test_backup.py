"""Backups and the settings as declarations, as ``sluice backup --json``, ``backup status --json``
and ``settings export`` print them, on real brokers; a copy is opened by a broker of its own.
"""

from __future__ import annotations

import pytest

import sluice
from conftest import Broker, level_row, same


def test_backup_is_backup_json_and_a_broker_opens_the_copy(broker_factory, tmp_path, monkeypatch):
    b = broker_factory()
    with b.client() as c:
        none = c.backup_status()
        same(none, b.cli_json("backup", "status"))
        assert none["state"] == "none"
        ids = c.send_many([f"kept {i}".encode() for i in range(50)], level="low", tag="t")
        mine = c.backup(tmp_path / "mine")
        assert (mine["state"], mine["path"]) == ("done", f"{tmp_path}/mine") and mine["bytes"] > 0
        same(c.backup_status(), b.cli_json("backup", "status"))  # the finished one, read twice
        theirs = b.cli_json("backup", "--to", str(tmp_path / "theirs"))
        assert list(theirs) == list(mine) == ["state", "path", "bytes", "elapsed_ms", "message"]
        assert [type(v) for v in theirs.values()] == [type(v) for v in mine.values()]
        assert theirs["state"] == "done" and theirs["path"] == f"{tmp_path}/theirs"
        same(c.backup_status(), theirs)
        monkeypatch.chdir(tmp_path)  # a relative directory is taken from here, as the CLI takes it
        assert c.backup("relative")["path"] == f"{tmp_path}/relative"
        with pytest.raises(sluice.InvalidArgument):
            c.backup(tmp_path / "mine")  # not empty
        assert b.cli("backup", "--to", str(tmp_path / "mine"), check=False).returncode == 1
        with pytest.raises(sluice.InvalidArgument):
            c.backup("")
    copy = Broker()
    copy.data = tmp_path / "mine"
    try:
        copy.start()
        with copy.client() as c:
            assert level_row(c, "low")["depth"] == len(ids)
            assert [r["id"] for r in c.peek("low", limit=None)] == ids
    finally:
        copy.remove()


def test_settings_export_is_what_sluice_settings_export_prints(broker: Broker):
    with broker.client() as c:
        c.level_set("normal", max_rate=["10/s", "500/min"], deadline_ms=2500)
        c.sink_set(rate=100, burst=10)
        c.pool_resize("render", 4)
        c.tag_set("gold-*", weight=4, each=True)
        text = c.settings_export()
        assert text == broker.cli("settings", "export").stdout.decode()
        for declared in ("[sink]", "[level normal]", "deadline = 2500ms", "max-rate = 500/min", "[pool render]",
                         '[tag "gold-*"]', "weight = 4"):
            assert declared in text, declared


def test_web_login_is_web_login_json(broker_factory, broker: Broker):
    with broker.client() as c, pytest.raises(sluice.InvalidState):
        c.web_login()  # a broker without --http serves no console
    b = broker_factory("--http", "127.0.0.1:0")
    with b.client() as c:
        mine = c.web_login(ttl_ms=60000)
        theirs = b.cli_json("web", "login", "--ttl", "1m")
        assert list(mine) == list(theirs) == ["url", "link", "role", "ttl_ms"]
        assert mine["url"] == theirs["url"] and mine["url"].startswith("http://127.0.0.1:")
        assert mine["link"].startswith(mine["url"] + "/#login=") and mine["link"] != theirs["link"]  # one-time tokens
        assert (mine["role"], mine["ttl_ms"]) == (theirs["role"], theirs["ttl_ms"]) == ("admin", 60000)
        with pytest.raises(sluice.InvalidArgument):
            c.web_login(ttl_ms=8 * 86400 * 1000)
