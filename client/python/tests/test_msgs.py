"""The calls on a level's waiting messages return what ``sluice peek|delete|purge|move --json`` prints.

Each call is compared with the CLI's JSON on one real broker: peek on the
same level at the same moment; delete, purge and move, which change what
they read, on two levels (or two messages) set up alike, one changed from
here and one by the CLI, whose answers must be equal. Messages out with a
consumer are held through every comparison, so that what is left alone is
counted alike too.
"""

from __future__ import annotations

from typing import List

import pytest

import sluice
from conftest import Broker, level_row, same
from sluice._msgs import preview_text


def test_preview_text_escapes_what_the_cli_escapes():
    # cli_text_safe's cases (tests/unit/test_cli_text.c), no broker needed
    cases = [
        (b"a\033[2Jb", "a\\e[2Jb"),
        (b"bell\a\n\t\r", "bell\\x07\\n\\t\\r"),
        (b"nul\0x", "nul\\x00x"),
        (b"del\x7f", "del\\x7f"),
        ("café € 😀".encode(), "café € 😀"),
        (b"\xff\xfe", "\\xff\\xfe"),
        (b"\xc0\xaf", "\\xc0\\xaf"),  # overlong '/'
        (b"\xed\xa0\x80", "\\xed\\xa0\\x80"),  # a surrogate
        (b"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"),  # above U+10FFFF
        (b"cut\xe2\x82", "cut\\xe2\\x82"),  # cut short
        (b"\xc2\x9b31m", "\\xc2\\x9b31m"),  # a C1 control (CSI)
        (b"\xe2\x80\xaetxt", "\\xe2\\x80\\xaetxt"),  # RIGHT-TO-LEFT OVERRIDE
        (b"\xe2\x81\xa6x", "\\xe2\\x81\\xa6x"),  # LEFT-TO-RIGHT ISOLATE
        (b"back\\slash \"q\"", "back\\slash \"q\""),  # stays: safe text is its own escape
    ]
    for raw, shown in cases:
        assert preview_text(raw) == shown, raw


def hold(c: sluice.Client, level: str) -> sluice.Consumer:
    """hold opens a consumer that takes level's head and keeps it (out with a consumer: left alone)."""
    k = c.consume([level], pool=f"hold-{level}")
    assert k.recv(5000) is not None
    return k


BODIES = [b"plain", b"\x1b[31mred\r\n\ttab", "\u0085c1 \u202eevil \"q\" \\ é".encode(), b"z" * 100,
          b"x" * 63 + "é".encode(), b"\x00\x01bin\xff"]


def test_peek_is_peek_json_and_takes_nothing(broker: Broker):
    c = broker.client()
    c.send(b"held", level="low", tag="a")
    ids = [c.send(body, level="low", tag="ab"[i % 2], cost=1 + i) for i, body in enumerate(BODIES)]
    untagged = c.send(b"untagged", level="low")
    with hold(c, "low"):
        before = level_row(c, "low")
        py = c.peek("low")
        same(py, broker.cli_json("peek", "low"))
        assert [r["id"] for r in py] == ids + [untagged]  # not the one out with a consumer
        assert [r["body_preview"] for r in py[:3]] == [
            "plain", "\\e[31mred\\r\\n\\ttab", "\\xc2\\x85c1 \\xe2\\x80\\xaeevil \"q\" \\ é"]
        assert py[3]["body_bytes"] == 100 and py[3]["body_preview"] == "z" * 64
        assert py[4]["body_preview"] == "x" * 63 and py[5]["body_preview"] == "\\x00\\x01bin"
        assert [(r["tag"], r["cost"], r["attempts"], r["level"]) for r in py[:2]] == [("a", 1, 0, "low"),
                                                                                    ("b", 2, 0, "low")]
        assert py[-1]["tag"] == ""
        same(c.peek("low", limit=2), broker.cli_json("peek", "low", "--limit", "2"))
        b_rows = c.peek("low", tag="b")
        same(b_rows, broker.cli_json("peek", "low", "--tag", "b"))
        assert [r["id"] for r in b_rows] == ids[1::2]
        same(c.peek(2, "a", 1), broker.cli_json("peek", "2", "-t", "a", "--limit", "1"))
        same(c.peek("high"), broker.cli_json("peek", "high"))
        assert c.peek("high") == []
        after = level_row(c, "low")
        assert (after["depth"], after["inflight"]) == (before["depth"], before["inflight"]) == (len(ids) + 1, 1)
    c.close()


