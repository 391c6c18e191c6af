"""Rates and the windows of a rate limit, read as the ``sluice`` command reads them.

A port of tools/cli/cli_window.c and the decimal readers of cli_text.c, so that
``level_set(max_rate=...)``, ``sink_set(...)`` and ``tag_set(...)`` take what
``--max-rate`` takes and build the same windows:

* a number: units per second (``10``, ``0.5``); ``0`` means no limit;
* a string: ``"10"``, ``"10/s"``, ``"500/min"``, ``"8/10s"``, each optionally
  ``":BURST"``; ``"off"`` for no limit;
* a dict as the admin calls show a window: ``{"count_milli": 10000,
  "period_ms": 1000, "burst": 10}`` (burst optional);
* a list of those, up to four windows that all hold.

Counts are kept in thousandths, exactly: finer than a thousandth is refused.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any, List, Optional, Sequence, Tuple

from ._lib import SL_MAX_WINDOWS, SL_UNCHANGED, Window
from .errors import InvalidArgument

MS_PER_DAY = 86_400_000
RATE_MAX = 1_000_000_000  # units a second, as cli_text_rate_parse
U32_MAX = (1 << 32) - 1

_UNITS = {"ms": 1, "s": 1000, "sec": 1000, "min": 60000, "m": 60000, "h": 3600000, "hour": 3600000,
          "d": MS_PER_DAY, "day": MS_PER_DAY}

SYNTAX = "RATE per second, COUNT/PERIOD such as 500/min or 8/10s, each optionally :BURST; or off"


def milli(value: Any, what: str, max_whole: int = RATE_MAX) -> int:
    """milli reads a decimal number (int, float, Decimal or text) into thousandths, exactly.

    Raises InvalidArgument for a negative number, one above max_whole, or one
    finer than a thousandth.
    """
    if isinstance(value, bool):
        raise InvalidArgument(f"bad {what} {value!r}")
    try:
        if isinstance(value, float):
            d = Decimal(repr(value))
        else:
            d = Decimal(str(value).strip() if isinstance(value, str) else value)
    except (InvalidOperation, TypeError, ValueError):
        raise InvalidArgument(f"bad {what} {value!r} (expected a number)") from None
    if not d.is_finite() or d < 0 or d > max_whole:
        raise InvalidArgument(f"bad {what} {value!r} (0 to {max_whole})")
    m = d * 1000
    if m != m.to_integral_value():
        raise InvalidArgument(f"bad {what} {value!r} (at most 3 decimals)")
    return int(m)


def rate_milli(value: Any, what: str) -> int:
    """rate_milli reads a rate in units per second into thousandths; 0 or "off" is 0 (no limit)."""
    if isinstance(value, str) and value.strip() == "off":
        return 0
    return milli(value, what)


def limit(value: Any, what: str, max_value: int = U32_MAX) -> int:
    """limit reads a whole number up to max_value (a burst, a cap, a weight); "off" is 0."""
    if isinstance(value, str):
        if value.strip() == "off":
            return 0
        if not value.strip().isdigit():
            raise InvalidArgument(f"bad {what} {value!r} (expected a whole number)")
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > max_value:
        raise InvalidArgument(f"bad {what} {value!r} (a whole number, 0 to {max_value})")
    return value


def _period(text: str) -> int:
    digits = 0
    while digits < len(text) and text[digits].isdigit():
        digits += 1
    k = int(text[:digits]) if digits else 1
    unit = _UNITS.get(text[digits:])
    if k == 0 or unit is None or k > MS_PER_DAY // unit:
        raise ValueError(text)
    return k * unit


class WindowSet:
    """WindowSet is what cli_window_set holds: the windows given, and which had a burst."""

    def __init__(self) -> None:
        self.given = False
        self.off = False
        self.windows: List[Tuple[int, int, int]] = []  # count_milli, period_ms, burst
        self.burst_given: List[bool] = []

    def add(self, spec: Any, what: str) -> None:
        """add appends one window (or "off") read from spec."""
        if isinstance(spec, dict):
            try:
                count = int(spec["count_milli"])
                period = int(spec.get("period_ms", 1000))
                burst = int(spec.get("burst", 0))
            except (KeyError, TypeError, ValueError):
                raise InvalidArgument(f"bad {what} {spec!r} (a window has count_milli and period_ms)") from None
            self._push(count, period, burst, burst > 0, what, spec)
            return
        if isinstance(spec, (int, float, Decimal)) and not isinstance(spec, bool):
            count = milli(spec, what)
            if count == 0:
                self._off(what, spec)
                return
            self._push(count, 1000, 0, False, what, spec)
            return
        if not isinstance(spec, str):
            raise InvalidArgument(f"bad {what} {spec!r} ({SYNTAX})")
        s = spec.strip()
        if s == "off":
            self._off(what, spec)
            return
        burst, burst_given, period = 0, False, 1000
        try:
            if ":" in s:
                s, b = s.split(":", 1)
                if not b.isdigit() or int(b) == 0 or int(b) > U32_MAX:
                    raise ValueError(b)
                burst, burst_given = int(b), True
            if "/" in s:
                s, p = s.split("/", 1)
                period = _period(p)
            if s == "off":
                raise ValueError(s)
            count = milli(s, what)
        except (ValueError, InvalidArgument):
            raise InvalidArgument(f"bad {what} {spec!r} ({SYNTAX})") from None
        if count == 0:
            raise InvalidArgument(f"bad {what} {spec!r} ({SYNTAX})")
        self._push(count, period, burst, burst_given, what, spec)

    def _off(self, what: str, spec: Any) -> None:
        if self.windows:
            raise InvalidArgument(f"bad {what} {spec!r}: off stands alone")
        self.given = self.off = True

    def _push(self, count: int, period: int, burst: int, burst_given: bool, what: str, spec: Any) -> None:
        if self.off or len(self.windows) == SL_MAX_WINDOWS:
            raise InvalidArgument(f"bad {what} {spec!r} (at most {SL_MAX_WINDOWS} windows, and not with off)")
        self.given = True
        self.windows.append((count, period, burst))
        self.burst_given.append(burst_given)

    def finish(self, burst: int) -> bool:
        """finish gives each window without a burst its burst, as cli_window_finish does.

        burst is the limit's burst given beside the windows, or SL_UNCHANGED.
        Returns False when a burst was given but no window is per second.
        """
        taken = False
        for i, (count, period, b) in enumerate(self.windows):
            if self.burst_given[i]:
                continue
            if period == 1000:
                b = 0 if burst == SL_UNCHANGED else 1 if burst == 0 else burst
                taken = True
            else:
                b = min((count + 999) // 1000, U32_MAX)
            self.windows[i] = (count, period, b)
        return burst == SL_UNCHANGED or taken or self.off

    def array(self) -> Tuple[Any, int]:
        """array returns the windows as a C array and their count (0 for off)."""
        arr = (Window * SL_MAX_WINDOWS)()
        for i, (count, period, b) in enumerate(self.windows):
            arr[i].count_milli, arr[i].period_ms, arr[i].burst = count, period, b
        return arr, 0 if self.off else len(self.windows)


def windows_read(spec: Any, burst: int, what: str) -> Optional[WindowSet]:
    """windows_read reads a rate limit's windows (None: not given) and applies burst.

    Raises InvalidArgument as the command line's usage errors do.
    """
    if spec is None:
        return None
    ws = WindowSet()
    items: Sequence[Any] = spec if isinstance(spec, (list, tuple)) else [spec]
    if not items:
        ws.given = ws.off = True
    for item in items:
        ws.add(item, what)
    if not ws.finish(burst):
        raise InvalidArgument(
            "burst sets a per-second window's burst, and no window is per second (write COUNT/PERIOD:BURST)"
        )
    return ws


def window_rows(windows: Any, n: int) -> List[dict]:
    """window_rows shows n C windows as the CLI's --json does."""
    return [
        {"count_milli": w.count_milli, "period_ms": w.period_ms, "burst": w.burst, "tokens_milli": w.tokens_milli}
        for w in (windows[i] for i in range(n))
    ]


def copy_windows(dst: Any, ws: WindowSet) -> None:
    """copy_windows fills a C windows array in place from ws."""
    for i, (count, period, b) in enumerate(ws.windows):
        dst[i].count_milli, dst[i].period_ms, dst[i].burst = count, period, b
