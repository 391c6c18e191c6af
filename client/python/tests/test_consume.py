"""Consuming: credit, ack, nack, touch, throttled, reject, and a consumer that leaves."""

from __future__ import annotations

import time

import pytest

import sluice
from conftest import level_row, same, wait_for


def one(consumer: sluice.Consumer, timeout_ms: int = 5000) -> sluice.Delivery:
    d = consumer.recv(timeout_ms)
    assert d is not None, "no delivery came"
    return d


def test_ack_deletes_the_message(client):
    sid = client.send(b"done soon")
    with client.consume() as consumer:
        d = one(consumer)
        assert client.explain(sid)["state"] == "leased"
        d.ack()
        consumer.flush()
        assert d.settled
    assert client.explain(sid)["state"] == "gone"
    assert level_row(client, "normal")["acked"] == 1


def test_credit_bounds_the_deliveries_held(client):
    client.send_many([b"m"] * 10)
    with client.consume(credit=3) as consumer:
        held = [one(consumer) for _ in range(3)]
        assert consumer.recv(300) is None  # the window is full
        held[0].ack()
        held.append(one(consumer))
        for d in held[1:]:
            d.ack()
        consumer.flush()


def test_iterating_a_consumer_yields_deliveries_until_stop(client):
    client.send_many([f"{i}" for i in range(5)])
    seen = []
    with client.consume(credit=2) as consumer:
        for d in consumer:
            seen.append(d.text)
            d.ack()
            if len(seen) == 5:
                consumer.stop()
    assert seen == ["0", "1", "2", "3", "4"]


def test_a_consumer_takes_only_its_levels_and_its_limit(client):
    client.send(b"h", level="high")
    lo = client.send(b"l", level="low")
    client.send(b"l2", level="low")
    with client.consume(["low"], limit=1, credit=4) as consumer:
        d = one(consumer)
        assert d.id == lo
        d.ack()
        assert consumer.recv(300) is None  # its limit: one delivery in all
    with client.consume("high,normal") as consumer:
        assert one(consumer).body == b"h"


def test_nack_redelivers_with_the_next_attempt_after_its_delay(client):
    sid = client.send(b"flaky")
    with client.consume() as consumer:
        d = one(consumer)
        t0 = time.monotonic()
        d.nack(300)
        again = one(consumer)
        assert again.id == sid and again.attempt == 2
        assert time.monotonic() - t0 >= 0.3
        again.nack()
        third = one(consumer)
        assert third.attempt == 3
        third.ack()
    assert level_row(client, "normal")["nacked"] == 2


def test_nacked_past_the_attempt_limit_it_becomes_a_dead_letter(broker_factory):
    b = broker_factory("--max-attempts", "2")
    with b.client() as c, c.consume() as consumer:
        sid = c.send(b"poison")
        one(consumer).nack()
        one(consumer).nack()
        wait_for("the dead letter", lambda: level_row(c, "normal")["dead"] == 1)
        assert c.dead_list("normal")[0]["id"] == sid


def test_touch_keeps_a_delivery_past_its_first_lease(broker_factory):
    b = broker_factory("--lease-ms", "1000")
    with b.client() as c, c.consume() as consumer:
        sid = c.send(b"long job")
        d = one(consumer)
        assert d.lease_ms == 1000
        for _ in range(4):  # 1.6 s in all: past the first lease
            time.sleep(0.4)
            d.touch(1000)
        assert c.explain(sid)["state"] == "leased"
        d.ack()
        consumer.flush()
        assert c.explain(sid)["state"] == "gone"


def test_an_expired_lease_is_delivered_again_and_its_late_ack_is_stale(broker_factory):
    b = broker_factory("--lease-ms", "300")
    with b.client() as c, c.consume(credit=2) as consumer:
        sid = c.send(b"slow")
        d = one(consumer)
        again = one(consumer, 5000)  # the lease ran out: the broker took it back
        assert again.id == sid and again.attempt == 2
        d.ack()
        with pytest.raises(sluice.Stale):
            consumer.flush()
        assert consumer.refused == 1
        again.ack()
        consumer.flush()
        st = c.stats()  # the broker counts the refusal: a token no lease has, not another connection's
        assert (st["settle_refused"], st["settle_foreign"]) == (1, 0)
        same(st, b.cli_json("stats"))


