"""Every kind of error a caller handles, raised as its own exception class.

(Permission is in test_auth.py, Stale in test_consume.py.)
"""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

import sluice
from conftest import ROOT, level_row, wait_for
from sluice import _lib, errors


def test_each_code_has_its_class_named_as_the_library_names_it():
    L = _lib.lib()
    for code in range(1, 21):
        cls = errors.BY_CODE[code]
        e = errors.from_code(code, "why")
        assert type(e) is cls and e.code == code and isinstance(e, sluice.Error)
        assert cls.name == L.sl_errname(code).decode()
        assert str(e) == f"why ({cls.name})"
    assert isinstance(errors.from_code(99, "new"), sluice.Error)
    assert issubclass(sluice.Timeout, TimeoutError) and issubclass(sluice.Permission, PermissionError)
    assert issubclass(sluice.InvalidArgument, ValueError) and issubclass(sluice.NotFound, LookupError)


def test_no_level(client):
    for bad in ("urgent", 3):
        with pytest.raises(sluice.NoLevel):
            client.send(b"x", level=bad)
    with pytest.raises(sluice.NoLevel):
        client.consume(["high", "urgent"])
    with pytest.raises(sluice.NoLevel):
        client.dead_list(9)


def test_too_big(broker_factory):
    b = broker_factory("--max-body", "1024")
    with b.client() as c:
        c.send(b"x" * 1024)
        with pytest.raises(sluice.TooBig) as e:
            c.send(b"x" * 1025)
        assert e.value.code == 3 and e.value.message
        with pytest.raises((sluice.TooBig, sluice.InvalidArgument)):
            c.send(b"x", tag="t" * 300)


def test_invalid_argument_locally_and_from_the_broker(client):
    with pytest.raises(sluice.InvalidArgument):
        sluice.Client("nonsense://here")
    with pytest.raises(sluice.InvalidArgument):
        client.send(12345)  # type: ignore[arg-type]
    with pytest.raises(sluice.InvalidArgument):
        client.level_set("high")  # nothing to change
    with pytest.raises(sluice.InvalidArgument):
        client.level_set("high", max_rate="10/fortnight")
    with pytest.raises(sluice.InvalidArgument):
        client.sink_set(rate="500/min", burst=4)  # a burst, and no per-second window
    with pytest.raises(sluice.InvalidArgument) as e:
        client.tag_set("x-*", weight=5000)  # the broker's limit: it says which
    assert "weight" in e.value.message
    with pytest.raises(sluice.InvalidArgument):
        client.consume(credit=0)


def test_full_when_a_level_is_at_its_limit(broker_factory):
    b = broker_factory("--level-max-messages", "3")
    with b.client() as c:
        ids = c.send_many([b"1", b"2", b"3"], level="low")
        with pytest.raises(sluice.Full) as e:
            c.send(b"4", level="low")
        assert e.value.retry_after_ms > 0 and e.value.code == 5
        c.send(b"other level", level="high")
        with pytest.raises(sluice.Full) as many:
            c.send_many([b"a", b"b"], level="low")
        assert many.value.ids == [None, None] and many.value.index == 0
        with c.consume(["low"]) as k:
            d = k.recv(5000)
            assert d is not None and d.id == ids[0]
            d.ack()
            k.flush()
        wait_for("room in the level", lambda: level_row(c, "low")["depth"] + level_row(c, "low")["inflight"] < 3)
        assert c.send(b"4", level="low") > ids[-1]


def test_no_space_when_the_store_is_full(broker_factory):
    b = broker_factory("--map-size-mb", "2", "--map-max-mb", "2", "--max-body", "8192")
    with b.client() as c:
        with pytest.raises(sluice.NoSpace) as e:
            c.send_many([b"x" * 4000] * 2000, window=16)
        stored = [i for i in e.value.ids if i is not None]
        assert len(stored) > 100 and e.value.ids[e.value.index] is None
        assert e.value.retry_after_ms > 0
        with pytest.raises(sluice.NoSpace):
            c.send(b"x" * 4000)
        assert level_row(c, "normal")["depth"] == len(stored)


def test_connect_error_at_once_when_nothing_listens(tmp_path):
    # nothing listens at the endpoint: the connection is refused, and the
    # first call says so about 0.3 s after the first refusal, not at its timeout
    with sluice.Client(f"ipc://{tmp_path}/nobody.sock", timeout_ms=20_000) as c:
        t0 = time.monotonic()
        with pytest.raises(sluice.ConnectError) as e:
            c.send(b"x")
        assert time.monotonic() - t0 < 10  # about 0.3 s; far below the 20 s timeout on a busy machine
        assert isinstance(e.value, ConnectionError) and "refused" in e.value.message
        with pytest.raises(sluice.ConnectError):
            c.stats()


@contextmanager
def silent_peer(kind: str, tmp_path: Path) -> Iterator[str]:
    """silent_peer is a listening socket that takes connections and never speaks (no ZMTP): its endpoint."""
    if kind == "ipc":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(tmp_path / "silent.sock"))
        endpoint = f"ipc://{tmp_path}/silent.sock"
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        endpoint = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    s.listen(8)  # the kernel completes the connections; nothing is ever read or written
    try:
        yield endpoint
    finally:
        s.close()


