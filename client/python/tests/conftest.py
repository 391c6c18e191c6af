"""The ground the Python client's tests stand on: real brokers, the CLI, time limits.

A :class:`Broker` is a real ``sluiced`` from $SLUICE_BIN (default ``bin``) in
a fresh directory under /tmp, listening on an ``ipc://`` socket there. It is
started with ``--ready-fd`` and waited for until it writes READY (never slept
for), and stopped by its PID: SIGTERM, a bounded wait, then SIGKILL. Every
broker a test starts is stopped and its directory removed when the test ends,
however it ends. The library comes from $SLUICE_LIB (make check-python sets
both).

Every test runs under an alarm (TEST_TIMEOUT_S, 60 s by default) that fails it
instead of letting it hang, and the run prints its random seed (set
SLUICE_SEED to replay one).
"""

from __future__ import annotations

import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]  # client/python/tests -> the repository
sys.path.insert(0, str(HERE.parent))  # the package from the source tree, without installing it

BIN = Path(os.environ.get("SLUICE_BIN", "bin"))
if not BIN.is_absolute():
    BIN = (Path.cwd() / BIN) if (Path.cwd() / BIN / "sluiced").exists() else (ROOT / BIN)
if "SLUICE_LIB" not in os.environ and (ROOT / "build/rel/libsluice.so.1").exists():
    os.environ["SLUICE_LIB"] = str(ROOT / "build/rel/libsluice.so.1")

import sluice  # noqa: E402

TEST_TIMEOUT_S = int(os.environ.get("SLUICE_TEST_TIMEOUT_S", "60"))
SEED = int(os.environ.get("SLUICE_SEED", str(int(time.time()))))
READY_S = 20.0
STOP_S = 20.0


def pytest_report_header(config: Any) -> List[str]:
    return [f"seed {SEED} (set SLUICE_SEED to replay)", f"sluiced from {BIN}",
            f"libsluice from {os.environ.get('SLUICE_LIB', sluice.SONAME)}"]


class TimeLimit(Exception):
    """TimeLimit: the test ran past its alarm."""


@pytest.fixture(autouse=True)
def _time_limit_and_seed() -> Any:
    random.seed(SEED)

    def expired(signum: int, frame: Any) -> None:
        raise TimeLimit(f"the test ran longer than {TEST_TIMEOUT_S} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TEST_TIMEOUT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def bin_path(name: str) -> str:
    """bin_path is $SLUICE_BIN/name."""
    return str(BIN / name)


class Broker:
    """Broker is one real sluiced in a directory of its own (see the module)."""

    def __init__(self, extra: Sequence[str] = (), env: Optional[Dict[str, str]] = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="sluice-py-"))
        self.data = self.dir / "data"
        self.endpoint = f"ipc://{self.dir}/s.sock"
        self.log = self.dir / "sluiced.log"
        self.extra = list(extra)
        self.env = env
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> "Broker":
        """start runs sluiced and waits for its READY line; fails the test with its log otherwise."""
        r, w = os.pipe()
        args = [bin_path("sluiced"), "--data", str(self.data), "--listen", self.endpoint, *self.extra,
                "--ready-fd", str(w)]
        env = dict(os.environ, **self.env) if self.env else None
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(args, pass_fds=(w,), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         env=env)
        os.close(w)
        got = b""
        deadline = time.monotonic() + READY_S
        try:
            while b"READY\n" not in got:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([r], [], [], left)[0]:
                    self.kill9()
                    pytest.fail(f"sluiced did not report READY within {READY_S} s:\n{self.tail()}")
                chunk = os.read(r, 64)
                if not chunk:
                    self.proc.wait(5)
                    pytest.fail(f"sluiced exited ({self.proc.returncode}) before it was ready:\n{self.tail()}")
                got += chunk
        finally:
            os.close(r)
        return self

    def tail(self, n: int = 4000) -> str:
        """tail is the end of the broker's log."""
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def signal(self, sig: int) -> None:
        """signal sends sig to the broker, by its PID."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def stop(self) -> Optional[int]:
        """stop sends SIGTERM and waits (then SIGKILL). Returns the exit status, None when killed."""
        if self.proc is None:
            return None
        p, self.proc = self.proc, None
        if p.poll() is None:
            os.kill(p.pid, signal.SIGTERM)
            try:
                return p.wait(STOP_S)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(5)
                return None
        return p.returncode

    def kill9(self) -> None:
        """kill9 kills the broker at once and reaps it."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        self.proc = None

    def remove(self) -> None:
        """remove stops the broker if it runs and deletes its directory."""
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def client(self, **kw: Any) -> sluice.Client:
        """client connects a sluice.Client to this broker."""
        kw.setdefault("timeout_ms", 5000)
        return sluice.Client(self.endpoint, **kw)

    def cli(self, *args: str, check: bool = True, input: Optional[bytes] = None,
            extra_global: Sequence[str] = ()) -> subprocess.CompletedProcess:
        """cli runs ``sluice -b ENDPOINT ARGS...`` and returns what it did."""
        p = subprocess.run([bin_path("sluice"), "-b", self.endpoint, *extra_global, *args], input=input,
                           capture_output=True, timeout=30)
        if check and p.returncode != 0:
            pytest.fail(f"sluice {' '.join(args)}: exit {p.returncode}: {p.stderr.decode(errors='replace')}")
        return p

    def cli_json(self, *args: str) -> Any:
        """cli_json runs ``sluice ... --json`` and parses what it prints."""
        return json.loads(self.cli(*args, "--json").stdout.decode())


