"""The administration calls of Client, returning what ``sluice ... --json`` prints.

Each listing is built from the same C structs, with the same keys, in the same
order and with the same values as the command line's JSON (tools/cli:
cli_stats.c, cli_level.c, cli_pool.c, cli_sink.c, cli_tag.c, cli_coord.c,
cli_window.c), so ``client.level_list()`` equals ``json.loads(sluice level
list --json)``; the test suite compares the two on one broker. Where the
command line prints no JSON (sink resume, and the calls that change a setting)
the return value is documented on the method. The calls on stored messages
(explain, dead letters, waiting messages) are in _msgs.py, backups and the
settings as declarations in _backup.py.

Arguments follow the command line's options: levels by name or number, rates
in units per second (``0.5``) or as windows (``"500/min:50"``, see
:mod:`sluice._windows`), durations in milliseconds.
"""

from __future__ import annotations

from ctypes import byref, c_uint, c_uint64
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

from . import _lib
from ._lib import (
    SL_MAX_LEVELS,
    SL_MAX_POOLS,
    SL_MAX_TAG_ROWS,
    SL_UNCHANGED,
    CoordInfo,
    LevelInfo,
    PoolInfo,
    SinkInfo,
    Stats,
    StatsEx,
    StatsMore,
    TagInfo,
    TagSettings,
    TagThrottle,
)
from ._windows import limit as _limit
from ._windows import rate_milli, window_rows, windows_read
from .errors import Error, InvalidArgument

if TYPE_CHECKING:  # the mixin's host is client._Conn
    from ctypes import c_void_p

Level = Union[int, str]
Json = Dict[str, Any]

_s = _lib.text


def coord_json(c: CoordInfo) -> Optional[Json]:
    """coord_json is cli_coord_json: None unless the broker shares its sink.

    reserved_fits is None while it cannot be told: Redis's first lease period
    (state "learning"), or no limit known to this broker yet.
    """
    if not c.coordinated:
        return None
    learning = _s(c.state) == "learning" or c.limit_milli == 0
    return {
        "coordinated": True,
        "state": _s(c.state),
        "reachable": bool(c.reachable),
        "slices_held": c.slices_held,
        "slices": c.slices,
        "reserved_milli": c.reserved_milli,
        "granted_milli": c.granted_milli,
        "lease_left_ms": c.lease_left_ms,
        "epoch": c.epoch,
        "limit_milli": c.limit_milli,
        "sum_reserved_milli": c.sum_reserved_milli,
        "reserved_fits": None if learning else c.sum_reserved_milli <= c.limit_milli,
        "brokers": c.brokers,
        "redis_ops": c.ops,
    }