@pytest.mark.parametrize("kind", ["ipc", "tcp"])
def test_timeout_when_the_peer_never_answers(tmp_path, kind):
    with silent_peer(kind, tmp_path) as endpoint, sluice.Client(endpoint, timeout_ms=500) as c:
        t0 = time.monotonic()
        with pytest.raises(sluice.Timeout) as e:
            c.send(b"x")
        assert time.monotonic() - t0 >= 0.45  # it waited for its timeout: a connection, not a refusal
        assert isinstance(e.value, TimeoutError)
        with pytest.raises(sluice.Timeout):
            c.stats()


def test_not_found(client, tmp_path):
    with pytest.raises(sluice.NotFound):
        client.dead_peek(424242)
    with pytest.raises(sluice.NotFound):
        client.dead_requeue(id=424242)
    with pytest.raises(sluice.NotFound):
        client.pool_delete("no-such-pool")
    with pytest.raises(sluice.NotFound):
        client.tag_set("never-set-*", off=True)
    with pytest.raises(sluice.NotFound):
        sluice.key_read(tmp_path / "missing.key")


def test_invalid_state(client):
    client.send(b"waiting", level="low")
    with pytest.raises(sluice.InvalidState):
        client.level_set("low", fair=True)  # only while the level is empty
    with client.consume(pool="busy") as k:
        with pytest.raises(sluice.InvalidState):
            client.pool_delete("busy")  # it has a member
        assert k.recv(5000) is not None
    assert client.pool_delete("busy", force=True)["forced"] is True


def slow_broker(broker_factory, flush_us: int):
    shim = ROOT / "build/rel/slowdisk.so"
    if not shim.exists():
        pytest.skip("build/rel/slowdisk.so is not built (make build/rel/slowdisk.so)")
    return broker_factory(env={"LD_PRELOAD": str(shim), "SLUICE_SLOW_FLUSH_US": str(flush_us)})


def test_shutdown_refuses_what_arrives_while_the_broker_stops(broker_factory):
    # Every flush takes 300 ms, and a producer keeps a commit out nearly all
    # the time. SIGTERM ends the loop; while the last commit finishes, a
    # publish arrives and is refused with SL_ESHUTDOWN, not dropped.
    for attempt in range(3):
        b = slow_broker(broker_factory, 300_000)
        confirmed = threading.Event()
        stop = threading.Event()

        def produce() -> None:
            with b.client() as p:
                while not stop.is_set():
                    try:
                        p.send(b"steady")
                    except sluice.Error:
                        return
                    confirmed.set()

        t = threading.Thread(target=produce)
        t.start()
        late = b.client()
        late.levels()  # connected and greeted: what follows is one PUT
        assert confirmed.wait(20)
        b.signal(signal.SIGTERM)
        try:
            late.send(b"too late")
            outcome = None
        except sluice.Error as e:
            outcome = e
        stop.set()
        t.join(30)
        late.close()
        if isinstance(outcome, sluice.Shutdown):
            assert "shutting down" in outcome.message
            return
        b.stop()  # it arrived in the last pass, or after the refusals: try again
    pytest.fail(f"no SL_ESHUTDOWN in 3 tries (last: {outcome!r})")


def unread_bytes(path: str) -> int:
    """unread_bytes is what waits, unread, in the receive queues of the
    connections accepted on the Unix socket at path (``ss``, from iproute2)."""
    out = subprocess.run(["ss", "-xH", "state", "established"], capture_output=True, text=True, timeout=10,
                         check=True).stdout
    total = 0
    for line in out.splitlines():
        f = line.split()  # Netid Recv-Q Send-Q Local Port Peer Port (the state filtered out)
        if len(f) >= 4 and f[3] == path:
            total += int(f[1])
    return total


def test_connect_error_for_publishes_the_connection_lost(broker_factory):
    # The broker is stopped (SIGSTOP) before the publishes leave, killed with
    # them unread and started again: the client learns on reconnecting that
    # their answers cannot come, and says so, without waiting for its timeout.
    b = broker_factory()
    with b.client(timeout_ms=15000) as c:
        c.levels()
        b.signal(signal.SIGSTOP)
        sent = threading.Event()
        out: list = []

        def bodies():
            yield from [b"lost"] * 10
            sent.set()

        def publish() -> None:
            try:
                out.append(c.send_many(bodies()))
            except sluice.Error as e:
                out.append(e)

        t = threading.Thread(target=publish)
        t.start()
        assert sent.wait(10)
        # all ten in the stopped broker's socket, not in the client's queue, which
        # would send what it still holds to the broker started again
        path = b.endpoint[len("ipc://"):]
        last = -1

        def settled() -> bool:  # something there, and no more coming
            nonlocal last
            n, was = unread_bytes(path), last
            last = n
            return n > 0 and n == was

        wait_for("the publishes in the broker's socket", settled, every_s=0.2)
        b.kill9()
        b.start()
        t.join(30)
        assert not t.is_alive()
        (e,) = out
        assert isinstance(e, sluice.ConnectError) and isinstance(e, ConnectionError), e
        assert e.ids == [None] * 10
        with b.client() as again:
            assert level_row(again, "normal")["depth"] == 0
