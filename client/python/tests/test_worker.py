"""sluice.work: outcomes, the ways it ends, threads, and SIGTERM with messages in hand."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import sluice
from conftest import level_row, wait_for


def test_each_outcome_settles_as_it_says(client, broker):
    client.level_set("low", fair=True)
    ids = {name: client.send(name, level="low", tag=name) for name in ("ok", "retry", "throttle", "reject", "crash")}
    seen: dict = {}

    def handler(d: sluice.Delivery) -> None:
        seen.setdefault(d.text, []).append(d.attempt)
        if d.text == "retry" and d.attempt == 1:
            raise sluice.Retry(50)
        if d.text == "throttle" and d.attempt == 1 and len(seen["throttle"]) == 1:
            raise sluice.Throttled(50, scope="tag")
        if d.text == "reject":
            raise sluice.Reject("malformed")
        if d.text == "crash" and d.attempt == 1:
            raise ValueError("a bug in the handler")

    r = sluice.work(handler, "low", endpoint=broker.endpoint, idle_exit_ms=1500)
    assert r.reason == "idle"
    assert seen["ok"] == [1] and seen["retry"] == [1, 2] and seen["crash"] == [1, 2] and seen["reject"] == [1]
    assert seen["throttle"] == [1, 1]  # returned uncharged
    assert (r.acked, r.nacked, r.throttled, r.rejected, r.failed) == (4, 2, 1, 1, 1)
    assert r.settled == 8 and not r.errors
    dead = client.dead_list("low")
    assert [d["id"] for d in dead] == [ids["reject"]] and dead[0]["reason"].endswith("malformed")
    assert level_row(client, "low")["depth"] == 0


def test_count_ends_it_after_that_many(client, broker):
    client.send_many([b"m"] * 10)
    r = sluice.work(lambda d: None, endpoint=broker.endpoint, count=4)
    assert (r.reason, r.acked) == ("count", 4)
    assert level_row(client, "normal")["depth"] == 6
    r = sluice.work(lambda d: None, client=client, count=2)  # the client's endpoint; it stays open
    assert (r.reason, r.acked, level_row(client, "normal")["depth"]) == ("count", 2, 4)


def test_stop_from_another_thread_and_workers_run_at_once(client, broker):
    client.send_many([b"m"] * 40)
    running, most, lock = [0], [0], threading.Lock()

    def handler(d: sluice.Delivery) -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1

    w = sluice.Worker(handler, workers=4, endpoint=broker.endpoint)
    t = threading.Thread(target=lambda: w.run())
    t.start()
    wait_for("forty acks", lambda: level_row(client, "normal")["acked"] == 40)
    w.stop()
    t.join(10)
    assert not t.is_alive()
    assert (w.result.reason, w.result.acked, level_row(client, "normal")["inflight"]) == ("stopped", 40, 0)
    assert most[0] > 1


def test_sigterm_finishes_the_messages_in_hand_and_gives_back_the_rest(client, broker, tmp_path):
    ids = client.send_many([f"job {i}" for i in range(10)])
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(__import__('pathlib').Path(sluice.__file__).parents[1])!r})
        import sluice

        def say(text):  # one write per line: the two workers' lines never mix
            os.write(1, (text + "\\n").encode())

        def handler(d):
            say(f"start {{d.id}}")
            time.sleep(1.0)
            say(f"done {{d.id}}")

        r = sluice.work(handler, workers=2, credit=4, endpoint={broker.endpoint!r})
        say(f"result {{r.reason}} {{r.acked}} {{r.signal}}")
    """))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ))
    assert p.stdout is not None
    started = []
    while len(started) < 2:
        line = p.stdout.readline().decode()
        assert line, p.stderr.read().decode() if p.stderr else "the worker died"
        if line.startswith("start"):
            started.append(int(line.split()[1]))
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    lines = out.decode().split("\n")
    assert p.returncode == 0, err.decode()
    assert sorted(int(x.split()[1]) for x in lines if x.startswith("done")) == sorted(started), out.decode()
    assert f"result signal 2 {int(signal.SIGTERM)}" in lines
    row = level_row(client, "normal")
    assert (row["acked"], row["depth"], row["inflight"]) == (2, 8, 0)
    assert sorted(started) == ids[:2]
    with client.consume(credit=8) as k:  # the rest came back uncharged
        back = [k.recv(5000) for _ in range(8)]
        assert all(d is not None and d.attempt == 1 for d in back)
