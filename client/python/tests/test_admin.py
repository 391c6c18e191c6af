"""The admin calls return what ``sluice ... --json`` prints, on one real broker.

One broker is set up with something in every listing (level settings, a
paused level, a fair level with tags and patterns, pools, a sink limit, dead
letters with awkward bodies in two levels), then every Python listing is
compared with the
CLI's JSON of the same moment: the same keys in the same order, the same
types, the same values; only figures that move with the clock (uptime, ages,
refilling buckets) may differ, within a bound. Changes made through Python
and through the CLI must read back the same, so the two cannot drift apart.
"""

from __future__ import annotations

import re
from typing import Any, Dict

import pytest

import sluice
from conftest import Broker, level_row, same, wait_for


@pytest.fixture(scope="module")
def rich():
    """rich is a broker with something in every listing, and a client on it."""
    b = Broker().start()
    c = b.client()
    try:
        c.level_set("high", deadline_ms=2500, aging_ms=1000)
        c.level_set("normal", max_rate=["10/s", "500/min"], burst=5, min_rate=0.5)
        c.level_set("low", fair=True)
        c.level_pause("normal")
        c.pool_resize("render", 4)
        c.pool_resize("mail", 0)
        c.pool_pause("mail")
        c.sink_set(rate=[100, "6000/min:200"], burst=10, inflight=50)
        c.tag_set("gold-*", weight=4, max_rate=5, each=True)
        c.tag_set("free-*", inflight=2, max_rate="20/min")
        c.tag_pause("free-2")
        c.send_many([b"n1", b"n2"], level="normal")
        for tag in ("gold-1", "gold-1", "free-2", "plain"):
            c.send(tag.encode(), level="low", tag=tag)
        c.send(b"untagged", level="low")
        bodies = [b"\x00\x01binary\xff", "é utf-8 ✓ \"quoted\" \\ back".encode(), b"x" * 100, b"\ttab\nnl",
                  b"\x1b[31mred\r\x7f", "\u0085c1 \u202eevil".encode(),
                  b"\xc0\xaf over \xed\xa0\x80 sur \xf4\x90\x80\x80 big", b"y" * 63 + "é".encode()]
        dead_ids = c.send_many(bodies, level="high", tag="t\"q")
        with c.consume(["high"], credit=4) as k:
            for _ in bodies:
                d = k.recv(5000)
                assert d is not None
                d.reject(f"bad \"{d.id}\"")
            k.flush()
        c.send(b"ready", level="high")
        c.send(b"expires", level="low", ttl_ms=1)  # a dead letter of low once its time to live runs out
        wait_for("the dead letters", lambda: level_row(c, "high")["dead"] == len(bodies))
        wait_for("the expired one", lambda: level_row(c, "low")["dead"] == 1)
        yield b, c, dead_ids
    finally:
        c.close()
        b.remove()


def test_stats_is_stats_json(rich):
    b, c, _ = rich
    py = c.stats()
    same(py, b.cli_json("stats"))
    assert py["levels"][0]["dead"] == 8 and py["levels"][2]["dead"] == 1 and py["sink"]["rate_milli"] == 100000
    assert [r["state"] for r in py["levels"]] == ["ok"] * 3 and py["quarantined"] == 0


def test_level_list_is_level_list_json(rich):
    b, c, _ = rich
    py = c.level_list()
    same(py, b.cli_json("level", "list"))
    normal = py["levels"][1]
    assert normal["paused"] is True and normal["min_rate_milli"] == 500 and normal["burst"] == 5
    assert [(w["count_milli"], w["period_ms"]) for w in normal["windows"]] == [(10000, 1000), (500000, 60000)]
    assert (py["levels"][0]["deadline_ms"], py["levels"][0]["aging_ms"], py["levels"][2]["fair"]) == (2500, 1000, True)


def test_pool_list_is_pool_list_json(rich):
    b, c, _ = rich
    py = c.pool_list()
    same(py, b.cli_json("pool", "list"))
    pools = {p["name"]: p for p in py["pools"]}
    assert pools["render"]["size"] == 4 and pools["render"]["levels"] == ["high", "normal", "low"]
    assert pools["mail"]["paused"] is True


