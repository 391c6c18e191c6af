"""sluice.work: run a function on every message, as ``sluice consume --exec`` runs a command.

The handler gets each :class:`~sluice.Delivery`; how it ends settles the
message:

* it returns: ack (the broker deletes the message);
* it raises :class:`Retry` ``(delay_ms)``: nack, delivered again after
  delay_ms; the attempt counts toward the broker's attempt limit;
* it raises :class:`Throttled` ``(retry_ms, scope="sink")``: returned
  uncharged, and the broker pauses the sink (or, with scope "tag", the
  message's tag) for retry_ms, as exit 75 (76) of ``--exec`` does;
* it raises :class:`Reject` ``(reason)``: a dead letter at once, reason kept;
* it raises anything else: nack at once (logged on the "sluice" logger).

One consumer connection, used by the calling thread alone, receives and
settles; with workers above 1 the handler runs on that many threads, and the
consumer holds at most ``credit`` deliveries (default: workers), so a message
never waits long in this process while another worker could take it.

It runs until SIGTERM or SIGINT (when called from the main thread), ``stop``,
``count`` messages settled or ``idle_exit_ms`` without work. The messages in
hand are then finished and settled; those not started go back to the broker
uncharged when the consumer closes. A second signal stops at once (the
default action).
"""

from __future__ import annotations

import logging
import queue
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

from .client import DEFAULT_ENDPOINT, Client, Consumer, Delivery, KeyArg
from .errors import Error, InvalidArgument

log = logging.getLogger("sluice")

Level = Union[int, str]


class Outcome(Exception):
    """Outcome is raised by a handler to settle its message other than by ack."""


class Retry(Outcome):
    """Retry: nack the message, to be delivered again after delay_ms (the attempt counts)."""

    def __init__(self, delay_ms: int = 0) -> None:
        super().__init__(f"retry after {delay_ms} ms")
        self.delay_ms = delay_ms


class Throttled(Outcome):
    """Throttled: the sink said "too many requests"; return the message uncharged.

    scope "sink" pauses every delivery to the sink for retry_ms (0: the
    broker's default backoff) and lowers its rate; "tag" pauses only the
    message's tag.
    """

    def __init__(self, retry_ms: int = 0, scope: str = "sink") -> None:
        if scope not in ("sink", "tag"):
            raise ValueError(f"scope is 'sink' or 'tag', not {scope!r}")
        super().__init__(f"throttled, retry after {retry_ms} ms ({scope})")
        self.retry_ms = retry_ms
        self.scope = scope


