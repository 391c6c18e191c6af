"""CURVE and roles, with keys made by `sluice keygen`, against a broker with --auth."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import sluice
from conftest import Broker, bin_path

ROLES = {"producer": "producer", "consumer": "consumer", "monitor": "monitor", "ops": "admin",
         "lowonly": "producer"}


@pytest.fixture(scope="module")
def secured():
    """secured is a broker with CURVE and an auth file, and the directory of its keys."""
    b = Broker()
    keys = b.dir / "keys"
    keys.mkdir()
    for name in ["broker", "stranger", *ROLES]:
        subprocess.run([bin_path("sluice"), "keygen", name], cwd=keys, check=True, capture_output=True, timeout=30)
    lines = [f"{n} {role} {sluice.key_read(keys / f'{n}.pub')[0]}{' levels=low' if n == 'lowonly' else ''}"
             for n, role in ROLES.items()]
    (b.dir / "auth").write_text("\n".join(lines) + "\n")
    b.extra = ["--curve-secret", str(keys / "broker.key"), "--auth", str(b.dir / "auth")]
    b.start()
    yield b, keys
    b.remove()


def as_(secured, name: str, **kw) -> sluice.Client:
    b, keys = secured
    return b.client(client_key=keys / f"{name}.key", server_key=keys / "broker.pub", **kw)


def test_a_producer_publishes_and_may_do_nothing_else(secured):
    with as_(secured, "producer") as c:
        assert c.send(b"encrypted", level="high") > 0
        for call in (c.stats, c.level_list, lambda: c.level_pause("high"), lambda: c.consume()):
            with pytest.raises(sluice.Permission) as e:
                call()
            assert isinstance(e.value, PermissionError)


def test_a_consumer_consumes_and_settles_but_does_not_publish(secured):
    with as_(secured, "producer") as p:
        sid = p.send(b"for the consumer", level="normal")
    with as_(secured, "consumer") as c:
        with pytest.raises(sluice.Permission):
            c.send(b"no")
        with c.consume(credit=4) as k:
            d = k.recv(5000)
            assert d is not None
            while d.id != sid:
                d.ack()
                d = k.recv(5000)
                assert d is not None
            assert d.body == b"for the consumer"
            d.ack()
            k.flush()


def test_a_monitor_reads_and_an_admin_changes(secured):
    with as_(secured, "monitor") as m, as_(secured, "ops") as a:
        assert [r["name"] for r in m.level_list()["levels"]] == ["high", "normal", "low"]
        assert m.stats()["auth_refused"] >= 0
        with pytest.raises(sluice.Permission):
            m.level_pause("low")
        with pytest.raises(sluice.Permission):
            m.dead_peek(1)
        a.level_pause("low")
        assert m.level_list()["levels"][2]["paused"] is True
        a.level_resume("low")


def test_a_producer_limited_to_a_level(secured):
    with as_(secured, "lowonly") as c:
        c.send(b"fine", level="low")
        with pytest.raises(sluice.Permission):
            c.send(b"not here", level="high")


def test_keys_may_be_given_as_z85_text(secured):
    b, keys = secured
    pub, sec = sluice.key_read(keys / "ops.key")
    server = sluice.key_read(keys / "broker.pub")[0]
    assert len(pub) == len(sec) == len(server) == 40
    with sluice.Client(b.endpoint, client_key=(pub, sec), server_key=server) as c:
        assert c.level_list()["levels"][0]["name"] == "high"


def test_an_unknown_key_and_a_plaintext_client_are_refused_at_once(secured):
    b, keys = secured
    for c in (as_(secured, "stranger", timeout_ms=20000), sluice.Client(b.endpoint, timeout_ms=20000)):
        with c, pytest.raises(sluice.Permission) as e:
            c.send(b"let me in")
        assert "refused" in e.value.message


def test_half_a_key_pair_is_refused_here(secured, tmp_path: Path):
    b, keys = secured
    with pytest.raises(sluice.InvalidArgument):
        sluice.Client(b.endpoint, client_key=keys / "producer.key")
    with pytest.raises(sluice.InvalidArgument):
        sluice.Client(b.endpoint, client_key=keys / "producer.pub", server_key=keys / "broker.pub")
    (tmp_path / "junk.key").write_text("not a key\n")
    with pytest.raises(sluice.InvalidArgument):
        sluice.key_read(tmp_path / "junk.key")