def test_sink_show_is_sink_show_json(rich):
    b, c, _ = rich
    py = c.sink_show()
    same(py, b.cli_json("sink", "show"))
    assert (py["rate_milli"], py["burst"], py["max_inflight"], py["coord"]) == (100000, 10, 50, None)
    assert [(w["count_milli"], w["period_ms"], w["burst"]) for w in py["windows"]] == [
        (100000, 1000, 10), (6000000, 60000, 200)]


def test_tag_list_is_tag_list_json(rich):
    b, c, _ = rich
    py = c.tag_list()
    same(py, b.cli_json("tag", "list"))
    assert [p["pattern"] for p in py["patterns"]] == ["gold-*", "free-*"]
    tags = {t["tag"]: t for t in py["tags"]}
    assert tags["gold-1"]["depth"] == 2 and tags["gold-1"]["level"] == "low" and tags["gold-1"]["weight"] == 4
    assert tags["free-2"]["paused"] is True and tags["plain"]["pattern"] is None


def test_dead_list_is_dead_list_json(rich):
    b, c, ids = rich
    py = c.dead_list("high")
    same(py, b.cli_json("dead", "list", "high"))
    assert [r["id"] for r in py] == ids
    assert py[0]["body_preview"].startswith("\\x00\\x01binary")
    assert py[1]["body_preview"] == "é utf-8 ✓ \"quoted\" \\ back"
    assert py[2]["body_bytes"] == 100 and len(py[2]["body_preview"]) == 64
    assert [r["body_preview"] for r in py[3:]] == [
        "\\ttab\\nnl", "\\e[31mred\\r\\x7f", "\\xc2\\x85c1 \\xe2\\x80\\xaeevil",
        "", "y" * 63]  # the broker sends a preview up to its first byte that is not UTF-8
    same(c.dead_list("high", limit=2, after=ids[0]), b.cli_json("dead", "list", "0", "--limit", "2", "--after",
                                                                  str(ids[0])))
    same(c.dead_list("normal"), b.cli_json("dead", "list", "normal"))


def test_dead_list_of_every_level_is_dead_list_json_without_a_level(rich):
    b, c, ids = rich
    every = c.dead_list()
    same(every, b.cli_json("dead", "list"))
    assert [r["level"] for r in every] == ["high"] * len(ids) + ["low"]
    for limit in (3, len(ids), len(ids) + 1):  # within the first level, at its end, across to the next
        py = c.dead_list(limit=limit)
        same(py, b.cli_json("dead", "list", "--limit", str(limit)))
        assert py == every[:limit]
    same(c.dead_list(after=ids[-2]), b.cli_json("dead", "list", "--after", str(ids[-2])))
    assert c.dead_list(after=every[-1]["id"]) == b.cli_json("dead", "list", "--after", str(every[-1]["id"])) == []
    assert [r["id"] for r in c.dead_list(after=ids[-2], limit=None)] == [ids[-1], every[-1]["id"]]


def explain_text(e: Dict[str, Any]) -> str:
    """explain_text is what `sluice explain ID` prints for e (cli_admin.c), for the states that stay put."""
    lv = e["level"]
    if e["state"] == "ready":
        s = f"ready at the head of level {lv}" if e["position"] == 0 else \
            f"ready in level {lv}, {e['position']} ahead of it"
    elif e["state"] == "dead":
        s = f"a dead letter of level {lv}"
    else:
        s = e["state"]
    return f"message {e['id']}: {s}{'; ' if e['why'] else ''}{e['why']}\n"


def test_explain_says_what_sluice_explain_says(rich):
    b, c, ids = rich
    ready = c.send(b"behind one", level="high")
    for sid in (ids[0], ready, ready - 1, 10**9):
        e = c.explain(sid)
        first, *rest = b.cli("explain", str(sid)).stdout.decode().splitlines(keepends=True)
        assert explain_text(e) == first
        # then its wait (which moves on between the two calls) and its headers
        assert [r.split()[0] for r in rest] == ([] if e["state"] == "gone" else ["waiting"]) + \
            ["header"] * len(e["headers"])
    assert c.explain(ready)["position"] == 1
    gone = c.explain(10**9)
    assert (gone["id"], gone["state"], gone["level"]) == (10**9, "gone", None)


