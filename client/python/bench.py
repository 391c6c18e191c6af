#!/usr/bin/python3
"""bench.py - the Python client's rows of `make bench`, each against its C row.

Starts its own sluiced (defaults, an ipc:// socket in a fresh directory under
/tmp, readiness by --ready-fd, stopped by PID) and measures, with 100-byte
bodies as sluice-bench uses:

  send, 1 x 1        Client.send in a loop: one publish outstanding, each
                     confirmed durable before the next.
  send_many, 1 x 100 Client.send_many with a window of 100 outstanding.
  consume, credit 64 one Consumer of credit 64 acking every delivery, over a
                     backlog of 100,000 (20,000 with --quick), until the
                     broker reports the queue empty.

Each row is printed beside the C figure of the same shape and the issue's
target, a fraction of it: send >= 0.8 x `confirmed enqueue, 1 producer, 1
outstanding`, send_many >= 0.5 x `confirmed enqueue, 1 producer, 100
outstanding`, consume >= 0.3 x `drain, 1 consumer, credit 64, ack each`.

The C figures come from the table sluice-bench printed earlier in the same
`make bench` run (--c-table FILE), or, without it, from running
`sluice-bench -b` (every broker row, --quick) against a broker of its own
first. A missed target is a result (MISS), not an error: the exit status is
0 when every row ran, 1 on an error.

usage: bench.py [--bin DIR] [--lib PATH] [--seconds S] [--quick] [--c-table FILE]
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BODY = bytes((i * 7 + 13) & 0xFF for i in range(100))

# row label: (the C row it is held against, the fraction of it to reach)
TARGETS: Dict[str, Tuple[str, float]] = {
    "python send, 1 producer, 1 outstanding": ("confirmed enqueue, 1 producer, 1 outstanding", 0.8),
    "python send_many, 1 producer, 100 outstanding": ("confirmed enqueue, 1 producer, 100 outstanding", 0.5),
    "python consume, 1 consumer, credit 64, ack each": ("drain, 1 consumer, credit 64, ack each", 0.3),
}
C_CONTEXT = "drain, 4 consumers, credit 1, ack each"  # shown beside, for reference


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


def c_rows(text: str) -> Dict[str, float]:
    """c_rows reads sluice-bench's table: scenario -> result."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(" | ")]
        if len(cells) == 5:
            try:
                rows[cells[0]] = float(cells[1])
            except ValueError:
                pass
    return rows


def run_c_bench(bench: str, sluiced: str, seconds: int, quick: bool) -> str:
    """run_c_bench runs sluice-bench -b against a broker of its own and returns its table."""
    b = Broker(sluiced)
    try:
        args = [bench, "-b", b.endpoint, "--seconds", str(seconds)] + (["--quick"] if quick else [])
        say("the C rows: " + " ".join(args[:1] + args[3:]))
        p = subprocess.run(args, stdout=subprocess.PIPE, timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(f"sluice-bench exited {p.returncode}")
        return p.stdout.decode()
    finally:
        b.stop()


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


def queued(c) -> Tuple[int, int, int]:
    levels = c.stats()["levels"]
    return (sum(r["depth"] for r in levels), sum(r["inflight"] for r in levels), sum(r["delayed"] for r in levels))


def row_consume(c, backlog: int) -> float:
    ready = queued(c)[0]
    if ready < backlog:
        say(f"top-up: {ready} queued, publishing {backlog - ready} more")
        c.send_many([BODY] * (backlog - ready), window=100)
        ready = backlog
    say(f"consume, credit 64, ack each ({ready} messages)")
    got = 0
    start = time.monotonic()
    with c.consume(credit=64) as k:
        recv = k.recv
        while got < ready:
            d = recv(5000)
            if d is None:
                raise RuntimeError(f"no delivery for 5 s after {got} of {ready}")
            d.ack()
            got += 1
        elapsed = time.monotonic() - start
        k.flush()
    left = queued(c)
    if any(left):
        raise RuntimeError(f"queue not empty after the drain: {left[0]} ready, {left[1]} in flight, "
                           f"{left[2]} delayed")
    return got / elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description="The Python client's bench rows against their C rows.")
    ap.add_argument("--bin", default=str(ROOT / "bin"), help="where sluiced and sluice-bench are (bin)")
    ap.add_argument("--lib", default=str(ROOT / "build/rel/libsluice.so.1"), help="libsluice.so.1 to load")
    ap.add_argument("--seconds", type=int, default=3, help="length of each timed row (3)")
    ap.add_argument("--quick", action="store_true", help="1 s rows and a 20,000-message drain")
    ap.add_argument("--c-table", help="a table sluice-bench printed in this run: take the C rows from it")
    a = ap.parse_args()
    os.environ.setdefault("SLUICE_LIB", a.lib)
    sys.path.insert(0, str(HERE))
    import sluice

    seconds = 1 if a.quick else a.seconds
    backlog = 20000 if a.quick else 100000
    sluiced = str(Path(a.bin) / "sluiced")
    try:
        if a.c_table:
            c_text = Path(a.c_table).read_text()
        else:
            c_text = run_c_bench(str(Path(a.bin) / "sluice-bench"), sluiced, seconds, a.quick)
        c = c_rows(c_text)
        missing = [src for src, _ in TARGETS.values() if src not in c]
        if missing:
            raise RuntimeError("the C table lacks the rows: " + "; ".join(missing))
        started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        b = Broker(sluiced)
        try:
            with sluice.Client(b.endpoint) as client:
                say(f"send, 1 x 1 ({seconds} s)")
                got = {"python send, 1 producer, 1 outstanding": row_send(client, seconds)}
                say(f"send_many, window 100 ({seconds} s)")
                got["python send_many, 1 producer, 100 outstanding"] = row_send_many(client, seconds)
                got["python consume, 1 consumer, credit 64, ack each"] = row_consume(client, backlog)
        finally:
            b.stop()
    except (RuntimeError, OSError, sluice.Error) as e:
        say(f"error: {e}")
        return 1

    rows: List[Tuple[str, str, str, str, str]] = []
    for label, value in got.items():
        src, frac = TARGETS[label]
        target = frac * c[src]
        rows.append((label, f"{value:.0f}", "msgs/s", f">= {target:.0f} ({frac} x C {c[src]:.0f})",
                     "yes" if value >= target else "MISS"))
    if C_CONTEXT in c:
        rows.append((f"(C {C_CONTEXT})", f"{c[C_CONTEXT]:.0f}", "msgs/s", "-", "-"))
    head = ("scenario", "result", "unit", "target", "ok?")
    width = [max(len(r[k]) for r in [head, *rows]) for k in range(5)]
    print(f"# bench.py, the Python client (ctypes over libsluice.so.1), {started}, nproc {os.cpu_count()}, "
          f"{len(BODY)}-byte bodies, {seconds} s per timed row")
    for r in [head, None, *rows]:
        if r is None:
            print("-+-".join("-" * w for w in width))
            continue
        print(" | ".join(r[k].rjust(width[k]) if k == 1 else r[k].ljust(width[k]) for k in range(4)) + " | " + r[4])
    return 0


if __name__ == "__main__":
    sys.exit(main())
