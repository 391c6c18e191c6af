"""sluice.aio: the same client for asyncio; the blocking calls run in a thread.

Each :class:`Client` and each :class:`Consumer` here owns one thread of its
own, on which every call on its connection runs, one after another: a
libsluice client is used by one thread at a time, and the event loop never
blocks. Calls on one object are therefore serialised; open several clients
for parallel publishing::

    async with sluice.aio.Client("ipc:///run/sluice.sock") as c:
        id = await c.send(b"job", level="high")
        async with c.consume("high", credit=8) as consumer:
            async for d in consumer:
                await d.ack()

Every admin call of :class:`sluice.Client` is here too, as a coroutine with
the same arguments and result (``await c.level_list()``).
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any, AsyncIterator, Callable, List, Optional, Sequence, TypeVar, Union

from . import client as _client
from .client import DEFAULT_ENDPOINT, KeyArg

T = TypeVar("T")
Level = Union[int, str]

_ADMIN = (
    "stats", "level_list", "level_pause", "level_resume", "level_set", "sink_show", "sink_set", "sink_resume",
    "pool_list", "pool_resize", "pool_pause", "pool_resume", "pool_delete", "pool_autoscale", "tag_list",
    "tag_set", "tag_pause", "tag_resume", "explain", "dead_list", "dead_peek", "dead_requeue", "dead_purge",
    "peek", "delete", "purge", "move", "backup", "backup_status", "settings_export", "web_login", "levels", "flush",
    "ha_status", "ha_switchover", "ha_recover",
)


class _Thread:
    """_Thread runs one object's blocking calls on a thread of its own."""

    def __init__(self, name: str) -> None:
        self._ex = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    async def _run(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._ex, functools.partial(fn, *args, **kw))

    def _shutdown(self) -> None:
        self._ex.shutdown(wait=False)


class Client(_Thread):
    """Client is :class:`sluice.Client` for asyncio (the same arguments).

    Create it with ``await sluice.aio.Client.connect(...)`` or use it as
    ``async with sluice.aio.Client(...) as c``; the connection is made on the
    client's thread.
    """

    def __init__(self, endpoint: str = DEFAULT_ENDPOINT, *, timeout_ms: int = 5000, client_key: KeyArg = None,
                 server_key: Optional[str] = None, heartbeat_ms: int = 0) -> None:
        super().__init__("sluice-aio")
        self.endpoint = endpoint
        self._args = dict(timeout_ms=timeout_ms, client_key=client_key, server_key=server_key,
                          heartbeat_ms=heartbeat_ms)
        self._c: Optional[_client.Client] = None

    @classmethod
    async def connect(cls, endpoint: str = DEFAULT_ENDPOINT, **options: Any) -> "Client":
        """connect makes a Client and its connection."""
        c = cls(endpoint, **options)
        await c._open()
        return c

    async def _open(self) -> None:
        if self._c is None:
            self._c = await self._run(_client.Client, self.endpoint, **self._args)

    async def __aenter__(self) -> "Client":
        await self._open()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def _sync(self) -> _client.Client:
        if self._c is None:
            raise _client.InvalidState("the client is not connected: await Client.connect() or use async with")
        return self._c

    async def close(self) -> None:
        """close ends the connection and the client's thread."""
        if self._c is not None:
            await self._run(self._c.close)
        self._shutdown()

    async def send(self, body: _client.Body, **options: Any) -> int:
        """send is :meth:`sluice.Client.send`, awaited."""
        return await self._run(self._sync().send, body, **options)

    async def send_many(self, bodies: Sequence[_client.Body], **options: Any) -> List[int]:
        """send_many is :meth:`sluice.Client.send_many`, awaited (bodies are taken as a list first)."""
        return await self._run(self._sync().send_many, list(bodies), **options)

    def consume(self, levels: Union[None, Level, Sequence[Level]] = None, *, pool: str = "default",
                credit: int = 1, limit: int = 0) -> "Consumer":
        """consume returns a Consumer; ``async with`` (or ``await consumer.open()``) subscribes it."""
        return Consumer(self, levels, pool=pool, credit=credit, limit=limit)

    def __getattr__(self, name: str) -> Any:
        if name not in _ADMIN:
            raise AttributeError(name)

        async def call(*args: Any, **kw: Any) -> Any:
            return await self._run(getattr(self._sync(), name), *args, **kw)

        call.__name__ = name
        call.__doc__ = getattr(_client.Client, name).__doc__
        return call


class Delivery:
    """Delivery is :class:`sluice.Delivery` whose settling calls are awaited."""

    __slots__ = ("_d", "_consumer")

    def __init__(self, consumer: "Consumer", d: _client.Delivery) -> None:
        self._d = d
        self._consumer = consumer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._d, name)

    def __repr__(self) -> str:
        return repr(self._d)

    async def ack(self) -> None:
        """ack: see :meth:`sluice.Delivery.ack`."""
        await self._consumer._run(self._d.ack)

    async def nack(self, delay_ms: int = 0) -> None:
        """nack: see :meth:`sluice.Delivery.nack`."""
        await self._consumer._run(self._d.nack, delay_ms)

    async def touch(self, lease_ms: int = 0) -> None:
        """touch: see :meth:`sluice.Delivery.touch`."""
        await self._consumer._run(self._d.touch, lease_ms)

    async def throttled(self, retry_ms: int = 0, scope: str = "sink") -> None:
        """throttled: see :meth:`sluice.Delivery.throttled`."""
        await self._consumer._run(self._d.throttled, retry_ms, scope)

    async def reject(self, reason: str = "") -> None:
        """reject: see :meth:`sluice.Delivery.reject`."""
        await self._consumer._run(self._d.reject, reason)


class Consumer(_Thread):
    """Consumer is :class:`sluice.Consumer` for asyncio: ``async for d in consumer``."""

    def __init__(self, client: Client, levels: Any, *, pool: str, credit: int, limit: int) -> None:
        super().__init__("sluice-aio-consumer")
        self._client = client
        self._args = (levels,)
        self._kw = dict(pool=pool, credit=credit, limit=limit)
        self._c: Optional[_client.Consumer] = None

    async def open(self) -> "Consumer":
        """open subscribes the consumer (its own connection)."""
        if self._c is None:
            self._c = await self._run(_client.Consumer, self._client._sync(), *self._args, **self._kw)
        return self

    async def __aenter__(self) -> "Consumer":
        return await self.open()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        """close says BYE: the broker takes back every unsettled delivery, uncharged."""
        if self._c is not None:
            self._c.stop()
            await self._run(self._c.close)
        self._shutdown()

    def stop(self) -> None:
        """stop makes ``async for`` end at its next wait."""
        if self._c is not None:
            self._c.stop()

    async def recv(self, timeout_ms: Optional[int] = None) -> Optional[Delivery]:
        """recv waits up to timeout_ms (None: without end) for the next delivery; None when none came."""
        c = self._c or (await self.open())._c
        assert c is not None
        d = await self._run(c.recv, timeout_ms)
        return None if d is None else Delivery(self, d)

    def __aiter__(self) -> AsyncIterator[Delivery]:
        return self._iter()

    async def _iter(self) -> AsyncIterator[Delivery]:
        c = self._c or (await self.open())._c
        assert c is not None
        while not c._stopping and not c.closed:
            d = await self._run(c.recv, _client.WAIT_SLICE_MS)
            if d is not None:
                yield Delivery(self, d)

    async def flush(self, timeout_ms: Optional[int] = None) -> None:
        """flush: see :meth:`sluice.Consumer.flush`."""
        c = self._c
        if c is not None:
            await self._run(c.flush, timeout_ms)