def test_changes_made_here_read_back_as_the_clis(broker: Broker):
    c = broker.client()
    c.level_set("high", max_rate=["10/s:3", "500/min"], min_rate="0.5", deadline_ms=1500, aging_ms=250)
    broker.cli("level", "set", "normal", "--max-rate", "10/s:3", "--max-rate", "500/min", "--min-rate", "0.5",
               "--deadline", "1.5", "--aging-step", "0.25")
    c.level_set("low", max_rate=2.5, burst=7)
    rows = c.level_list()["levels"]
    for k in ("deadline_ms", "aging_ms", "max_rate_milli", "min_rate_milli", "burst", "windows"):
        assert rows[0][k] == rows[1][k], k
    broker.cli("level", "set", "high", "--max-rate", "2.5", "--burst", "7")
    rows = c.level_list()["levels"]
    assert (rows[0]["max_rate_milli"], rows[0]["burst"]) == (rows[2]["max_rate_milli"], rows[2]["burst"]) == (2500, 7)

    c.sink_set(max_rate=["8/10s", "1000/h:50"], inflight=9)
    mine = c.sink_show()
    broker.cli("sink", "set", "--max-rate", "off", "--inflight", "off")
    broker.cli("sink", "set", "--max-rate", "8/10s", "--max-rate", "1000/h:50", "--inflight", "9")
    theirs = c.sink_show()
    for k in ("rate_milli", "burst", "max_inflight", "windows"):
        same(mine[k], theirs[k], k, k)

    c.tag_set("a-*", max_rate=["3/s", "100/min"], burst=2, inflight=4, weight=7, each=True)
    broker.cli("tag", "set", "b-*", "--max-rate", "3/s", "--max-rate", "100/min", "--burst", "2", "--inflight", "4",
               "--weight", "7", "--each")
    a, bb = c.tag_list()["patterns"]
    assert {**a, "pattern": "b-*"} == bb
    c.tag_set("a-*", off=True)
    assert [p["pattern"] for p in c.tag_list()["patterns"]] == ["b-*"]

    c.pool_resize("p1", 3)
    c.pool_resize("p2", 3)
    assert c.pool_delete("p1") == {**broker.cli_json("pool", "delete", "p2"), "pool": "p1"}
    assert not {"p1", "p2"} & {p["name"] for p in c.pool_list()["pools"]}

    c.level_pause("low")
    assert c.level_list()["levels"][2]["paused"] is True
    c.level_resume(2)
    assert c.level_list()["levels"][2]["paused"] is False
    c.close()


def test_requeue_and_purge_count_as_the_cli_does(broker: Broker):
    c = broker.client()
    for lv in ("high", "low"):
        c.send_many([b"d"] * 5, level=lv)
    with c.consume(["high", "low"], credit=10) as k:
        for _ in range(10):
            d = k.recv(5000)
            assert d is not None
            d.reject("no")
        k.flush()
    wait_for("ten dead letters", lambda: sum(r["dead"] for r in c.stats()["levels"]) == 10)
    one = c.dead_list("high")[0]["id"]
    other = c.dead_list("low")[0]["id"]
    assert c.dead_requeue(id=one) == broker.cli_json("dead", "requeue", f"id:{other}") == {"requeued": 1}
    assert c.dead_requeue("high", limit=2) == broker.cli_json("dead", "requeue", "low", "--limit", "2") == \
        {"requeued": 2}
    assert c.dead_purge("high", older_than_ms=3_600_000) == \
        broker.cli_json("dead", "purge", "low", "--older-than", "3600") == {"purged": 0}
    assert c.dead_purge("high") == broker.cli_json("dead", "purge", "low") == {"purged": 2}
    assert c.dead_requeue("high") == broker.cli_json("dead", "requeue", "low") == {"requeued": 0}
    assert [r["depth"] for r in c.stats()["levels"]] == [3, 0, 3]
    c.send(b"to-be-dead", level="normal")
    with c.consume(["normal"]) as k:
        d = k.recv(5000)
        assert d is not None
        d.reject()
        k.flush()
    wait_for("the dead letter", lambda: level_row(c, "normal")["dead"] == 1)
    assert c.dead_requeue("normal", to="high") == {"requeued": 1}
    assert level_row(c, "high")["depth"] == 4
    with pytest.raises(sluice.InvalidArgument):
        c.dead_requeue("high", id=1)
    c.close()


