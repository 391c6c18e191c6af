"""The calls of Client on stored messages: where one is, dead letters, a level's waiting messages.

Each listing returns what the command line's ``--json`` prints (tools/cli:
cli_dead.c for ``sluice dead list|requeue|purge``, cli_msgs.c for ``sluice
peek|delete|purge|move``): the same keys, in the same order, with the same
values, so the test suite compares the two on one broker. A body's preview
is the text the CLI shows, decoded from its JSON: :func:`preview_text` is
cli_text_safe (cli_text.c) byte for byte.

Requeue, purge and move work in chunks, as the CLI does: one call of the
library changes at most a thousand messages in one transaction of the
broker, and the series goes on until the level's end, the limit, or as many
as the level held when it started (so that a level a producer keeps filling
ends). Cut short (an exception, Ctrl-C), a series is run again: nothing is
done twice, nothing is lost. Costs: one round trip per page or chunk, and
one STATS for the bound.
"""

from __future__ import annotations

import time
from ctypes import byref, c_uint, c_uint64, sizeof, string_at
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from . import _lib
from ._lib import (SL_DEAD_PAGE, SL_MSG_PAGE, SL_SAME_LEVEL, DeadLetter, DeadMessage, ExplainInfo, MsgMore, Stats,
                   Waiting, headers_of)
from ._windows import limit as _limit
from .errors import Error, InvalidArgument

if TYPE_CHECKING:  # the mixin's host is client._Conn
    from ctypes import c_void_p

Level = Union[int, str]
Json = Dict[str, Any]

_s = _lib.text

# the controls cli_text_safe writes short; every other byte it escapes is \xHH
_SHORT = {0x0A: "\\n", 0x09: "\\t", 0x0D: "\\r", 0x1B: "\\e"}


def _when(ms: int) -> str:
    """_when writes ms since the epoch as 2026-11-25T02:00:00.123Z (cli_dead.c's when_format)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03uZ" % (ms % 1000)


def _utf8_char(p: bytes, i: int) -> Tuple[int, int]:
    """_utf8_char reads the valid UTF-8 character at p[i]: (its length, its code point), or (0, 0)."""
    c = p[i]
    if 0xC2 <= c <= 0xDF:
        n, cp = 2, c & 0x1F
    elif 0xE0 <= c <= 0xEF:
        n, cp = 3, c & 0x0F
    elif 0xF0 <= c <= 0xF4:
        n, cp = 4, c & 0x07
    else:
        return 0, 0
    if i + n > len(p):
        return 0, 0
    for k in range(1, n):
        if p[i + k] & 0xC0 != 0x80:
            return 0, 0
        cp = cp << 6 | (p[i + k] & 0x3F)
    if (n == 3 and cp < 0x800) or (n == 4 and cp < 0x10000) or cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
        return 0, 0
    return n, cp


def preview_text(p: bytes) -> str:
    """preview_text shows a body's first bytes as ``--json`` does (after JSON decoding).

    Printable ASCII and whole, valid UTF-8 characters stay; newline, tab,
    carriage return and escape read ``\\n``, ``\\t``, ``\\r``, ``\\e``; any
    other control byte, DEL, a C1 control (U+0080..U+009F), a bidirectional
    override (U+202A..U+202E, U+2066..U+2069) and every byte of invalid UTF-8
    read ``\\xHH``, one per byte. A backslash stays as it is.
    """
    out: List[str] = []
    i = 0
    while i < len(p):
        c = p[i]
        if 0x20 <= c < 0x7F:
            out.append(chr(c))
            i += 1
            continue
        n = 1
        if c >= 0x80:
            k, cp = _utf8_char(p, i)
            control = cp < 0xA0 or 0x202A <= cp <= 0x202E or 0x2066 <= cp <= 0x2069
            if k and not control:
                out.append(p[i:i + k].decode("utf-8"))
                i += k
                continue
            n = k or 1  # a control character: each of its bytes escaped
        short = _SHORT.get(c)
        out.append(short if short else "".join("\\x%02x" % b for b in p[i:i + n]))
        i += n
    return "".join(out)


def _count(value: Optional[int], what: str) -> int:
    """_count reads a limit: None is 0 (none), else a whole number above 0."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(f"{what} must be a whole number above 0 (or None for all)")
    return value


