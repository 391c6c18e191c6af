"""sluice.aio: the same calls as coroutines, the blocking work on a thread per connection."""

from __future__ import annotations

import asyncio

import pytest

import sluice
import sluice.aio


def test_publish_consume_and_administer_from_asyncio(broker):
    async def main() -> None:
        async with sluice.aio.Client(broker.endpoint) as c:
            first = await c.send(b"async", level="high", tag="t")
            rest = await c.send_many([b"a", b"b"], level="low")
            assert (await c.level_list())["levels"][0]["depth"] == 1
            assert await c.levels() == ["high", "normal", "low"]
            got = []
            async with c.consume(credit=2) as k:
                async for d in k:
                    got.append((d.id, d.body, d.tag))
                    await d.ack()
                    if len(got) == 3:
                        k.stop()
                assert await k.recv(100) is None
            assert got == [(first, b"async", "t"), (rest[0], b"a", None), (rest[1], b"b", None)]
            assert (await c.stats())["levels"][2]["acked"] == 2
            with pytest.raises(sluice.NoLevel):
                await c.send(b"x", level="nope")

    asyncio.run(asyncio.wait_for(main(), 30))


def test_many_clients_publish_side_by_side(broker):
    async def one(i: int) -> list:
        c = await sluice.aio.Client.connect(broker.endpoint)
        try:
            return await c.send_many([f"{i}-{n}" for n in range(50)])
        finally:
            await c.close()

    async def main() -> None:
        ids = await asyncio.gather(*(one(i) for i in range(4)))
        assert len({x for batch in ids for x in batch}) == 200

    asyncio.run(asyncio.wait_for(main(), 30))


def test_every_admin_call_is_a_coroutine_here_too():
    from sluice._admin import AdminMixin
    from sluice._backup import BackupMixin
    from sluice._msgs import MsgsMixin

    calls = {n for m in (AdminMixin, MsgsMixin, BackupMixin) for n in vars(m) if not n.startswith("_")}
    assert {"sink_resume", "peek", "delete", "purge", "move", "backup", "backup_status", "settings_export"} <= calls
    assert sorted(calls - set(sluice.aio._ADMIN)) == []
    for name in sluice.aio._ADMIN:
        assert callable(getattr(sluice.Client, name)), name


def test_waiting_messages_from_asyncio(broker):
    async def main() -> None:
        async with sluice.aio.Client(broker.endpoint) as c:
            ids = await c.send_many([b"a", b"b"], level="low")
            assert [r["id"] for r in await c.peek("low")] == ids
            assert await c.move("low", "high") == {"moved": 2, "in_flight_left": 0}
            assert await c.delete(ids[0]) == {"deleted": ids[0], "level": "high"}
            assert (await c.backup_status())["state"] == "none"
            assert "[sink]" in await c.settings_export()

    asyncio.run(asyncio.wait_for(main(), 30))