class AdminMixin:
    """AdminMixin holds Client's administration calls (a part of Client; see client.py)."""

    if TYPE_CHECKING:  # provided by client._Conn
        _L: Any

        def _handle(self) -> c_void_p: ...
        def _check(self, rc: int) -> None: ...
        def _error(self, rc: int) -> Error: ...
        def _level(self, level: Level) -> int: ...
        def _label(self, level: int) -> str: ...
        def levels(self) -> List[str]: ...

    # ---- stats ----

    def stats(self) -> Json:
        """stats returns the broker's figures, as ``sluice stats --json``.

        Keys: uptime_ms, consumers, breaker, auth_refused, handshakes_refused,
        settle_refused (settlements refused with SL_ESTALE), settle_foreign
        (of those, for a lease another connection holds), breaker_trips,
        rx_bad, tx_failed, quarantined (the messages held in quarantined
        levels), levels (a row per level: depth, inflight, delayed, dead,
        oldest_ms, the counters, eta_ms, throttled_tag, throttled_ms (what its
        pause after a THROTTLED has left), state ("ok" or "quarantined"),
        quarantined), coord (None unless the sink is shared) and sink
        (rate_milli, effective_rate_milli, paused_ms, reason).
        """
        L, h = self._L, self._handle()
        st, ex, more = Stats(), StatsEx(), StatsMore.new()
        self._check(L.sl_stats_get_more(h, byref(st), byref(ex), byref(more)))
        sink = SinkInfo()
        shown = L.sl_sink_show(h, byref(sink)) == 0
        out: Json = {
            "uptime_ms": st.uptime_ms,
            "consumers": st.consumers,
            "breaker": _s(st.breaker),
            "auth_refused": st.auth_refused,
            "handshakes_refused": st.handshakes_refused,
            "settle_refused": more.settle_refused,
            "settle_foreign": more.settle_foreign,
            "breaker_trips": st.breaker_trips,
            "rx_bad": st.rx_bad,
            "tx_failed": st.tx_failed,
            "quarantined": more.quarantined_total,
        }
        rows = []
        for i in range(st.nlevels):
            lv = st.level[i]
            rows.append({
                "level": i,
                "name": _s(lv.name),
                "depth": lv.depth,
                "inflight": lv.inflight,
                "delayed": lv.delayed,
                "dead": lv.dead,
                "oldest_ms": lv.oldest_ms,
                "enqueued": lv.enqueued,
                "dispatched": lv.dispatched,
                "acked": lv.acked,
                "nacked": lv.nacked,
                "expired": lv.expired,
                "picks_priority": lv.picks_priority,
                "picks_aged": lv.picks_aged,
                "picks_overdue": lv.picks_overdue,
                "picks_guaranteed": lv.picks_guaranteed,
                "throttled": lv.throttled,
                "eta_ms": lv.eta_ms,
                "dead_requeued": lv.dead_requeued,
                "dead_purged": lv.dead_purged,
                "dead_dropped": lv.dead_dropped,
                "corrupt": lv.corrupt,
                "throttled_tag": ex.throttled_tag[i],
                "throttled_ms": more.throttled_ms[i],
                "state": "quarantined" if more.quarantined_level[i] else "ok",
                "quarantined": more.quarantined[i],
            })
        out["levels"] = rows
        out["coord"] = coord_json(st.coord)
        if shown:
            out["sink"] = {
                "rate_milli": sink.rate_milli,
                "effective_rate_milli": sink.effective_rate_milli,
                "paused_ms": sink.paused_ms,
                "reason": _s(sink.reason),
            }
        return out

    # ---- levels ----

    def level_list(self) -> Json:
        """level_list returns every level's settings and state, as ``sluice level list --json``.

        ``{"levels": [{"level", "name", "deadline_ms", "aging_ms", "paused",
        "depth", "oldest_ms", "max_rate_milli", "min_rate_milli", "burst",
        "tokens_milli", "eta_ms", "fair", "throttled_ms", "state",
        "windows": [...]}, ...]}``: throttled_ms is what the level's pause
        after a THROTTLED has left (0: none; level_resume ends it), state is
        "quarantined" for a level whose stored trees failed the broker's
        checks, else "ok".
        """
        L, h = self._L, self._handle()
        arr, thr, n = (LevelInfo * SL_MAX_LEVELS)(), (c_uint64 * SL_MAX_LEVELS)(), c_uint()
        self._check(L.sl_level_list_ex(h, arr, thr, byref(n)))
        # each level's state, from STATS (as the CLI: "ok" when it cannot be read)
        st, more = Stats(), StatsMore.new()
        if L.sl_stats_get_more(h, byref(st), None, byref(more)) != 0:
            more = StatsMore.new()
        rows = []
        for i in range(n.value):
            lv = arr[i]
            rows.append({
                "level": i,
                "name": _s(lv.name),
                "deadline_ms": lv.deadline_ms,
                "aging_ms": lv.aging_ms,
                "paused": bool(lv.paused),
                "depth": lv.depth,
                "oldest_ms": lv.oldest_ms,
                "max_rate_milli": lv.max_rate_milli,
                "min_rate_milli": lv.min_rate_milli,
                "burst": lv.burst,
                "tokens_milli": lv.tokens_milli,
                "eta_ms": lv.eta_ms,
                "fair": bool(lv.fair),
                "throttled_ms": thr[i],
                "state": "quarantined" if more.quarantined_level[i] else "ok",
                "windows": window_rows(lv.windows, lv.nwindows),
            })
        return {"levels": rows}

    def level_pause(self, level: Level) -> None:
        """level_pause stops deliveries from level (publishing to it still works). Persisted."""
        self._check(self._L.sl_level_pause(self._handle(), self._level(level), 1))

    def level_resume(self, level: Level) -> None:
        """level_resume restarts deliveries from a paused level, and ends its pause after a THROTTLED."""
        self._check(self._L.sl_level_pause(self._handle(), self._level(level), 0))

    def level_set(
        self,
        level: Level,
        *,
        deadline_ms: Optional[int] = None,
        aging_ms: Optional[int] = None,
        max_rate: Any = None,
        min_rate: Any = None,
        burst: Union[int, str, None] = None,
        fair: Union[bool, str, None] = None,
        max_rate_milli: Optional[int] = None,
        min_rate_milli: Optional[int] = None,
    ) -> None:
        """level_set changes a level's settings, as ``sluice level set``; None leaves one as it is.

        Args:
            deadline_ms: a head older than this is served first; 0 switches it off.
            aging_ms: waiting this long lifts a message one level; 0 off.
            max_rate: the ceiling: units per second, or windows ("10/s",
                "500/min:50", a list of up to 4); 0 or "off" removes it.
            min_rate: the guaranteed rate, units per second; 0 or "off" removes it.
            burst: the per-second window's burst; 0 or "off" removes it.
            fair: True (or "tag") to serve the level fair by tag, False (or
                "fifo") for FIFO; only while the level is empty (else InvalidState).
            max_rate_milli, min_rate_milli: the two rates in thousandths of a
                unit per second, as level_list shows them (instead of max_rate,
                min_rate).

        Raises NoLevel, InvalidArgument (a value the broker refused; its
        message says which), InvalidState.
        """
        max_rate = _one_of("ceiling", max_rate=max_rate, max_rate_milli=max_rate_milli)
        if min_rate is not None and min_rate_milli is not None:
            raise InvalidArgument("give min_rate or min_rate_milli, not both")
        b = SL_UNCHANGED if burst is None else _limit(burst, "burst")
        ws = windows_read(max_rate, b, "max_rate")
        mn = SL_UNCHANGED if min_rate is None else rate_milli(min_rate, "min_rate")
        if min_rate_milli is not None:
            mn = _limit(min_rate_milli, "min_rate_milli", 10**15)
        dl = SL_UNCHANGED if deadline_ms is None else _limit(deadline_ms, "deadline_ms", 10**12)
        ag = SL_UNCHANGED if aging_ms is None else _limit(aging_ms, "aging_ms", 10**12)
        fair_on: Optional[int] = None
        if fair is not None:
            if fair in ("tag", "fifo"):
                fair_on = int(fair == "tag")
            elif isinstance(fair, bool):
                fair_on = int(fair)
            else:
                raise InvalidArgument(f"bad fair {fair!r} (True or 'tag', False or 'fifo')")
        scheduling = dl != SL_UNCHANGED or ag != SL_UNCHANGED
        rates = ws is not None or mn != SL_UNCHANGED or b != SL_UNCHANGED
        if not scheduling and not rates and fair_on is None:
            raise InvalidArgument("nothing to change: give deadline_ms, aging_ms, max_rate, min_rate, burst or fair")
        L, h, lv = self._L, self._handle(), self._level(level)
        if fair_on is not None:
            self._check(L.sl_level_fair(h, lv, fair_on))
        if scheduling:
            self._check(L.sl_level_set(h, lv, dl, ag))
        if ws is not None:
            arr, n = ws.array()
            self._check(L.sl_level_windows(h, lv, arr, n))
        if mn != SL_UNCHANGED or ((ws is None or ws.off) and b != SL_UNCHANGED):
            self._check(L.sl_level_rate(h, lv, SL_UNCHANGED, mn,
                                        SL_UNCHANGED if ws is not None and not ws.off else b))

    # ---- pools ----

    def pool_list(self) -> Json:
        """pool_list returns the consumer pools, as ``sluice pool list --json``.

        ``{"pools": [{"name", "levels" (names), "size", "members", "inflight",
        "rate_per_s", "recommended", "paused", "autoscale"}, ...]}``
        """
        arr, n = (PoolInfo * SL_MAX_POOLS)(), c_uint()
        self._check(self._L.sl_pool_list(self._handle(), arr, byref(n)))
        rows = []
        for i in range(n.value):
            p = arr[i]
            rows.append({
                "name": _s(p.name),
                "levels": [self._label(lv) for lv in range(32) if p.levels_mask >> lv & 1],
                "size": p.size,
                "members": p.members,
                "inflight": p.inflight,
                "rate_per_s": float("%.3f" % p.rate_per_s),
                "recommended": p.recommended,
                "paused": bool(p.paused),
                "autoscale": bool(p.autoscale),
            })
        return {"pools": rows}

    def pool_resize(self, pool: str, size: int) -> None:
        """pool_resize sets a pool's size (0: no limit), creating the pool if it does not exist."""
        self._check(self._L.sl_pool_resize(self._handle(), _pool_name(pool), _limit(size, "size")))

    def pool_pause(self, pool: str) -> None:
        """pool_pause stops deliveries to a pool's members."""
        self._check(self._L.sl_pool_pause(self._handle(), _pool_name(pool), 1))

    def pool_resume(self, pool: str) -> None:
        """pool_resume restarts deliveries to a paused pool."""
        self._check(self._L.sl_pool_pause(self._handle(), _pool_name(pool), 0))

    def pool_delete(self, pool: str, *, force: bool = False) -> Json:
        """pool_delete deletes a pool, as ``sluice pool delete --json``: ``{"pool", "deleted", "forced"}``.

        A pool with members is refused (InvalidState) unless force.
        """
        self._check(self._L.sl_pool_delete(self._handle(), _pool_name(pool), int(force)))
        return {"pool": pool, "deleted": True, "forced": bool(force)}

    def pool_autoscale(self, pool: str, *, min: int = 0, max: int = 0, target_wait_ms: int = 0,
                       off: bool = False) -> None:
        """pool_autoscale lets the broker size the pool within [min, max] for a wait of target_wait_ms; off stops it."""
        L, h = self._L, self._handle()
        if off:
            if min or max or target_wait_ms:
                raise InvalidArgument("off takes no min, max or target_wait_ms")
            self._check(L.sl_pool_autoscale(h, _pool_name(pool), 0, 0, 0, 0))
            return
        if min < 1 or max < min or target_wait_ms < 1:
            raise InvalidArgument("give 1 <= min <= max and target_wait_ms above 0, or off=True")
        self._check(L.sl_pool_autoscale(h, _pool_name(pool), min, max, target_wait_ms, 1))

    # ---- the sink ----

    def sink_show(self) -> Json:
        """sink_show returns the sink's settings and state, as ``sluice sink show --json``.

        Keys: rate_milli, effective_rate_milli, burst, max_inflight, inflight,
        tokens_milli, paused_ms (until dispatch resumes after a THROTTLED; 0:
        running), breaker, breaker_trips, reason, windows, coord.
        """
        s = SinkInfo()
        self._check(self._L.sl_sink_show(self._handle(), byref(s)))
        return {
            "rate_milli": s.rate_milli,
            "effective_rate_milli": s.effective_rate_milli,
            "burst": s.burst,
            "max_inflight": s.max_inflight,
            "inflight": s.inflight,
            "tokens_milli": s.tokens_milli,
            "paused_ms": s.paused_ms,
            "breaker": _s(s.breaker),
            "breaker_trips": s.breaker_trips,
            "reason": _s(s.reason),
            "windows": window_rows(s.windows, s.nwindows),
            "coord": coord_json(s.coord),
        }

    def sink_resume(self) -> int:
        """sink_resume ends the sink's pause after a THROTTLED at once, as ``sluice sink resume``.

        Returns the ms the pause had left (0: it was not paused). Dispatch
        goes on one unit at a time, as when a pause runs out; the rate stays
        where the cuts after 429s put it (sink_set, which also ends a pause,
        restores the configured one). Needs the admin role.
        """
        left = c_uint64()
        self._check(self._L.sl_sink_resume(self._handle(), byref(left)))
        return left.value

    def sink_set(
        self,
        rate: Any = None,
        *,
        burst: Union[int, str, None] = None,
        inflight: Union[int, str, None] = None,
        max_rate: Any = None,
        max_inflight: Union[int, str, None] = None,
        rate_milli: Optional[int] = None,
    ) -> None:
        """sink_set changes the sink's limit, as ``sluice sink set``; None leaves a setting as it is.

        Args:
            rate: units per second, or windows ("10/s", "500/min", a list);
                0 or "off": unlimited. ``max_rate`` is the same, and
                ``rate_milli`` in thousandths, as sink_show shows it.
            burst: the per-second window's burst; 0 or "off" removes it.
            inflight: the most deliveries out at once; 0 or "off": no cap.
                ``max_inflight`` is the same.
        """
        rate = _one_of("rate", rate=rate, max_rate=max_rate, rate_milli=rate_milli)
        inflight = _one_of("in-flight cap", inflight=inflight, max_inflight=max_inflight)
        b = SL_UNCHANGED if burst is None else _limit(burst, "burst")
        cap = SL_UNCHANGED if inflight is None else _limit(inflight, "inflight")
        ws = windows_read(rate, b, "rate")
        if ws is None and b == SL_UNCHANGED and cap == SL_UNCHANGED:
            raise InvalidArgument("nothing to change: give rate, burst or inflight")
        L, h = self._L, self._handle()
        folded = ws is not None and not ws.off
        if ws is not None:
            arr, n = ws.array()
            self._check(L.sl_sink_windows(h, arr, n))
        if cap != SL_UNCHANGED or (not folded and b != SL_UNCHANGED):
            self._check(L.sl_sink_set(h, SL_UNCHANGED, SL_UNCHANGED if folded else b, cap))

    # ---- tags ----

    def tag_list(self) -> Json:
        """tag_list returns the tag patterns and the busiest tags, as ``sluice tag list --json``.

        ``{"patterns": [{"pattern", "weight", "max_inflight", "rate_milli",
        "burst", "tokens_milli", "each", "inflight", "windows",
        "effective_rate_milli"}], "tags": [{"tag", "level", "pattern",
        "depth", "inflight", "rate_milli", "tokens_milli", "weight",
        "max_inflight", "paused", "oldest_ms", "throttled_ms",
        "effective_rate_milli"}]}``
        """
        v, thr, n = (TagInfo * SL_MAX_TAG_ROWS)(), (TagThrottle * SL_MAX_TAG_ROWS)(), c_uint()
        self._check(self._L.sl_tag_list_ex(self._handle(), v, thr, byref(n)))
        patterns, tags = [], []
        for i in range(n.value):
            t = v[i]
            pattern, tag = _s(t.pattern), _s(t.tag)
            is_tag = bool(tag) or bool(t.has_level)  # a fair level's untagged messages are a row of their own
            if pattern and not is_tag:
                patterns.append({
                    "pattern": pattern,
                    "weight": t.weight,
                    "max_inflight": t.max_inflight,
                    "rate_milli": t.rate_milli,
                    "burst": t.burst,
                    "tokens_milli": t.tokens_milli,
                    "each": bool(t.each),
                    "inflight": t.inflight,
                    "windows": window_rows(t.windows, t.nwindows),
                    "effective_rate_milli": thr[i].effective_rate_milli,
                })
            if is_tag:
                row: Dict[str, Any] = {"tag": tag}
                if not tag:
                    row["untagged"] = True
                tags.append({
                    **row,
                    "level": self._label(t.level) if t.has_level else None,
                    "pattern": pattern or None,
                    "depth": t.depth,
                    "inflight": t.inflight,
                    "rate_milli": t.rate_milli,
                    "tokens_milli": t.tokens_milli,
                    "weight": t.weight,
                    "max_inflight": t.max_inflight,
                    "paused": bool(t.paused),
                    "oldest_ms": t.oldest_ms,
                    "throttled_ms": thr[i].throttled_ms,
                    "effective_rate_milli": thr[i].effective_rate_milli,
                })
        return {"patterns": patterns, "tags": tags}

    def tag_set(
        self,
        pattern: str,
        *,
        max_rate: Any = None,
        burst: Union[int, str, None] = None,
        inflight: Union[int, str, None] = None,
        weight: Optional[int] = None,
        each: Optional[bool] = None,
        off: bool = False,
        max_inflight: Union[int, str, None] = None,
        rate_milli: Optional[int] = None,
    ) -> None:
        """tag_set sets the settings of the tags pattern matches, as ``sluice tag set``.

        Args:
            pattern: a glob such as "gold-*", or an exact tag.
            max_rate: units per second or windows, as for level_set; 0 or "off" removes it.
            burst: the per-second window's burst.
            inflight: at most this many of their deliveries out at once; 0: no cap.
            weight: 1..1000, turns per round of the fair pick.
            each: True for a bucket and a cap per matching tag, False for one shared.
            off: remove the pattern's settings (alone).
            max_inflight, rate_milli: the same as inflight and max_rate (in
                thousandths), as tag_list shows them.
        """
        inflight = _one_of("in-flight cap", inflight=inflight, max_inflight=max_inflight)
        max_rate = _one_of("rate", max_rate=max_rate, rate_milli=rate_milli)
        if not pattern:
            raise InvalidArgument("a tag pattern must not be empty")
        any_set = any(x is not None for x in (max_rate, burst, inflight, weight, each))
        L, h = self._L, self._handle()
        if off:
            if any_set:
                raise InvalidArgument("off removes the pattern's settings: give it alone")
            self._check(L.sl_tag_off(h, pattern.encode()))
            return
        if not any_set:
            raise InvalidArgument("nothing to change: give max_rate, burst, inflight, weight, each or off")
        s = TagSettings()
        L.sl_tag_settings_init(byref(s))
        b = SL_UNCHANGED if burst is None else _limit(burst, "burst")
        if inflight is not None:
            s.max_inflight = _limit(inflight, "inflight")
        if weight is not None:
            s.weight = _limit(weight, "weight")
        if each is not None:
            s.each = int(bool(each))
        ws = windows_read(max_rate, b, "max_rate")
        if ws is not None:
            s.nwindows = 0 if ws.off else len(ws.windows)
            for i, (count, period, wb) in enumerate(ws.windows):
                s.windows[i].count_milli, s.windows[i].period_ms, s.windows[i].burst = count, period, wb
        else:
            s.burst = b
        self._check(L.sl_tag_set(h, pattern.encode(), byref(s)))

    def tag_pause(self, tag: str) -> None:
        """tag_pause stops deliveries of one tag (exact text) from every level served fair by tag."""
        self._check(self._L.sl_tag_pause(self._handle(), _nonempty(tag, "tag"), 1))

    def tag_resume(self, tag: str) -> None:
        """tag_resume restarts deliveries of a paused tag."""
        self._check(self._L.sl_tag_pause(self._handle(), _nonempty(tag, "tag"), 0))


def _one_of(what: str, **given: Any) -> Any:
    """_one_of returns the one value given among aliases (None when none), refusing two.

    A name ending in _milli is a rate in thousandths, as the listings show it,
    and becomes a per-second window (0: off).
    """
    got = [(k, v) for k, v in given.items() if v is not None]
    if len(got) > 1:
        raise InvalidArgument(f"give one of {', '.join(given)} for the {what}, not several")
    if not got:
        return None
    k, v = got[0]
    if k.endswith("_milli"):
        n = _limit(v, k, 10**15)
        return 0 if n == 0 else {"count_milli": n, "period_ms": 1000}
    return v


def _nonempty(s: str, what: str) -> bytes:
    if not s:
        raise InvalidArgument(f"a {what} must not be empty")
    return s.encode()


def _pool_name(name: str) -> bytes:
    b = name.encode()
    if not b or len(b) > 64:
        raise InvalidArgument(f"bad pool name {name!r} (1 to 64 bytes)")
    return b