def _tag(tag: Optional[str]) -> Optional[bytes]:
    if tag is None:
        return None
    b = tag.encode()
    if len(b) > 255:
        raise InvalidArgument("a tag is at most 255 bytes")
    return b


class MsgsMixin:
    """MsgsMixin holds Client's calls on stored messages (a part of Client; see client.py)."""

    if TYPE_CHECKING:  # provided by client._Conn
        _L: Any

        def _handle(self) -> c_void_p: ...
        def _check(self, rc: int) -> None: ...
        def _error(self, rc: int) -> Error: ...
        def _level(self, level: Level) -> int: ...
        def _label(self, level: int) -> str: ...
        def levels(self) -> List[str]: ...

    # ---- where a message is ----

    def explain(self, id: int) -> Json:
        """explain tells where message id is and why it has not been delivered.

        Returns ``{"id", "state", "level", "position", "until_ms", "why"}``:
        state is "ready", "leased", "delayed", "dead", "gone" (acknowledged,
        or never existed) or "quarantined" (found nowhere else, while a level
        the broker does not read may hold it); level is its level's name (None
        when gone); position counts the messages ahead of a ready one;
        until_ms is the time until a lease ends or a delayed message is due
        (ready: until what holds it ends, when known, else 0); why is the
        broker's sentence (what ``sluice explain`` prints after the state);
        headers are the message's headers as published (a dict, {} when
        none) and wait_ms its wait since its publish (leased: before this
        delivery; 0 when gone).
        """
        e, more = ExplainInfo(), MsgMore()
        more.size = sizeof(more)
        self._check(self._L.sl_explain_ex(self._handle(), id, byref(e), byref(more)))
        state = _s(e.state)
        return {
            "id": id,
            "state": state,
            "level": None if state == "gone" else self._label(e.level),
            "position": e.position,
            "until_ms": e.until_ms,
            "why": _s(e.why),
            "headers": headers_of(more.headers, more.nheaders),
            "wait_ms": more.wait_ms,
        }

    # ---- dead letters ----

    def dead_list(self, level: Optional[Level] = None, *, limit: Optional[int] = 100, after: int = 0) -> List[Json]:
        """dead_list returns dead letters in id order, as ``sluice dead list [LEVEL] --json``.

        Args:
            level: a level's dead letters; None: every level's, the highest
                level's first (each level from the start, or from after).
            limit: at most this many in all (None: all of them).
            after: only those with an id above this.

        Each row: id, level (name), tag, attempts, when (ISO 8601, UTC),
        died_ms, reason, body_preview (the first 64 bytes as text, as
        :func:`preview_text` shows them), body_bytes.
        """
        cap = _count(limit, "limit")
        L, h = self._L, self._handle()
        if level is None:
            first, last = 0, len(self.levels()) - 1
        else:
            first = last = self._level(level)
        lv, at = first, after
        page, n = (DeadLetter * SL_DEAD_PAGE)(), c_uint()
        rows: List[Json] = []
        while not cap or len(rows) < cap:
            want = SL_DEAD_PAGE if not cap else min(SL_DEAD_PAGE, cap - len(rows))
            self._check(L.sl_dead_list(h, lv, at, want, page, byref(n)))
            name = self._label(lv)
            for k in range(n.value):
                d = page[k]
                rows.append({
                    "id": d.id,
                    "level": name,
                    "tag": _s(d.tag),
                    "attempts": d.attempts,
                    "when": _when(d.died_ms),
                    "died_ms": d.died_ms,
                    "reason": _s(d.reason),
                    "body_preview": preview_text(bytes(d.preview[:d.preview_len])),
                    "body_bytes": d.body_bytes,
                })
                at = d.id
            if n.value < want:
                if lv >= last:
                    break
                lv, at = lv + 1, after  # the next level's, from the start (or after)
        return rows

    def dead_peek(self, id: int) -> Json:
        """dead_peek reads one dead letter whole: ``{"id", "level", "attempts", "tag", "reason", "headers", "body"}``.

        body is bytes, unchanged (what ``sluice dead peek ID`` writes);
        headers the message's, as published (a dict, {} when none). Raises
        NotFound when no dead letter has that id.
        """
        m, more = DeadMessage(), MsgMore()
        more.size = sizeof(more)
        self._check(self._L.sl_dead_peek_ex(self._handle(), id, byref(m), byref(more)))
        return {
            "id": m.id,
            "level": self._label(m.level),
            "attempts": m.attempts,
            "tag": string_at(m.tag, m.tag_len).decode("utf-8", "replace") if m.tag_len else "",
            "reason": string_at(m.reason, m.reason_len).decode("utf-8", "replace") if m.reason_len else "",
            "headers": headers_of(more.headers, more.nheaders),
            "body": string_at(m.body, m.body_len) if m.body_len else b"",
        }

    def dead_requeue(
        self,
        level: Optional[Level] = None,
        *,
        id: Optional[int] = None,
        to: Optional[Level] = None,
        limit: Optional[int] = None,
    ) -> Json:
        """dead_requeue puts dead letters back in a queue, as ``sluice dead requeue --json``.

        Give a level (every dead letter it holds now, or at most limit, smallest
        id first) or id= (one dead letter). to is the level they go to (None:
        the one they died in). They start over: attempt 0, no time to live.
        Returns ``{"requeued": N}``. A dead letter that dies again while this
        runs is not requeued twice.
        """
        if (level is None) == (id is None):
            raise InvalidArgument("give a level or id=, not both")
        cap = _count(limit, "limit")
        L, h = self._L, self._handle()
        dest = SL_SAME_LEVEL if to is None else self._level(to)
        if id is not None:
            self._check(L.sl_dead_requeue_id(h, id, dest))
            return {"requeued": 1}
        lv = self._level(level)  # type: ignore[arg-type]
        st = Stats()
        self._check(L.sl_stats_get(h, byref(st)))
        if lv < st.nlevels and (not cap or st.level[lv].dead < cap):
            cap = st.level[lv].dead
        moved, more, n = 0, c_uint64(1), c_uint64()
        while more.value and cap and moved < cap:
            self._check(L.sl_dead_requeue(h, lv, dest, cap - moved, byref(n), byref(more)))
            if n.value == 0:
                break
            moved += n.value
        return {"requeued": moved}

    def dead_purge(self, level: Level, *, older_than_ms: int = 0, limit: Optional[int] = None) -> Json:
        """dead_purge deletes a level's dead letters for good, as ``sluice dead purge --json``.

        Those that died at least older_than_ms ago (0: all), at most limit
        (None: no limit). Returns ``{"purged": N}``.
        """
        cap = _count(limit, "limit")
        older = _limit(older_than_ms, "older_than_ms", 10**15)
        L, h, lv = self._L, self._handle(), self._level(level)
        purged, after, n = 0, c_uint64(0), c_uint64()
        while True:
            self._check(L.sl_dead_purge(h, lv, older, cap - purged if cap else 0, byref(after), byref(n)))
            purged += n.value
            if not after.value or (cap and purged >= cap):
                break
        return {"purged": purged}

    # ---- waiting messages ----

    def peek(self, level: Level, tag: Optional[str] = None, limit: Optional[int] = 20) -> List[Json]:
        """peek reads a level's waiting messages without taking them, as ``sluice peek LEVEL --json``.

        Waiting: ready, not out with a consumer, not delayed; in the order
        the level serves them (a level served fair by tag: tag by tag). tag:
        that tag's only. limit: at most this many (None: all of them).

        Each row: id, level (name), tag, attempts, age_ms, cost, body_bytes,
        body_preview (the first 64 bytes as text, as :func:`preview_text`
        shows them).
        """
        cap = _count(limit, "limit")
        L, h, lv = self._L, self._handle(), self._level(level)
        t, name = _tag(tag), self._label(lv)
        page, n, after = (Waiting * SL_MSG_PAGE)(), c_uint(), c_uint64(0)
        rows: List[Json] = []
        while not cap or len(rows) < cap:
            want = SL_MSG_PAGE if not cap else min(SL_MSG_PAGE, cap - len(rows))
            self._check(L.sl_msg_peek(h, lv, t, after.value, want, page, byref(n), byref(after)))
            for k in range(n.value):
                w = page[k]
                rows.append({
                    "id": w.id,
                    "level": name,
                    "tag": _s(w.tag),
                    "attempts": w.attempts,
                    "age_ms": w.age_ms,
                    "cost": w.cost,
                    "body_bytes": w.body_bytes,
                    "body_preview": preview_text(bytes(w.preview[:w.preview_len])),
                })
            if not after.value:  # the level's end
                break
        return rows

    def delete(self, id: int) -> Json:
        """delete deletes one waiting or delayed message, as ``sluice delete ID --json``.

        Returns ``{"deleted": id, "level": name}``. Raises InvalidState while
        it is out with a consumer (settle it, or wait for its lease to end),
        NotFound when no waiting message has that id.
        """
        lv = c_uint()
        self._check(self._L.sl_msg_delete(self._handle(), id, byref(lv)))
        return {"deleted": id, "level": self._label(lv.value)}

    def purge(self, level: Level, tag: Optional[str] = None, older_than_ms: Optional[int] = None,
              dry_run: bool = False, *, limit: Optional[int] = None) -> Json:
        """purge deletes a level's waiting messages for good, as ``sluice purge LEVEL --json``.

        All of them, or tag's only, or those published at least older_than_ms
        ago (None or 0: any age); at most limit (None: as many as the level
        holds now). dry_run counts them and deletes nothing.

        Returns ``{"purged": N, "in_flight_left": M}`` (``"would_purge"`` with
        dry_run): M messages were out with consumers and left alone
        (acknowledged, they are gone; given back, they wait again).
        """
        older = 0 if older_than_ms is None else _limit(older_than_ms, "older_than_ms", 10**15)
        t = _tag(tag)
        done, leased = self._series(level, limit, lambda h, lv, cap, after, n, left: self._L.sl_msg_purge(
            h, lv, t, older, int(bool(dry_run)), cap, after, n, left))
        return {"would_purge" if dry_run else "purged": done, "in_flight_left": leased}

    def move(self, level: Level, to: Level, tag: Optional[str] = None, *, limit: Optional[int] = None) -> Json:
        """move moves a level's waiting messages to another level's tail, as ``sluice move LEVEL --to TO --json``.

        All of them or tag's only, at most limit (None: as many as the level
        holds now), in their order, each keeping its id, tag, body, cost,
        attempts and time to live (to empty a level before ``level_set(...,
        fair=True)``, say). The target's --level-max-messages does not refuse
        them.

        Returns ``{"moved": N, "in_flight_left": M}`` (M: out with consumers,
        left alone). Raises InvalidArgument when to is level itself.
        """
        src, dst, t = self._level(level), self._level(to), _tag(tag)
        if src == dst:
            raise InvalidArgument(f"to names level {self._label(src)} itself: move to another level")
        done, leased = self._series(src, limit, lambda h, lv, cap, after, n, left: self._L.sl_msg_move(
            h, lv, dst, t, cap, after, n, left))
        return {"moved": done, "in_flight_left": leased}

    def _series(self, level: Level, limit: Optional[int], step: Any) -> Tuple[int, int]:
        """_series runs purge or move chunks (step) as cli_msgs.c's series: returns (done, left in flight)."""
        bound = _count(limit, "limit")
        L, h, lv = self._L, self._handle(), self._level(level)
        st = Stats()
        self._check(L.sl_stats_get(h, byref(st)))  # at most what waits now
        if lv < st.nlevels and (not bound or st.level[lv].depth < bound):
            bound = st.level[lv].depth
        done, leased, after, n, left = 0, 0, c_uint64(0), c_uint64(), c_uint64()
        while bound and done < bound:
            self._check(step(h, lv, bound - done, byref(after), byref(n), byref(left)))
            done += n.value
            leased += left.value
            if not after.value:
                break
        return done, leased
