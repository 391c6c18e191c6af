"""The C library, as ctypes sees it: where it is found, its structs, its functions.

This module is the only one that knows the layout of client/sluice.h,
client/sluice_pace.h and client/sluice_admin.h. Every struct below mirrors its C declaration field for
field, in order; the test suite compiles a small C program against the headers
and checks each size and offset against these classes, so a header change that
is not made here fails the tests instead of corrupting memory. The same test
checks the constants copied here, and that every struct and function the
headers declare is bound here or named in UNBOUND with the reason.

The library is loaded once, on first use: from $SLUICE_LIB (a path) when set,
else by its soname, libsluice.so.1, from the system's library path (where
``make install`` puts it).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from ctypes import (
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_int,
    c_size_t,
    c_ubyte,
    c_uint,
    c_uint32,
    c_uint64,
    c_void_p,
)
from typing import Any, Dict, Optional

SONAME = "libsluice.so.1"

SL_MAX_LEVELS = 16
SL_MAX_WINDOWS = 4
SL_MAX_POOLS = 64
SL_MAX_TAG_ROWS = 64
SL_KEY_BYTES = 41
SL_DEAD_TEXT = 64
SL_DEAD_PAGE = 64
SL_DEAD_CHUNK = 1000
SL_MSG_CHUNK = 1000
SL_MSG_PAGE = 64
SL_MSG_TEXT = 64
SL_LEVEL_DEFAULT = -1
SL_UNCHANGED = (1 << 64) - 1
SL_SAME_LEVEL = (1 << 32) - 1
SL_MAX_HEADERS = 32
SL_MAX_HEADER_NAME = 64
SL_MAX_HEADER_VALUE = 1024
SL_MAX_HEADER_BYTES = 8192
SL_SCOPE_SINK = 0
SL_SCOPE_TAG = 1


class Options(Structure):
    _fields_ = [
        ("timeout_ms", c_int),
        ("heartbeat_ms", c_int),
        ("server_key", c_char_p),
        ("public_key", c_char_p),
        ("secret_key", c_char_p),
    ]


class Put(Structure):
    # body is `const void *` in C; c_char_p has the same ABI and lets a bytes
    # object be assigned without a copy (ctypes keeps it alive).
    _fields_ = [
        ("body", c_char_p),
        ("body_len", c_size_t),
        ("level", c_int),
        ("tag", c_char_p),
        ("cost", c_uint32),
        ("key", c_char_p),
        ("delay_ms", c_uint64),
        ("ttl_ms", c_uint64),
    ]


class Header(Structure):
    _fields_ = [
        ("name", c_char_p),
        ("value", c_char_p),
    ]


class MsgMore(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("headers", ctypes.POINTER(Header)),
        ("nheaders", c_size_t),
        ("wait_ms", c_uint64),
    ]


class Confirm(Structure):
    _fields_ = [
        ("ticket", c_uint64),
        ("err", c_int),
        ("id", c_uint64),
        ("duplicate", c_int),
    ]


class Origin(Structure):
    _fields_ = [
        ("epoch", c_uint64),
        ("node", c_char * 65),
    ]


class Delivery(Structure):
    _fields_ = [
        ("id", c_uint64),
        ("token", c_uint64),
        ("level", c_uint),
        ("attempt", c_uint),
        ("lease_ms", c_uint32),
        ("tag", c_char_p),
        ("body", c_void_p),
        ("body_len", c_size_t),
        ("cost", c_uint32),
        ("released_ns", c_uint64),
        ("headers", ctypes.POINTER(Header)),
        ("nheaders", c_size_t),
        ("wait_ms", c_uint64),
        ("key", c_char_p),
    ]


class LevelStats(Structure):
    _fields_ = [
        ("name", c_char * 65),
        ("depth", c_uint64),
        ("inflight", c_uint64),
        ("delayed", c_uint64),
        ("dead", c_uint64),
        ("oldest_ms", c_uint64),
        ("enqueued", c_uint64),
        ("dispatched", c_uint64),
        ("acked", c_uint64),
        ("nacked", c_uint64),
        ("expired", c_uint64),
        ("picks_priority", c_uint64),
        ("picks_aged", c_uint64),
        ("picks_overdue", c_uint64),
        ("picks_guaranteed", c_uint64),
        ("throttled", c_uint64),
        ("eta_ms", c_uint64),
        ("dead_requeued", c_uint64),
        ("dead_purged", c_uint64),
        ("dead_dropped", c_uint64),
        ("corrupt", c_uint64),
    ]


class CoordInfo(Structure):
    _fields_ = [
        ("coordinated", c_int),
        ("state", c_char * 24),
        ("reachable", c_int),
        ("slices_held", c_uint64),
        ("slices", c_uint64),
        ("reserved_milli", c_uint64),
        ("granted_milli", c_uint64),
        ("lease_left_ms", c_uint64),
        ("epoch", c_uint64),
        ("limit_milli", c_uint64),
        ("sum_reserved_milli", c_uint64),
        ("brokers", c_uint64),
        ("ops", c_uint64),
    ]


class Stats(Structure):
    _fields_ = [
        ("nlevels", c_uint),
        ("level", LevelStats * SL_MAX_LEVELS),
        ("uptime_ms", c_uint64),
        ("consumers", c_uint64),
        ("breaker", c_char * 16),
        ("breaker_trips", c_uint64),
        ("rx_bad", c_uint64),
        ("tx_failed", c_uint64),
        ("auth_refused", c_uint64),
        ("handshakes_refused", c_uint64),
        ("coord", CoordInfo),
    ]


class StatsEx(Structure):
    _fields_ = [("throttled_tag", c_uint64 * SL_MAX_LEVELS)]


class StatsMore(Structure):
    # starts with its own size, which the caller sets (StatsMore.new() does)
    _fields_ = [
        ("size", c_size_t),
        ("settle_refused", c_uint64),
        ("settle_foreign", c_uint64),
        ("throttled_ms", c_uint64 * SL_MAX_LEVELS),
        ("quarantined_level", c_int * SL_MAX_LEVELS),
        ("quarantined", c_uint64 * SL_MAX_LEVELS),
        ("quarantined_total", c_uint64),
    ]

    @classmethod
    def new(cls) -> "StatsMore":
        """new returns a zeroed StatsMore with its size set, as sl_stats_get_more wants it."""
        return cls(size=ctypes.sizeof(cls))


class Window(Structure):
    _fields_ = [
        ("count_milli", c_uint64),
        ("period_ms", c_uint64),
        ("burst", c_uint32),
        ("tokens_milli", c_uint64),
    ]


class LevelInfo(Structure):
    _fields_ = [
        ("name", c_char * 65),
        ("deadline_ms", c_uint64),
        ("aging_ms", c_uint64),
        ("paused", c_int),
        ("depth", c_uint64),
        ("oldest_ms", c_uint64),
        ("max_rate_milli", c_uint64),
        ("min_rate_milli", c_uint64),
        ("burst", c_uint32),
        ("tokens_milli", c_uint64),
        ("eta_ms", c_uint64),
        ("nwindows", c_uint),
        ("windows", Window * SL_MAX_WINDOWS),
        ("fair", c_int),
    ]


class PoolInfo(Structure):
    _fields_ = [
        ("name", c_char * 65),
        ("levels_mask", c_uint32),
        ("size", c_uint32),
        ("members", c_uint32),
        ("inflight", c_uint32),
        ("rate_per_s", c_double),
        ("recommended", c_uint32),
        ("paused", c_int),
        ("autoscale", c_int),
    ]


class SinkInfo(Structure):
    _fields_ = [
        ("rate_milli", c_uint64),
        ("effective_rate_milli", c_uint64),
        ("burst", c_uint32),
        ("max_inflight", c_uint64),
        ("inflight", c_uint64),
        ("tokens_milli", c_uint64),
        ("paused_ms", c_uint64),
        ("breaker", c_char * 16),
        ("breaker_trips", c_uint64),
        ("reason", c_char * 48),
        ("coord", CoordInfo),
        ("nwindows", c_uint),
        ("windows", Window * SL_MAX_WINDOWS),
    ]


class ExplainInfo(Structure):
    _fields_ = [
        ("state", c_char * 32),
        ("level", c_uint),
        ("position", c_uint64),
        ("until_ms", c_uint64),
        ("why", c_char * 1025),
    ]


class DeadLetter(Structure):
    _fields_ = [
        ("id", c_uint64),
        ("tag", c_char * (SL_DEAD_TEXT + 1)),
        ("attempts", c_uint64),
        ("died_ms", c_uint64),
        ("reason", c_char * (SL_DEAD_TEXT + 1)),
        ("preview", c_ubyte * SL_DEAD_TEXT),
        ("preview_len", c_size_t),
        ("body_bytes", c_uint64),
    ]


class DeadMessage(Structure):
    _fields_ = [
        ("id", c_uint64),
        ("level", c_uint),
        ("attempts", c_uint64),
        ("tag", c_void_p),
        ("tag_len", c_size_t),
        ("body", c_void_p),
        ("body_len", c_size_t),
        ("reason", c_void_p),
        ("reason_len", c_size_t),
    ]


class Waiting(Structure):
    _fields_ = [
        ("id", c_uint64),
        ("tag", c_char * (SL_MSG_TEXT + 1)),
        ("attempts", c_uint64),
        ("age_ms", c_uint64),
        ("cost", c_uint32),
        ("body_bytes", c_uint64),
        ("preview", c_ubyte * SL_MSG_TEXT),
        ("preview_len", c_size_t),
        ("pos", c_uint64),
    ]


class BackupInfo(Structure):
    _fields_ = [
        ("state", c_char * 16),
        ("path", c_char * 1025),
        ("bytes", c_uint64),
        ("elapsed_ms", c_uint64),
        ("msg", c_char * 1025),
    ]


class HaNode(Structure):
    _fields_ = [
        ("node", c_char * 65),
        ("role", c_char * 65),
        ("endpoint", c_char * 65),
        ("in_sync", c_int),
        ("lag_records", c_uint64),
    ]


class HaStatus(Structure):
    _fields_ = [
        ("epoch", c_uint64),
        ("nnodes", c_uint),
        ("nodes", HaNode * 4),
    ]


class WebLink(Structure):
    _fields_ = [
        ("url", c_char * 1025),
        ("token", c_char * 65),
        ("ttl_ms", c_uint64),
        ("role", c_char * 65),
    ]


class TagSettings(Structure):
    _fields_ = [
        ("weight", c_uint64),
        ("max_inflight", c_uint64),
        ("each", c_uint64),
        ("burst", c_uint64),
        ("nwindows", c_int),
        ("windows", Window * SL_MAX_WINDOWS),
    ]


class TagInfo(Structure):
    _fields_ = [
        ("pattern", c_char * 65),
        ("tag", c_char * 65),
        ("has_level", c_int),
        ("level", c_uint),
        ("depth", c_uint64),
        ("inflight", c_uint64),
        ("oldest_ms", c_uint64),
        ("weight", c_uint64),
        ("max_inflight", c_uint64),
        ("rate_milli", c_uint64),
        ("burst", c_uint64),
        ("tokens_milli", c_uint64),
        ("each", c_int),
        ("paused", c_int),
        ("limited", c_int),
        ("nwindows", c_uint),
        ("windows", Window * SL_MAX_WINDOWS),
    ]


class TagThrottle(Structure):
    _fields_ = [
        ("throttled_ms", c_uint64),
        ("effective_rate_milli", c_uint64),
    ]


# Every struct, by its C name: the layout test walks this table.
STRUCTS = {
    "sl_options": Options,
    "sl_put": Put,
    "sl_header": Header,
    "sl_msg_more": MsgMore,
    "sl_confirm": Confirm,
    "sl_origin": Origin,
    "sl_delivery": Delivery,
    "sl_level_stats": LevelStats,
    "sl_coord_info": CoordInfo,
    "sl_stats": Stats,
    "sl_stats_ex": StatsEx,
    "sl_stats_more": StatsMore,
    "sl_window": Window,
    "sl_level_info": LevelInfo,
    "sl_pool_info": PoolInfo,
    "sl_sink_info": SinkInfo,
    "sl_explain_info": ExplainInfo,
    "sl_dead_letter": DeadLetter,
    "sl_dead_message": DeadMessage,
    "sl_waiting": Waiting,
    "sl_backup_info": BackupInfo,
    "sl_web_link": WebLink,
    "sl_ha_node": HaNode,
    "sl_ha_status": HaStatus,
    "sl_tag_settings": TagSettings,
    "sl_tag_info": TagInfo,
    "sl_tag_throttle": TagThrottle,
}

# Every constant the binding copies, by its C name: the layout test checks
# each against the headers.
CONSTANTS = {
    name: value for name, value in globals().items()
    if name.startswith("SL_") and isinstance(value, int)
}

_P = c_void_p  # an sl_client *, opaque

# name: (restype, argtypes). Pointer arguments that the binding passes with
# byref() are declared c_void_p so that byref, pointers and None all pass.
_FUNCS: dict[str, tuple[Any, list[Any]]] = {
    "sl_connect": (c_int, [c_char_p, c_void_p, c_void_p]),
    "sl_close": (None, [c_void_p]),
    "sl_keygen": (c_int, [c_void_p, c_void_p]),
    "sl_key_read": (c_int, [c_char_p, c_void_p, c_void_p]),
    "sl_strerror": (c_char_p, [c_int]),
    "sl_errname": (c_char_p, [c_int]),
    "sl_last_error": (c_char_p, [_P]),
    "sl_levels": (c_int, [_P, c_void_p, c_void_p]),
    "sl_level_parse": (c_int, [_P, c_char_p, c_void_p]),
    "sl_send": (c_int, [_P, c_void_p, c_void_p]),
    "sl_send_async": (c_int, [_P, c_void_p, c_void_p]),
    "sl_send_ex": (c_int, [_P, c_void_p, c_void_p, c_size_t, c_void_p]),
    "sl_send_async_ex": (c_int, [_P, c_void_p, c_void_p, c_size_t, c_void_p]),
    "sl_send_wait": (c_int, [_P, c_int, c_void_p]),
    "sl_send_wait_origin": (c_int, [_P, c_int, c_void_p, c_void_p]),
    "sl_send_pending": (c_size_t, [_P]),
    "sl_subscribe": (c_int, [_P, c_char_p, c_void_p, c_size_t, c_uint]),
    "sl_set_limit": (c_int, [_P, c_uint64]),
    "sl_recv": (c_int, [_P, c_int, c_void_p]),
    "sl_delivery_free": (None, [c_void_p]),
    "sl_ack": (c_int, [_P, c_void_p]),
    "sl_nack": (c_int, [_P, c_void_p, c_uint32]),
    "sl_touch": (c_int, [_P, c_void_p, c_uint32]),
    "sl_throttled": (c_int, [_P, c_void_p, c_uint32]),
    "sl_throttled_scope": (c_int, [_P, c_void_p, c_uint32, c_int]),
    "sl_reject": (c_int, [_P, c_void_p, c_char_p]),
    "sl_flush": (c_int, [_P, c_int]),
    "sl_refused": (c_uint64, [_P]),
    "sl_stats_get": (c_int, [_P, c_void_p]),
    "sl_stats_get_ex": (c_int, [_P, c_void_p, c_void_p]),
    "sl_stats_get_more": (c_int, [_P, c_void_p, c_void_p, c_void_p]),
    "sl_level_list": (c_int, [_P, c_void_p, c_void_p]),
    "sl_level_list_ex": (c_int, [_P, c_void_p, c_void_p, c_void_p]),
    "sl_level_set": (c_int, [_P, c_uint, c_uint64, c_uint64]),
    "sl_level_rate": (c_int, [_P, c_uint, c_uint64, c_uint64, c_uint64]),
    "sl_level_windows": (c_int, [_P, c_uint, c_void_p, c_uint]),
    "sl_level_pause": (c_int, [_P, c_uint, c_int]),
    "sl_level_fair": (c_int, [_P, c_uint, c_int]),
    "sl_pool_list": (c_int, [_P, c_void_p, c_void_p]),
    "sl_pool_resize": (c_int, [_P, c_char_p, c_uint32]),
    "sl_pool_pause": (c_int, [_P, c_char_p, c_int]),
    "sl_pool_delete": (c_int, [_P, c_char_p, c_int]),
    "sl_pool_autoscale": (c_int, [_P, c_char_p, c_uint32, c_uint32, c_uint64, c_int]),
    "sl_share": (c_uint, [_P]),
    "sl_set_window": (c_int, [_P, c_uint]),
    "sl_sink_set": (c_int, [_P, c_uint64, c_uint64, c_uint64]),
    "sl_sink_windows": (c_int, [_P, c_void_p, c_uint]),
    "sl_sink_show": (c_int, [_P, c_void_p]),
    "sl_sink_resume": (c_int, [_P, c_void_p]),
    "sl_explain": (c_int, [_P, c_uint64, c_void_p]),
    "sl_explain_ex": (c_int, [_P, c_uint64, c_void_p, c_void_p]),
    "sl_dead_list": (c_int, [_P, c_uint, c_uint64, c_uint, c_void_p, c_void_p]),
    "sl_dead_peek": (c_int, [_P, c_uint64, c_void_p]),
    "sl_dead_peek_ex": (c_int, [_P, c_uint64, c_void_p, c_void_p]),
    "sl_dead_requeue": (c_int, [_P, c_uint, c_uint, c_uint64, c_void_p, c_void_p]),
    "sl_dead_requeue_id": (c_int, [_P, c_uint64, c_uint]),
    "sl_dead_purge": (c_int, [_P, c_uint, c_uint64, c_uint64, c_void_p, c_void_p]),
    "sl_msg_peek": (c_int, [_P, c_uint, c_char_p, c_uint64, c_uint, c_void_p, c_void_p, c_void_p]),
    "sl_msg_delete": (c_int, [_P, c_uint64, c_void_p]),
    "sl_msg_purge": (c_int, [_P, c_uint, c_char_p, c_uint64, c_int, c_uint64, c_void_p, c_void_p, c_void_p]),
    "sl_msg_move": (c_int, [_P, c_uint, c_uint, c_char_p, c_uint64, c_void_p, c_void_p, c_void_p]),
    "sl_backup": (c_int, [_P, c_char_p]),
    "sl_backup_status": (c_int, [_P, c_void_p]),
    "sl_settings_export": (c_int, [_P, c_void_p, c_void_p]),
    "sl_web_login": (c_int, [_P, c_uint64, c_void_p]),
    "sl_tag_settings_init": (None, [c_void_p]),
    "sl_tag_set": (c_int, [_P, c_char_p, c_void_p]),
    "sl_tag_off": (c_int, [_P, c_char_p]),
    "sl_tag_pause": (c_int, [_P, c_char_p, c_int]),
    "sl_tag_list": (c_int, [_P, c_void_p, c_void_p]),
    "sl_tag_list_ex": (c_int, [_P, c_void_p, c_void_p, c_void_p]),
    "sl_ha_status_get": (c_int, [_P, c_void_p]),
    "sl_ha_switchover": (c_int, [_P]),
    "sl_ha_recover": (c_int, [_P, c_char_p]),
}

# The functions of sluice.h left unbound, and why; the layout test fails on
# a function the headers declare that is in neither table.
UNBOUND = {
    "sl_connected": "a call says whether the broker is there (ConnectError, Timeout)",
    "sl_multi_connect": "several brokers: a Client per broker",
    "sl_multi_close": "several brokers",
    "sl_multi_count": "several brokers",
    "sl_multi_endpoint": "several brokers",
    "sl_multi_at": "several brokers",
    "sl_multi_route": "several brokers",
    "sl_multi_send": "several brokers",
    "sl_multi_send_ex": "several brokers",
    "sl_delivery_header": "Delivery.headers, a dict read once at receipt, answers it",
    "sl_pace_share": "pacing where a request leaves: not in sluice.work",
    "sl_pace_peers": "pacing",
    "sl_pacer_new": "pacing",
    "sl_pacer_set": "pacing",
    "sl_pacer_peers": "pacing",
    "sl_pacer_wait": "pacing",
    "sl_pacer_wait_released": "pacing",
    "sl_pacer_free": "pacing",
}

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None


def _open() -> ctypes.CDLL:
    path = os.environ.get("SLUICE_LIB")
    if path:
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            raise ImportError(f"cannot load $SLUICE_LIB ({path}): {e}") from e
    try:
        return ctypes.CDLL(SONAME)
    except OSError:
        pass
    found = ctypes.util.find_library("sluice")
    if found:
        try:
            return ctypes.CDLL(found)
        except OSError:
            pass
    raise ImportError(
        f"cannot find {SONAME}: set SLUICE_LIB to its path (make builds build/rel/{SONAME}), "
        "or install it (make install) where the system's library path finds it"
    )


def lib() -> ctypes.CDLL:
    """lib returns the loaded C library, loading it and declaring its functions once.

    Raises ImportError when it cannot be found or lacks a function this
    binding needs (an older libsluice.so.1).
    """
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            so = _open()
            for name, (restype, argtypes) in _FUNCS.items():
                try:
                    fn = getattr(so, name)
                except AttributeError as e:
                    raise ImportError(f"{SONAME} has no {name}: rebuild it (make)") from e
                fn.restype = restype
                fn.argtypes = argtypes
            _lib = so
    return _lib


def text(raw: bytes) -> str:
    """text decodes a NUL-terminated C string's bytes as UTF-8 (bad bytes replaced)."""
    return raw.decode("utf-8", "replace")


def headers_of(arr: Any, n: int) -> Dict[str, str]:
    """headers_of reads n sl_header entries (a delivery's, a message's) into a dict, in their order."""
    return {arr[i].name.decode("utf-8", "replace"): arr[i].value.decode("utf-8", "replace") for i in range(n)}
