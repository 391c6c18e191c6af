"""Client.ha_status, ha_switchover and ha_recover on a real group: two sluiced nodes and a real redis-server.

The group is the one broker/README.md ("High availability") describes: node
n1 started first is the primary of epoch 1, n2 its standby; leadership lives
in a redis-server of the test's own, on a Unix socket in its directory (port
0: no TCP port), stopped by its PID when the test ends. The stream between
the nodes runs on ipc:// sockets there too. TTL 1500 ms, standby timeout
3000 ms, as tests/e2e/test_ha.c.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, List, Tuple

import pytest

import sluice
from conftest import Broker, same, wait_for


class Redis:
    """Redis is one redis-server on a Unix socket in a directory of its own (no TCP port, no persistence)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="sluice-py-redis-"))
        self.sock = self.dir / "redis.sock"
        self.url = f"unix://{self.sock}"
        self.proc = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", str(self.sock), "--save", "", "--appendonly", "no",
             "--dir", str(self.dir)],
            stdin=subprocess.DEVNULL, stdout=open(self.dir / "redis.log", "wb"), stderr=subprocess.STDOUT)
        wait_for("redis-server to answer PING", lambda: self.ping(), timeout_s=10.0, every_s=0.05)

    def command(self, *args: str) -> bytes:
        """command sends one command (RESP) and returns the raw reply's first line."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2.0)
            s.connect(str(self.sock))
            req = f"*{len(args)}\r\n" + "".join(f"${len(a.encode())}\r\n{a}\r\n" for a in args)
            s.sendall(req.encode())
            got = b""
            while not got.endswith(b"\r\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
            return got

    def ping(self) -> bool:
        try:
            return self.command("PING").startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def group(broker_factory: Callable[..., Broker]) -> Any:
    """group is (redis, n1, n2): n1 the primary of epoch 1, n2 its standby, in sync."""
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed (make deps installs it)")
    redis = Redis()
    try:
        nodes: List[Broker] = []
        for name in ("n1", "n2"):
            b = broker_factory(start=False)
            b.extra = ["--ha", redis.url, "--ha-group", "py", "--ha-node", name, "--repl-listen",
                       f"ipc://{b.dir}/repl.sock", "--ha-ttl-ms", "1500", "--repl-standby-timeout-ms", "3000"]
            nodes.append(b.start())
        n1, n2 = nodes
        with n1.client() as c:
            wait_for("n2 in sync", lambda: in_sync(c.ha_status(), "n2"))
        yield redis, n1, n2
    finally:
        for b in nodes:
            b.stop()  # before Redis: a node without Redis waits for it
        redis.stop()


def in_sync(status: Any, node: str) -> bool:
    return any(n["node"] == node and n["in_sync"] and n["role"] == "standby" for n in status["nodes"])


def primary(status: Any) -> str:
    return next((n["node"] for n in status["nodes"] if n["role"] == "primary"), "")


def test_ha_status_is_ha_status_json_from_either_node(group: Tuple[Redis, Broker, Broker]) -> None:
    _, n1, n2 = group
    with n1.client() as c:
        st = c.ha_status()
    assert st == {"epoch": 1, "nodes": [
        {"node": "n1", "role": "primary", "endpoint": n1.endpoint, "in_sync": True, "lag_records": 0},
        {"node": "n2", "role": "standby", "endpoint": n2.endpoint, "in_sync": True, "lag_records": 0},
    ]}
    same(st, n1.cli_json("ha", "status"))
    with n2.client() as c:  # a standby answers with its own view
        st2 = c.ha_status()
    assert st2["epoch"] == 1
    assert {"node": "n1", "role": "primary", "endpoint": n1.endpoint, "in_sync": True,
            "lag_records": 0} in st2["nodes"]
    assert {n["node"] for n in st2["nodes"]} == {"n1", "n2"}
    assert primary(st2) == "n1"


def test_a_switchover_moves_the_primary_and_loses_nothing(group: Tuple[Redis, Broker, Broker]) -> None:
    _, n1, n2 = group
    with sluice.Client(f"{n1.endpoint}|{n2.endpoint}", timeout_ms=15000) as c:
        for i in range(20):
            c.send(f"before {i}", level="normal", key=f"b{i}")
        t0 = time.monotonic()
        assert c.ha_switchover() is None
        for i in range(20):  # the first waits for n2, which promotes; the client follows it
            c.send(f"after {i}", level="normal", key=f"a{i}")
        took = time.monotonic() - t0
        st = wait_for("n2 primary in epoch 2", lambda: (lambda s: s if primary(s) == "n2" else None)(c.ha_status()))
        assert st["epoch"] == 2
        assert st["nodes"][0]["node"] == "n2"  # the answering node first: the new primary
        assert st["nodes"][0]["endpoint"] == n2.endpoint
        wait_for("n1 back in sync as the standby", lambda: in_sync(c.ha_status(), "n1"))
        assert next(r for r in c.stats()["levels"] if r["name"] == "normal")["depth"] == 40
    print(f"# switchover: 20 publishes through n1|n2 confirmed {took:.2f} s after it was asked")
    with n1.client() as old:  # the old primary redirects now
        with pytest.raises(sluice.Redirect):
            old.send("late", level="normal")


def test_errors_are_the_package_exceptions(group: Tuple[Redis, Broker, Broker],
                                           broker_factory: Callable[..., Broker]) -> None:
    _, n1, n2 = group
    with n2.client() as c:
        with pytest.raises(sluice.Redirect):  # a switchover is the primary's
            c.ha_switchover()
        with pytest.raises(sluice.InvalidState):  # Redis holds the record: nothing to recover
            c.ha_recover("n2")
    with n1.client() as c:
        with pytest.raises(sluice.InvalidState):
            c.ha_recover("n1")
    lone = broker_factory()  # no --ha
    with lone.client() as c:
        with pytest.raises(sluice.InvalidState):
            c.ha_status()
        with pytest.raises(sluice.InvalidState):
            c.ha_switchover()


def test_ha_recover_after_redis_lost_its_data(group: Tuple[Redis, Broker, Broker]) -> None:
    redis, n1, n2 = group
    with n1.client() as c:
        for i in range(5):
            c.send(f"m{i}", level="normal")
    assert redis.command("FLUSHALL").startswith(b"+OK")
    time.sleep(3.0)  # two TTLs: the primary cannot renew and stops; nothing promotes
    with n2.client() as c:
        assert c.ha_recover("n1") is None
    def depth() -> Any:  # n1 serves once its next ask of Redis makes it primary (it starts again in place)
        try:
            with n1.client(timeout_ms=500) as c:
                return next(r for r in c.stats()["levels"] if r["name"] == "normal")["depth"] + 1
        except (sluice.Timeout, sluice.ConnectError, sluice.Redirect):
            return None

    assert wait_for("n1 serving again", depth, timeout_s=15.0, every_s=0.1) - 1 == 5  # nothing lost
    with n1.client() as c:
        st = c.ha_status()
    assert st["epoch"] == 2  # above the epoch both nodes had seen
    assert st["nodes"][0]["node"] == "n1" and st["nodes"][0]["role"] == "primary"