def test_levels_are_named_or_numbered_everywhere(client):
    client.level_pause(0)
    client.level_pause("2")
    assert [r["paused"] for r in client.level_list()["levels"]] == [True, False, True]
    for bad in ("nope", 3, -1, None, 1.5):
        with pytest.raises(sluice.NoLevel):
            client.level_pause(bad)  # type: ignore[arg-type]
    assert re.search("no such", str(pytest.raises(sluice.NoLevel, client.level_resume, "zzz").value))


def test_rates_in_thousandths_as_the_listings_show_them(broker: Broker):
    with broker.client() as c:
        c.sink_set(rate_milli=2500, max_inflight=3)
        mine = c.sink_show()
        broker.cli("sink", "set", "--max-rate", "2.5", "--inflight", "3")
        theirs = c.sink_show()
        assert (mine["rate_milli"], mine["max_inflight"], mine["windows"][0]["count_milli"]) == \
            (theirs["rate_milli"], theirs["max_inflight"], theirs["windows"][0]["count_milli"]) == (2500, 3, 2500)
        c.level_set("low", max_rate_milli=1500, min_rate_milli=500)
        low = c.level_list()["levels"][2]
        assert (low["max_rate_milli"], low["min_rate_milli"]) == (1500, 500)
        c.tag_set("x-*", rate_milli=3000)
        assert c.tag_list()["patterns"][0]["rate_milli"] == 3000
        c.sink_set(rate_milli=0)
        assert c.sink_show()["rate_milli"] == 0
        with pytest.raises(sluice.InvalidArgument):
            c.sink_set(rate=1, rate_milli=1000)


def test_a_pause_after_throttled_shows_as_the_cli_shows_it_and_resume_ends_it(broker: Broker):
    # A FIFO level whose head's tag is throttled waits out that tag's pause
    # (a level pause: throttled_ms in level list and stats); a THROTTLED for
    # the sink pauses the sink (paused_ms in sink show and stats).
    c = broker.client()
    c.send(b"tenant 429", level="normal", tag="t1")
    c.send(b"sink 429", level="high")
    with c.consume(["normal"]) as k:
        d = k.recv(5000)
        assert d is not None
        d.throttled(60_000, scope="tag")
        k.flush()
    wait_for("the level's pause", lambda: c.level_list()["levels"][1]["throttled_ms"] > 0)
    py = c.level_list()
    same(py, broker.cli_json("level", "list"))
    assert [r["throttled_ms"] > 50_000 for r in py["levels"]] == [False, True, False]
    st = c.stats()
    same(st, broker.cli_json("stats"))
    assert st["levels"][1]["throttled_ms"] > 50_000 and st["levels"][0]["throttled_ms"] == 0
    c.level_resume("normal")
    assert c.level_list()["levels"][1]["throttled_ms"] == 0 and c.stats()["levels"][1]["throttled_ms"] == 0

    def throttle_the_sink() -> None:
        with c.consume(["high"]) as k:
            d = k.recv(5000)
            assert d is not None
            d.throttled(60_000)
            k.flush()
        wait_for("the sink's pause", lambda: c.sink_show()["paused_ms"] > 0)

    throttle_the_sink()
    same(c.sink_show(), broker.cli_json("sink", "show"))
    st = c.stats()
    same(st, broker.cli_json("stats"))
    assert st["sink"]["paused_ms"] > 50_000
    left = c.sink_resume()
    assert 50_000 < left <= 60_000 and c.sink_show()["paused_ms"] == 0
    assert c.sink_resume() == 0
    assert broker.cli("sink", "resume").stdout.decode() == "sink: not paused\n"  # what 0 says
    throttle_the_sink()
    assert re.fullmatch(r"sink: resumed \(its pause after THROTTLED had \S+ left\)\n",
                        broker.cli("sink", "resume").stdout.decode())
    assert c.sink_show()["paused_ms"] == 0 and c.sink_resume() == 0
    c.close()
