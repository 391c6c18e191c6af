"""A consumer's side of a connection: the Consumer, and each Delivery it hands out to settle.

:meth:`Client.consume` opens the Consumer on a connection of its own
(client.py); each Delivery is settled exactly once, by ack, nack, touch
(which only extends), throttled or reject, or returned uncharged when its
consumer closes. Threading as the rest of the client: one thread at a time
per consumer.
"""

from __future__ import annotations

from ctypes import POINTER, byref, c_uint, c_void_p, string_at
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import _lib
from ._lib import SL_SCOPE_SINK, SL_SCOPE_TAG, headers_of
from .client import _EOK, _ETIMEDOUT, WAIT_SLICE_MS, Level, _Conn
from .errors import InvalidArgument, InvalidState

if TYPE_CHECKING:
    from .client import Client

class Delivery:
    """Delivery is one message handed to a consumer, to settle exactly once.

    Attributes:
        id: the message id, the same on every redelivery.
        level: its level's number (``level_name`` gives the name).
        tag: its tag, or None.
        attempt: 1 on the first delivery.
        cost: the units it was published with.
        body: the body, bytes (``text`` decodes it as UTF-8).
        lease_ms: the lease: settle or touch within this.
        token: this delivery's lease token.
        headers: the headers it was published with, name to value in their
            order (a dict; {} when none).
        key: the idempotency key it was published with, or None.
        wait_ms: the broker's time from its publish to this delivery.

    ``ack``, ``nack``, ``throttled`` and ``reject`` end the delivery; ``touch``
    keeps it. Settling is sent without waiting for the broker's answer; a
    refusal (the lease had expired: :class:`Stale`) is raised by the next
    settling call or by ``flush``. Settling a delivery twice, or after its
    consumer was closed (the broker took it back), raises InvalidState.
    """

    __slots__ = ("id", "token", "level", "tag", "attempt", "cost", "body", "lease_ms", "released_ns", "headers",
                 "key", "wait_ms", "_ptr", "_owner")

    def __init__(self, owner: "Consumer", ptr: Any) -> None:
        d = ptr.contents
        self.id: int = d.id
        self.token: int = d.token
        self.level: int = d.level
        self.attempt: int = d.attempt
        self.lease_ms: int = d.lease_ms
        t = d.tag
        self.tag: Optional[str] = t.decode("utf-8", "replace") if t else None
        self.body: bytes = string_at(d.body, d.body_len) if d.body_len else b""
        self.cost: int = d.cost
        self.released_ns: int = d.released_ns
        self.headers: Dict[str, str] = headers_of(d.headers, d.nheaders) if d.nheaders else {}
        k = d.key
        self.key: Optional[str] = k.decode("utf-8", "replace") if k else None
        self.wait_ms: int = d.wait_ms
        self._ptr = ptr
        self._owner = owner

    def __repr__(self) -> str:
        return (f"Delivery(id={self.id}, level={self.level}, tag={self.tag!r}, attempt={self.attempt}, "
                f"cost={self.cost}, body={self.body[:40]!r}{'...' if len(self.body) > 40 else ''})")

    def __del__(self) -> None:
        ptr = getattr(self, "_ptr", None)
        if ptr:
            self._owner._L.sl_delivery_free(byref(ptr))

    @property
    def text(self) -> str:
        """text is the body decoded as UTF-8."""
        return self.body.decode()

    @property
    def level_name(self) -> str:
        """level_name is the name of the message's level."""
        return self._owner._label(self.level)

    @property
    def settled(self) -> bool:
        """settled tells whether the delivery has ended (acked, nacked, returned, rejected or taken back)."""
        return self._ptr is None or self._owner._h is None

    def ack(self) -> None:
        """ack acknowledges the message: the broker deletes it."""
        self._owner._end(self, self._owner._L.sl_ack)

    def nack(self, delay_ms: int = 0) -> None:
        """nack returns the message to the head of its level, to be delivered again after delay_ms.

        The attempt counts toward the broker's attempt limit, past which the
        message becomes a dead letter.
        """
        self._owner._end(self, self._owner._L.sl_nack, delay_ms)

    def touch(self, lease_ms: int = 0) -> None:
        """touch extends the lease to lease_ms from now (0: the broker's default lease)."""
        o = self._owner
        h, ptr = o._live(self)
        o._check(o._L.sl_touch(h, ptr, lease_ms))

    def throttled(self, retry_ms: int = 0, scope: str = "sink") -> None:
        """throttled returns the message as refused by the sink ("too many requests"), uncharged.

        With scope "sink" the broker pauses every delivery to the sink for
        retry_ms (0: its default backoff) and lowers the sink's rate; with
        scope "tag" it pauses only the message's tag.
        """
        if scope not in ("sink", "tag"):
            raise InvalidArgument(f"scope is 'sink' or 'tag', not {scope!r}")
        o = self._owner
        o._end(self, o._L.sl_throttled_scope, retry_ms, SL_SCOPE_TAG if scope == "tag" else SL_SCOPE_SINK)

    def reject(self, reason: str = "") -> None:
        """reject moves the message to its level's dead letters at once, with reason recorded."""
        self._owner._end(self, self._owner._L.sl_reject, reason.encode())


