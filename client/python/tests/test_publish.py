"""Publishing: ids, priority order, FIFO, delay, time to live, idempotency keys, send_many."""

from __future__ import annotations

import random
import time

import pytest

import sluice
from conftest import level_row, wait_for


def drain(c: sluice.Client, n: int, **consume: object) -> list:
    """drain receives n deliveries (acking each) and returns them."""
    got = []
    with c.consume(**consume) as consumer:  # type: ignore[arg-type]
        while len(got) < n:
            d = consumer.recv(5000)
            assert d is not None, f"only {len(got)} of {n} deliveries came"
            got.append(d)
            d.ack()
        consumer.flush()
    return got


def test_send_returns_increasing_ids_and_the_message_comes_back_whole(client):
    body = bytes(range(256)) * 3  # every byte value, NULs included
    a = client.send(body, level="high", tag="acme", cost=3)
    b = client.send("text, sent as UTF-8 — ok", level=2)
    assert isinstance(a, int) and b > a
    d1, d2 = drain(client, 2)
    assert (d1.id, d1.body, d1.level, d1.level_name, d1.tag, d1.cost, d1.attempt) == (a, body, 0, "high", "acme", 3, 1)
    assert (d2.id, d2.text, d2.level_name, d2.tag, d2.cost) == (b, "text, sent as UTF-8 — ok", "low", None, 1)


def test_a_message_without_a_level_goes_to_the_default_level(client):
    client.send(b"x")
    assert level_row(client, "normal")["depth"] == 1


def test_levels_are_served_in_priority_order(client):
    order = [random.choice(["high", "normal", "low"]) for _ in range(30)]
    for i, lv in enumerate(order):
        client.send(f"{lv}-{i}", level=lv)
    got = [d.level for d in drain(client, len(order))]
    assert got == sorted(got), "a lower level was served while a higher one had messages"
    assert got.count(0) == order.count("high")


def test_a_level_is_first_in_first_out(client):
    ids = [client.send(f"m{i}", level="normal") for i in range(20)]
    assert [d.id for d in drain(client, 20)] == ids


def test_delay_holds_a_message_back_until_it_is_due(client):
    t0 = time.monotonic()
    sid = client.send(b"later", delay_ms=1000)
    with client.consume() as consumer:
        assert consumer.recv(100) is None
        assert client.explain(sid)["state"] == "delayed"
        d = consumer.recv(5000)
        assert d is not None and d.id == sid
        assert time.monotonic() - t0 >= 1.0
        d.ack()


def test_a_message_past_its_time_to_live_becomes_a_dead_letter(client):
    sid = client.send(b"stale soon", level="low", ttl_ms=200)
    wait_for("the message to expire", lambda: level_row(client, "low")["dead"] == 1, timeout_s=10)
    assert client.explain(sid)["state"] == "dead"
    assert [r["id"] for r in client.dead_list("low")] == [sid]


def test_an_idempotency_key_stores_a_repeat_once(client):
    a = client.send(b"charge 7", key="order-7")
    b = client.send(b"charge 7 again", key="order-7")
    c = client.send(b"charge 8", key="order-8")
    assert a == b and c != a
    assert level_row(client, "normal")["depth"] == 2
    d = drain(client, 2)
    assert [x.body for x in d] == [b"charge 7", b"charge 8"]


def test_send_many_returns_the_ids_in_order(client):
    bodies = [f"job {i}".encode() for i in range(1000)]
    ids = client.send_many(bodies, level="low", tag="batch", window=64)
    assert len(ids) == 1000 and ids == sorted(ids) and len(set(ids)) == 1000
    got = drain(client, 1000, credit=64)
    assert [d.id for d in got] == ids and [d.body for d in got] == bodies
    assert {d.tag for d in got} == {"batch"}


def test_send_many_keys_message_n_as_key_colon_n(client):
    first = client.send_many([b"a", b"b", b"c"], key="import-1")
    again = client.send_many([b"a", b"b", b"c", b"d"], key="import-1")
    assert again[:3] == first and again[3] not in first
    assert client.send(b"b", key="import-1:2") == first[1]