def test_peek_goes_past_a_page_and_through_a_fair_level(broker: Broker):
    c = broker.client()
    many = c.send_many([f"m{i}".encode() for i in range(150)], level="normal")
    py = c.peek("normal", limit=None)
    assert [r["id"] for r in py] == many
    same(py, broker.cli_json("peek", "normal", "--limit", "1000"))
    same(c.peek("normal", limit=65), broker.cli_json("peek", "normal", "--limit", "65"))
    c.level_set("high", fair=True)
    sent = [(c.send(f"{tag}{i}".encode(), level="high", tag=tag), tag) for i in range(3) for tag in ("x", "y")]
    py = c.peek("high")
    same(py, broker.cli_json("peek", "high"))
    assert sorted(r["id"] for r in py) == sorted(i for i, _ in sent)
    for tag in ("x", "y"):  # FIFO within each tag
        mine = [r["id"] for r in py if r["tag"] == tag]
        assert mine == sorted(mine) and [r["id"] for r in c.peek("high", tag=tag)] == mine
    with pytest.raises(sluice.InvalidArgument):
        c.peek("normal", limit=0)
    with pytest.raises(sluice.NoLevel):
        c.peek("nope")
    c.close()


def test_delete_is_delete_json(broker: Broker):
    c = broker.client()
    mine, theirs = c.send_many([b"one", b"two"], level="normal")
    delayed = c.send(b"later", level="low", delay_ms=600_000)
    leased = c.send(b"held", level="high")
    assert c.delete(mine) == {"deleted": mine, "level": "normal"}
    cli = broker.cli_json("delete", str(theirs))
    same({**c.delete(delayed), "deleted": theirs, "level": "normal"}, cli)
    assert c.explain(mine)["state"] == c.explain(delayed)["state"] == "gone"
    assert level_row(c, "low")["delayed"] == 0 and level_row(c, "normal")["depth"] == 0
    with hold(c, "high"):
        with pytest.raises(sluice.InvalidState):
            c.delete(leased)
        assert broker.cli("delete", str(leased), check=False).returncode == 1
    with pytest.raises(sluice.NotFound):
        c.delete(mine)
    assert broker.cli("delete", str(mine), check=False).returncode == 1
    c.close()


def fill(c: sluice.Client, level: str) -> List[int]:
    """fill publishes the same messages to level: its head (tag a, to be held), a, b, b, untagged."""
    return [c.send(f"{level} {i}".encode(), level=level, tag=tag) for i, tag in enumerate(["a", "a", "b", "b", None])]


def test_purge_and_move_count_as_the_cli_does(broker: Broker):
    c = broker.client()
    high, low = fill(c, "high"), fill(c, "low")
    with hold(c, "high"), hold(c, "low"):
        dry = c.purge("high", tag="a", dry_run=True)
        assert dry == broker.cli_json("purge", "low", "--tag", "a", "--dry-run") == \
            {"would_purge": 1, "in_flight_left": 1}
        assert level_row(c, "high")["depth"] == 4  # a dry run deletes nothing
        assert c.purge("high", older_than_ms=3_600_000) == \
            broker.cli_json("purge", "low", "--older-than", "3600") == {"purged": 0, "in_flight_left": 0}
        assert c.purge("high", tag="b", limit=1) == broker.cli_json("purge", "low", "--tag", "b", "--limit", "1") \
            == {"purged": 1, "in_flight_left": 0}
        assert c.purge("high", tag="b") == broker.cli_json("purge", "low", "--tag", "b") == \
            {"purged": 1, "in_flight_left": 0}
        moved = c.move("high", "normal")
        assert moved == broker.cli_json("move", "low", "--to", "normal") == {"moved": 2, "in_flight_left": 1}
        # in their order, each keeping its id and tag
        assert [(r["id"], r["tag"]) for r in c.peek("normal")] == [(high[1], "a"), (high[4], ""), (low[1], "a"),
                                                                   (low[4], "")]
        with pytest.raises(sluice.InvalidArgument):
            c.move("normal", 1)
        assert broker.cli("move", "normal", "--to", "1", check=False).returncode == 2
    assert [r["id"] for r in c.peek("high")] == [high[0]]  # given back: ready again where it was
    assert c.purge("high") == broker.cli_json("purge", "low") == {"purged": 1, "in_flight_left": 0}
    assert c.purge("high") == {"purged": 0, "in_flight_left": 0}
    c.close()


def test_purge_and_move_go_on_chunk_after_chunk(broker: Broker):
    c = broker.client()
    ids = c.send_many([b"m"] * 2100, level="normal")
    assert c.move("normal", "low") == {"moved": 2100, "in_flight_left": 0}  # three chunks of at most 1000
    assert broker.cli_json("move", "low", "--to", "normal") == {"moved": 2100, "in_flight_left": 0}
    assert [r["id"] for r in c.peek("normal", limit=None)] == ids
    assert c.purge("normal", dry_run=True) == broker.cli_json("purge", "normal", "--dry-run") == \
        {"would_purge": 2100, "in_flight_left": 0}
    assert c.purge("normal", limit=1500) == {"purged": 1500, "in_flight_left": 0}
    assert c.purge("normal") == {"purged": 600, "in_flight_left": 0}
    assert level_row(c, "normal")["depth"] == 0
    c.close()