class Consumer(_Conn):
    """Consumer is a subscribed connection: iterate over it for deliveries.

    Made by :meth:`Client.consume`. ``for d in consumer`` waits for each next
    delivery (until :meth:`stop` or :meth:`close`); :meth:`recv` waits for
    one with a timeout. Closing it (or leaving its ``with`` block) returns
    every delivery it holds unsettled to the head of its level at once,
    uncharged. One thread at a time, like a Client.
    """

    def __init__(self, client: Client, levels: Union[None, Level, Sequence[Level]], *, pool: str = "default",
                 credit: int = 1, limit: int = 0) -> None:
        if credit < 1:
            raise InvalidArgument("credit must be at least 1")
        super().__init__(client.endpoint, client._opts)
        self.endpoint = client.endpoint
        self.timeout_ms = client.timeout_ms
        self.pool = pool
        self._stopping = False
        try:
            nums = [self._level(x) for x in _level_list(levels)]
            arr = (c_uint * max(1, len(nums)))(*nums)
            L = self._L
            if limit:
                self._check(L.sl_set_limit(self._handle(), limit))
            self._check(L.sl_subscribe(self._handle(), None if pool == "default" else pool.encode(),
                                       arr if nums else None, len(nums), credit))
            self.levels()  # cached for level_name, which outlives the connection
        except BaseException:
            self._close()
            raise
        self.levels_subscribed = nums
        self._recv = self._L.sl_recv
        self._PD = POINTER(_lib.Delivery)

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __iter__(self) -> Iterator[Delivery]:
        return self

    def __next__(self) -> Delivery:
        while not self._stopping and self._h is not None:
            d = self.recv(WAIT_SLICE_MS)
            if d is not None:
                return d
        raise StopIteration

    def __repr__(self) -> str:
        return f"sluice.Consumer({self.endpoint!r}, pool={self.pool!r}{'' if self._h is not None else ', closed'})"

    def recv(self, timeout_ms: Optional[int] = None) -> Optional[Delivery]:
        """recv waits up to timeout_ms (None: without end) for the next delivery.

        Returns the Delivery, or None when none came in time (or after stop()).
        """
        h = self._handle()
        ptr = self._PD()
        ref = byref(ptr)
        left = -1 if timeout_ms is None else timeout_ms
        while True:
            wait = WAIT_SLICE_MS if left < 0 or left > WAIT_SLICE_MS else left
            rc = self._recv(h, wait, ref)
            if rc == _EOK:
                return Delivery(self, ptr)
            if rc != _ETIMEDOUT:
                raise self._error(rc)
            if left >= 0:
                left -= wait
                if left <= 0:
                    return None
            if self._stopping:
                return None

    def stop(self) -> None:
        """stop makes iteration end at its next wait (safe from a signal handler or another thread)."""
        self._stopping = True

    def close(self) -> None:
        """close says BYE: the broker takes back every unsettled delivery, uncharged. Idempotent.

        It first waits (up to timeout_ms) for the broker's answers to the
        settlements sent, so that they are applied before the BYE; a refusal
        found then is not raised (call flush for that): its message is
        delivered again.
        """
        h = self._h
        if h is not None:
            self._L.sl_flush(h, self.timeout_ms)
        self._close()

    @property
    def closed(self) -> bool:
        """closed tells whether close was called."""
        return self._h is None

    def flush(self, timeout_ms: Optional[int] = None) -> None:
        """flush waits until the broker has answered every settlement sent.

        Raises the first refused settlement not yet reported (Stale, Shutdown,
        ...), or Timeout when answers are still missing.
        """
        self._check(self._L.sl_flush(self._handle(), self.timeout_ms if timeout_ms is None else timeout_ms))

    @property
    def refused(self) -> int:
        """refused counts the settlements the broker refused on this consumer."""
        return int(self._L.sl_refused(self._h)) if self._h is not None else 0

    def share(self) -> int:
        """share is the part of its pool's size the broker last gave this consumer (0: not told)."""
        return int(self._L.sl_share(self._handle()))

    def set_window(self, credit: int) -> None:
        """set_window changes the credit window (1..100000)."""
        self._check(self._L.sl_set_window(self._handle(), credit))

    def _live(self, d: Delivery) -> Tuple[c_void_p, Any]:
        if d._ptr is None:
            raise InvalidState(f"message {d.id}: this delivery was already settled")
        h = self._h
        if h is None:
            raise InvalidState(f"message {d.id}: its consumer is closed, and the broker took the delivery back")
        return h, d._ptr

    def _end(self, d: Delivery, fn: Any, *args: Any) -> None:
        """_end settles d with fn, then frees it: it ends whatever the outcome."""
        h, ptr = self._live(d)
        rc = fn(h, ptr, *args)
        d._ptr = None
        self._L.sl_delivery_free(byref(ptr))
        if rc:
            raise self._error(rc)


def _level_list(levels: Union[None, Level, Sequence[Level]]) -> List[Level]:
    if levels is None:
        return []
    if isinstance(levels, str):
        return [x.strip() for x in levels.split(",") if x.strip()]
    if isinstance(levels, int):
        return [levels]
    return list(levels)