def test_send_many_takes_any_iterable_and_str(client):
    ids = client.send_many(f"line {i}" for i in range(5))
    assert [d.text for d in drain(client, 5)] == [f"line {i}" for i in range(5)]
    assert client.send_many([]) == []
    assert len(ids) == 5


def test_the_client_is_a_context_manager_and_close_is_idempotent(broker):
    with broker.client() as c:
        c.send(b"x")
        assert c.levels() == ["high", "normal", "low"]
    assert c.closed
    c.close()
    with pytest.raises(sluice.InvalidState):
        c.send(b"y")


TP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
HEADERS = {"traceparent": TP, "tracestate": "congo=t61rcWkgMzE", "X-Empty": "", "x-text": "naïve café ✓"}


def test_headers_come_back_byte_for_byte_in_their_order(client):
    a = client.send(b"one", level="normal", key="order-1", headers=HEADERS)
    b = client.send(b"two", level="normal")
    e = client.explain(a)
    assert e["headers"] == HEADERS and list(e["headers"]) == list(HEADERS) and e["wait_ms"] >= 0
    ids = client.send_many([b"m1", b"m2"], level="normal", headers={"X-Batch": "7"})
    d1, d2, d3, d4 = drain(client, 4)
    assert (d1.id, d1.headers, list(d1.headers), d1.key) == (a, HEADERS, list(HEADERS), "order-1")
    assert (d2.id, d2.headers, d2.key) == (b, {}, None)
    assert [d3.id, d4.id] == ids and d3.headers == d4.headers == {"X-Batch": "7"}
    assert d1.wait_ms >= 0


def test_a_dead_letter_keeps_its_headers(client):
    sid = client.send(b"doomed", level="low", ttl_ms=100, headers=HEADERS)
    wait_for("its time to live to run out", lambda: client.explain(sid)["state"] == "dead")
    assert client.dead_peek(sid)["headers"] == HEADERS
    assert client.explain(sid)["headers"] == HEADERS


@pytest.mark.parametrize("headers, error", [
    ({f"h{i}": "v" for i in range(33)}, sluice.TooBig),
    ({"n" * 65: "v"}, sluice.TooBig),
    ({"a": "v" * 1025}, sluice.TooBig),
    ({"bad name": "v"}, sluice.InvalidArgument),
    ({"a": "line\nbreak"}, sluice.InvalidArgument),
    ({"X-A": "1", "x-a": "2"}, sluice.InvalidArgument),
    ({"Connection": "close"}, sluice.InvalidArgument),
    ({"Idempotency-Key": "k"}, sluice.InvalidArgument),
    ({"X-Sluice-Id": "1"}, sluice.InvalidArgument),
    ({"a": 1}, sluice.InvalidArgument),
])
def test_headers_that_break_a_rule_are_refused(client, headers, error):
    with pytest.raises(error) as e:
        client.send(b"x", headers=headers)
    assert "header" in str(e.value)
    assert level_row(client, "normal")["depth"] == 0


def test_the_stream_endpoint_publishes_and_consumes_as_zeromq_does(broker_factory):
    b = broker_factory(start=False)
    sock = f"{b.dir}/st.sock"
    b.extra += ["--stream-listen", f"ipc://{sock}"]
    b.start()
    with sluice.Client(f"stream+ipc://{sock}") as s, b.client() as z:
        ids = [s.send(f"s{i}", level="normal") for i in range(20)]
        ids.append(z.send("z", level="normal"))  # the same queue from the ZeroMQ endpoint
        assert ids == sorted(ids)
        got = drain(s, 21)
        assert [d.text for d in got] == [f"s{i}" for i in range(20)] + ["z"]
        assert level_row(z, "normal")["depth"] == 0
    with pytest.raises(sluice.errors.InvalidArgument):
        sluice.Client("stream+udp://127.0.0.1:1")