class Reject(Outcome):
    """Reject: the message can never succeed; make it a dead letter at once, with reason."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class WorkResult:
    """WorkResult says how :func:`work` went: messages by outcome, and why it ended.

    reason is "signal", "stopped", "count" or "idle".
    """

    acked: int = 0
    nacked: int = 0
    throttled: int = 0
    rejected: int = 0
    failed: int = 0  # of nacked: the handler raised something other than an Outcome
    reason: str = ""
    signal: Optional[int] = None
    errors: list = field(default_factory=list)  # settlements the broker refused (Error)

    @property
    def settled(self) -> int:
        """settled counts every message settled."""
        return self.acked + self.nacked + self.throttled + self.rejected


class Worker:
    """Worker is :func:`work` as an object, for callers that stop it from elsewhere (``stop``)."""

    def __init__(
        self,
        handler: Callable[[Delivery], Any],
        levels: Union[None, Level, Sequence[Level]] = None,
        workers: int = 1,
        *,
        endpoint: str = DEFAULT_ENDPOINT,
        pool: str = "default",
        credit: Optional[int] = None,
        count: int = 0,
        idle_exit_ms: int = 0,
        timeout_ms: int = 5000,
        client_key: KeyArg = None,
        server_key: Optional[str] = None,
        signals: bool = True,
        client: Optional[Client] = None,
    ) -> None:
        if workers < 1 or workers > 256:
            raise InvalidArgument("workers is 1 to 256")
        self.handler = handler
        self.levels = levels
        self.workers = workers
        self.endpoint = endpoint
        self.pool = pool
        self.credit = credit or workers
        self.count = count
        self.idle_exit_ms = idle_exit_ms
        self.timeout_ms = timeout_ms
        self.client_key = client_key
        self.server_key = server_key
        self.signals = signals
        self.client = client
        self._stop = threading.Event()
        self._signal: Optional[int] = None
        self.result = WorkResult()

    def stop(self) -> None:
        """stop asks the worker to finish the messages in hand and return (any thread)."""
        self._stop.set()

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._signal = signum
        self._stop.set()
        signal.signal(signum, signal.SIG_DFL)  # a second one stops at once

    def _outcome(self, d: Delivery) -> Optional[BaseException]:
        """_outcome runs the handler on d and returns what it raised (None: it returned)."""
        try:
            self.handler(d)
        except Outcome as e:
            return e
        except Exception as e:  # the handler failed: nack, as a nonzero exit of --exec
            log.warning("message %d: the handler raised %r; nacked", d.id, e, exc_info=True)
            return e
        return None

    def _settle(self, d: Delivery, out: Optional[BaseException]) -> None:
        r = self.result
        try:
            if out is None:
                r.acked += 1
                d.ack()
            elif isinstance(out, Retry):
                r.nacked += 1
                d.nack(out.delay_ms)
            elif isinstance(out, Throttled):
                r.throttled += 1
                d.throttled(out.retry_ms, out.scope)
            elif isinstance(out, Reject):
                r.rejected += 1
                d.reject(out.reason)
            else:
                r.nacked += 1
                r.failed += 1
                d.nack()
        except Error as e:  # a refusal of this or an earlier settlement: the broker redelivers
            log.warning("message %d: settling: %s", d.id, e)
            r.errors.append(e)

    def _done(self) -> bool:
        return self._stop.is_set() or (self.count > 0 and self.result.settled >= self.count)

    def run(self) -> WorkResult:
        """run consumes until a signal, stop, count or idle_exit_ms ends it; returns the result."""
        old = {}
        if self.signals and threading.current_thread() is threading.main_thread():
            for s in (signal.SIGTERM, signal.SIGINT):
                old[s] = signal.signal(s, self._on_signal)
        own = None
        try:
            client = self.client
            if client is None:
                client = own = Client(self.endpoint, timeout_ms=self.timeout_ms, client_key=self.client_key,
                                      server_key=self.server_key)
            with client.consume(self.levels, pool=self.pool, credit=self.credit, limit=self.count) as consumer:
                if self.workers == 1:
                    self._run_inline(consumer)
                else:
                    self._run_pool(consumer)
                try:
                    consumer.flush()
                except Error as e:
                    self.result.errors.append(e)
        finally:
            if own is not None:
                own.close()
            for s, h in old.items():
                signal.signal(s, h)
        r = self.result
        r.signal = self._signal
        if not r.reason:
            r.reason = "signal" if self._signal is not None else "stopped"
        return r

    def _idle(self, last: float) -> bool:
        if self.idle_exit_ms and (time.monotonic() - last) * 1000 >= self.idle_exit_ms:
            self.result.reason = "idle"
            return True
        return False

    def _run_inline(self, consumer: Consumer) -> None:
        last = time.monotonic()
        while not self._done():
            d = consumer.recv(100)
            if d is None:
                if self._idle(last):
                    return
                continue
            self._settle(d, self._outcome(d))
            last = time.monotonic()
        if self.count and self.result.settled >= self.count:
            self.result.reason = "count"

    def _run_pool(self, consumer: Consumer) -> None:
        done: "queue.Queue[tuple]" = queue.Queue()
        held = 0
        last = time.monotonic()

        def job(d: Delivery) -> None:
            done.put((d, self._outcome(d)))

        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="sluice-work") as pool:
            try:
                while True:
                    while True:  # settle what finished, on this thread (the consumer's)
                        try:
                            d, out = done.get_nowait()
                        except queue.Empty:
                            break
                        held -= 1
                        self._settle(d, out)
                        last = time.monotonic()
                    if self._done():
                        break
                    if held >= self.workers:
                        try:
                            d, out = done.get(timeout=0.1)
                        except queue.Empty:
                            continue
                        held -= 1
                        self._settle(d, out)
                        last = time.monotonic()
                        continue
                    d = consumer.recv(5 if held else 100)
                    if d is None:
                        if not held and self._idle(last):
                            break
                        continue
                    held += 1
                    pool.submit(job, d)
            finally:
                while held:  # finish the messages in hand
                    d, out = done.get()
                    held -= 1
                    self._settle(d, out)
        if self.count and self.result.settled >= self.count:
            self.result.reason = "count"


def work(
    handler: Callable[[Delivery], Any],
    levels: Union[None, Level, Sequence[Level]] = None,
    workers: int = 1,
    **options: Any,
) -> WorkResult:
    """work consumes messages and settles each by how handler(delivery) ends (see the module).

    Args:
        handler: called with each Delivery; it must not settle it itself.
        levels: the levels to consume (names or numbers); None for all.
        workers: how many messages are handled at once, each on its own thread.
        endpoint, pool, credit, timeout_ms, client_key, server_key: as for
            Client and Client.consume (credit defaults to workers).
        client: a Client whose endpoint and keys to use instead (the
            consumer still has a connection of its own; the client stays open).
        count: stop once this many messages were settled (0: no limit).
        idle_exit_ms: stop once nothing arrived or was in hand this long (0: never).
        signals: catch SIGTERM and SIGINT to stop cleanly (main thread only).

    Returns a WorkResult: the messages by outcome and why it ended.
    """
    return Worker(handler, levels, workers, **options).run()