def test_throttled_returns_the_message_uncharged_and_pauses_the_sink(client):
    sid = client.send(b"429")
    with client.consume() as consumer:
        d = one(consumer)
        t0 = time.monotonic()
        d.throttled(400)
        assert client.sink_show()["paused_ms"] > 0
        again = one(consumer)
        assert again.id == sid and again.attempt == 1  # not charged
        assert time.monotonic() - t0 >= 0.4
        again.ack()
    row = level_row(client, "normal")
    assert row["throttled"] == 1 and row["throttled_tag"] == 0


def test_throttled_for_a_tag_pauses_that_tag_alone(client):
    client.level_set("normal", fair=True)
    a = client.send(b"a", tag="slow-tenant")
    b = client.send(b"b", tag="other")
    with client.consume(credit=2) as consumer:
        first = one(consumer)
        assert first.id == a
        first.throttled(2000, scope="tag")
        nxt = one(consumer)
        assert nxt.id == b  # the other tag flows on
        nxt.ack()
        assert client.sink_show()["paused_ms"] == 0
    assert level_row(client, "normal")["throttled_tag"] == 1
    with pytest.raises(sluice.InvalidArgument):
        nxt.throttled(scope="everything")


def test_reject_makes_a_dead_letter_at_once_with_its_reason(client):
    sid = client.send(b"\x00bad payload", level="low", tag="t")
    with client.consume() as consumer:
        one(consumer).reject("HTTP 400: bad payload")
        consumer.flush()
    rows = client.dead_list("low")
    assert [(r["id"], r["attempts"], r["tag"]) for r in rows] == [(sid, 1, "t")]
    assert rows[0]["reason"].endswith("HTTP 400: bad payload")  # after the broker's "rejected by ..."
    assert rows[0]["body_preview"] == "\\x00bad payload"
    assert client.dead_peek(sid)["body"] == b"\x00bad payload"


def test_settling_twice_is_refused_here(client):
    client.send(b"x")
    with client.consume() as consumer:
        d = one(consumer)
        d.ack()
        for again in (d.ack, d.nack, d.reject, d.touch, d.throttled):
            with pytest.raises(sluice.InvalidState):
                again()


def test_a_consumer_leaving_with_messages_in_hand_gives_them_back_uncharged(client):
    ids = client.send_many([b"a", b"b", b"c", b"d"])
    with client.consume(credit=4) as consumer:
        held = [one(consumer) for _ in range(3)]
        held[0].ack()
    # closed: the two it still held (and the one it was sent) go back at once,
    # as soon as the broker reads the BYE
    with pytest.raises(sluice.InvalidState):
        held[1].ack()
    wait_for("the deliveries to return", lambda: level_row(client, "normal")["inflight"] == 0)
    with client.consume(credit=4) as consumer:
        back = sorted((one(consumer) for _ in range(3)), key=lambda d: d.id)
        assert [d.id for d in back] == ids[1:]
        assert {d.attempt for d in back} == {1}
        for d in back:
            d.ack()
        consumer.flush()


def test_a_consumer_that_dies_gives_its_messages_back_after_heartbeats(broker, tmp_path):
    import subprocess
    import sys
    import textwrap

    with broker.client() as c:
        sid = c.send(b"orphan")
        script = tmp_path / "die.py"
        script.write_text(textwrap.dedent(f"""
            import os, sys
            sys.path.insert(0, {str(__import__('pathlib').Path(sluice.__file__).parents[1])!r})
            import sluice
            c = sluice.Client({broker.endpoint!r})
            k = c.consume()
            d = k.recv(5000)
            print(d.id, flush=True)
            os._exit(0)  # no BYE: the broker notices by heartbeats
        """))
        out = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=30)
        assert out.stdout.strip() == str(sid).encode(), out.stderr
        with c.consume() as consumer:
            d = one(consumer, 10000)
            assert d.id == sid and d.attempt == 2  # a death is charged, unlike a BYE
            d.ack()