@pytest.fixture
def broker_factory() -> Any:
    """broker_factory starts brokers with extra arguments; all stop when the test ends."""
    made: List[Broker] = []

    def make(*extra: str, env: Optional[Dict[str, str]] = None, start: bool = True) -> Broker:
        b = Broker(extra, env=env)
        made.append(b)
        return b.start() if start else b

    yield make
    for b in made:
        b.remove()


@pytest.fixture
def broker(broker_factory: Callable[..., Broker]) -> Broker:
    """broker is a fresh broker with the defaults, for one test."""
    return broker_factory()


@pytest.fixture
def client(broker: Broker) -> Any:
    """client is a Client on the test's broker."""
    with broker.client() as c:
        yield c


def wait_for(what: str, cond: Callable[[], Any], timeout_s: float = 10.0, every_s: float = 0.02) -> Any:
    """wait_for polls cond until it returns something true, or fails the test after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(every_s)


def level_row(c: sluice.Client, level: str) -> Dict[str, Any]:
    """level_row is one level's row of stats()."""
    return next(r for r in c.stats()["levels"] if r["name"] == level)


# figures that move with the clock between two reads, and how far they may
VOLATILE: Dict[str, float] = {
    "uptime_ms": 5000,
    "oldest_ms": 5000,
    "age_ms": 5000,
    "tokens_milli": 20000,
    "eta_ms": 5000,
    "rate_per_s": 50.0,
    "paused_ms": 5000,
    "throttled_ms": 5000,
    "lease_left_ms": 5000,
    "recommended": 64,  # a pool's size autoscaling would choose, computed again as the backlog moves
}


def same(py: Any, cli: Any, where: str = "$", key: str = "") -> None:
    """same asserts that py is what the CLI printed: the same keys in the same order, the same types and values.

    Only the figures in VOLATILE, which move with the clock between two
    reads, may differ, within their bound.
    """
    assert type(py) is type(cli), f"{where}: {type(py).__name__} here, {type(cli).__name__} from the CLI"
    if isinstance(py, dict):
        assert list(py) == list(cli), f"{where}: keys {list(py)} here, {list(cli)} from the CLI"
        for k in py:
            same(py[k], cli[k], f"{where}.{k}", k)
    elif isinstance(py, list):
        assert len(py) == len(cli), f"{where}: {len(py)} rows here, {len(cli)} from the CLI"
        for i, (a, b) in enumerate(zip(py, cli)):
            same(a, b, f"{where}[{i}]", key)
    elif key in VOLATILE and isinstance(py, (int, float)):
        assert abs(py - cli) <= VOLATILE[key], f"{where}: {py} here, {cli} from the CLI"
    else:
        assert py == cli, f"{where}: {py!r} here, {cli!r} from the CLI"
