#!/usr/bin/python3
"""bench.py - the Python client's rows of `make bench`, each against its C row.

Starts its own sluiced (defaults, an ipc:// socket in a fresh directory under
/tmp, readiness by --ready-fd, stopped by PID) and measures, with 100-byte
bodies as sluice-bench uses:

  send, 1 x 1         Client.send in a loop: one publish outstanding, each
                      confirmed durable before the next.
  send_many, 1 x 100  Client.send_many with a window of 100 outstanding.
  consume, credit 64  one Consumer of credit 64 acking every delivery, over a
                      backlog of at least 100,000 (20,000 with --quick): all
                      that is queued, as sluice-bench's drain takes it all.

The C figure of each row is measured on the same broker, turn about with the
Python one, by sluice-bench's own code for that row (bench_c.c, which the
Makefile links with tools/bench's row code and the same libsluice.so.1 into
build/rel/bench-py-c, given as --c-bench): `confirmed enqueue, 1 producer, 1 outstanding`, `...,
100 outstanding`, and the drain with one consumer of credit 64. Each pair
runs --rounds times (3; 1 with --quick), the side that goes first
alternating, and the medians are compared, so that the machine's other work
falls on both alike. The targets: send >= 0.8, send_many >= 0.5 and consume
>= 0.3 times the C figure. A missed target is a result (MISS), not an error:
the exit status is 0 when every row ran, 1 on an error.

usage: bench.py [--bin DIR] [--lib PATH] [--c-bench PATH] [--seconds S] [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BODY = bytes((i * 7 + 13) & 0xFF for i in range(100))

# row: (its label, the C row it is held against, the fraction of it to reach)
ROWS: List[Tuple[str, str, str, float]] = [
    ("send", "python send, 1 producer, 1 outstanding", "confirmed enqueue, 1 producer, 1 outstanding", 0.8),
    ("window", "python send_many, 1 producer, 100 outstanding", "confirmed enqueue, 1 producer, 100 outstanding",
     0.5),
    ("drain", "python consume, 1 consumer, credit 64, ack each", "drain, 1 consumer, credit 64, ack each", 0.3),
]


def say(text: str) -> None:
    print(f"bench.py: {text}", file=sys.stderr, flush=True)


class Broker:
    """Broker is a sluiced of this run, in a directory of its own."""

    def __init__(self, sluiced: str) -> None:
        self.dir = tempfile.mkdtemp(prefix="sluice-pybench-")
        self.endpoint = f"ipc://{self.dir}/s.sock"
        r, w = os.pipe()
        log = open(f"{self.dir}/sluiced.log", "ab")
        self.proc = subprocess.Popen([sluiced, "--data", f"{self.dir}/data", "--listen", self.endpoint,
                                      "--ready-fd", str(w)], pass_fds=(w,), stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=log)
        log.close()
        os.close(w)
        got, deadline = b"", time.monotonic() + 20
        try:
            while b"READY\n" not in got:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([r], [], [], left)[0]:
                    raise RuntimeError("sluiced did not report READY in 20 s")
                chunk = os.read(r, 64)
                if not chunk:
                    raise RuntimeError("sluiced exited before it was ready: " + self.tail())
                got += chunk
        except BaseException:
            self.stop()
            raise
        finally:
            os.close(r)

    def tail(self) -> str:
        try:
            return Path(f"{self.dir}/sluiced.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)


def run_c(exe: str, mode: str, endpoint: str, n: int) -> float:
    """run_c runs one C row and returns its rate."""
    p = subprocess.run([exe, mode, endpoint, str(n)], stdout=subprocess.PIPE, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"bench_c {mode} exited {p.returncode}")
    return float(p.stdout.decode().strip())


def row_send(c, seconds: float) -> float:
    n, start = 0, time.monotonic()
    end = start + seconds
    while time.monotonic() < end:
        c.send(BODY)
        n += 1
    return n / (time.monotonic() - start)


def row_send_many(c, seconds: float) -> float:
    def bodies(end: float) -> Iterator[bytes]:
        check = 0
        while True:
            check += 1
            if check % 256 == 0 and time.monotonic() >= end:
                return
            yield BODY

    start = time.monotonic()
    ids = c.send_many(bodies(start + seconds), window=100)
    return len(ids) / (time.monotonic() - start)


def topup(c, backlog: int) -> int:
    """topup publishes until at least backlog messages are ready; returns how many are.

    A drain takes them all, as sluice-bench's does (it ends when no delivery comes).
    """
    ready = sum(r["depth"] for r in c.stats()["levels"])
    if ready < backlog:
        say(f"top-up: {ready} queued, publishing {backlog - ready} more")
        c.send_many([BODY] * (backlog - ready), window=100)
        ready = backlog
    return ready


def row_consume(c, backlog: int) -> float:
    got = 0
    with c.consume(credit=64) as k:
        recv = k.recv
        start = time.monotonic()
        while got < backlog:
            d = recv(5000)
            if d is None:
                raise RuntimeError(f"no delivery for 5 s after {got} of {backlog}")
            d.ack()
            got += 1
        elapsed = time.monotonic() - start
        k.flush()
    return got / elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description="The Python client's bench rows against their C rows.")
    ap.add_argument("--bin", default=str(ROOT / "bin"), help="where sluiced is (bin)")
    ap.add_argument("--lib", default=str(ROOT / "build/rel/libsluice.so.1"), help="libsluice.so.1 to load")
    ap.add_argument("--c-bench", default=str(ROOT / "build/rel/bench-py-c"),
                    help="the C side of each row (make builds build/rel/bench-py-c)")
    ap.add_argument("--seconds", type=int, default=3, help="length of each timed row (3)")
    ap.add_argument("--rounds", type=int, default=0, help="pairs of C and Python runs per row (3)")
    ap.add_argument("--quick", action="store_true", help="1 s rows, one round, a 20,000-message drain")
    a = ap.parse_args()
    os.environ["SLUICE_LIB"] = os.path.abspath(a.lib)
    sys.path.insert(0, str(HERE))
    import sluice

    seconds = 1 if a.quick else a.seconds
    rounds = a.rounds or (1 if a.quick else 3)
    backlog = 20000 if a.quick else 100000
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    got: Dict[str, Dict[str, List[float]]] = {mode: {"c": [], "py": []} for mode, *_ in ROWS}
    exe = os.path.abspath(a.c_bench)
    try:
        if not os.access(exe, os.X_OK):
            raise RuntimeError(f"no C side at {exe}: run make (it builds build/rel/bench-py-c)")
        b = Broker(str(Path(a.bin) / "sluiced"))
        try:
            with sluice.Client(b.endpoint) as client:
                for r in range(rounds):
                    for mode, label, *_ in ROWS:
                        for side in (("c", "py") if r % 2 == 0 else ("py", "c")):
                            ready = topup(client, backlog) if mode == "drain" else 0
                            say(f"round {r + 1}/{rounds}: {label if side == 'py' else 'C ' + mode}"
                                + (f" ({ready} messages)" if ready else ""))
                            if side == "c":
                                v = run_c(exe, mode, b.endpoint, ready if mode == "drain" else seconds)
                            elif mode == "send":
                                v = row_send(client, seconds)
                            elif mode == "window":
                                v = row_send_many(client, seconds)
                            else:
                                v = row_consume(client, ready)
                            got[mode][side].append(v)
        finally:
            b.stop()
    except (RuntimeError, OSError, subprocess.SubprocessError, sluice.Error) as e:
        say(f"error: {e}")
        return 1

    rows: List[Tuple[str, str, str, str, str]] = []
    for mode, label, c_label, frac in ROWS:
        py, c = statistics.median(got[mode]["py"]), statistics.median(got[mode]["c"])
        rows.append((f"(C) {c_label}", f"{c:.0f}", "msgs/s", "-", "-"))
        rows.append((label, f"{py:.0f}", "msgs/s", f">= {frac * c:.0f} ({frac} x C)",
                     "yes" if py >= frac * c else "MISS"))
    head = ("scenario", "result", "unit", "target", "ok?")
    width = [max(len(r[k]) for r in [head, *rows]) for k in range(5)]
    print(f"# bench.py, the Python client (ctypes over libsluice.so.1) against the same rows in C, {started}, "
          f"nproc {os.cpu_count()}, {len(BODY)}-byte bodies, {seconds} s per timed row, medians of {rounds} "
          f"round{'s' if rounds > 1 else ''}")
    for row in [head, None, *rows]:
        if row is None:
            print("-+-".join("-" * w for w in width))
            continue
        print(" | ".join(row[k].rjust(width[k]) if k == 1 else row[k].ljust(width[k]) for k in range(4)) + " | "
              + row[4])
    return 0


if __name__ == "__main__":
    sys.exit(main())
