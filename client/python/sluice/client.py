"""The connection to a broker: publishing, consuming and settling.

A :class:`Client` is one ``sl_client`` of libsluice (one ZeroMQ connection).
:meth:`Client.consume` opens a second connection of its own for the
:class:`Consumer`, so a process may publish and consume at once, and closing
the consumer (leaving its ``with`` block) says BYE: the broker takes back the
deliveries it still holds at once, without charging an attempt.

Threading follows the C library: a Client, and a Consumer, is used by one
thread at a time (a lock of your own if threads share one); different
clients and consumers may be used from different threads at once. Blocking
calls release the GIL, and waits are cut into short slices so that Ctrl-C
(KeyboardInterrupt) and signal handlers run while a consumer waits.
"""

from __future__ import annotations

import os
import weakref
from ctypes import POINTER, byref, c_char_p, c_uint, c_uint64, c_void_p, create_string_buffer
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _lib
from ._admin import AdminMixin
from ._backup import BackupMixin
from ._ha import HaMixin
from ._lib import SL_KEY_BYTES, SL_LEVEL_DEFAULT, Confirm, Header, Options, Put, lib
from ._msgs import MsgsMixin
from .errors import Error, InvalidArgument, InvalidState, NoLevel, from_code

DEFAULT_ENDPOINT = "tcp://127.0.0.1:7470"
SEND_WINDOW = 100  # send_many's publishes outstanding, as the bench's `1 x 100` row

# The longest single wait inside the library: a longer wait is cut into these
# slices, so that Python runs its signal handlers between them.
WAIT_SLICE_MS = 200

Body = Union[bytes, bytearray, memoryview, str]
Level = Union[int, str]
KeyArg = Union[str, "os.PathLike[str]", Tuple[str, str], None]

_EOK = 0
_ETIMEDOUT = 11


def _b(s: Optional[str]) -> Optional[bytes]:
    return None if s is None else s.encode()


def _headers(headers: Optional[Mapping[str, str]]) -> Tuple[Any, int]:
    """_headers turns a mapping of header name to value into an sl_header array (None for none), in its order.

    The library checks the rules (sluice.h: 32 pairs, names of token
    characters, values of text); a name or value that is not a str is
    InvalidArgument here.
    """
    if not headers:
        return None, 0
    arr = (Header * len(headers))()
    for i, (name, value) in enumerate(headers.items()):
        if not isinstance(name, str) or not isinstance(value, str):
            raise InvalidArgument("header names and values are str")
        arr[i].name = name.encode()
        arr[i].value = value.encode()
    return arr, len(headers)


def _body(body: Body) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, (bytearray, memoryview)):
        return bytes(body)
    raise InvalidArgument(f"a body is bytes or str, not {type(body).__name__}")


def _is_z85_key(s: str) -> bool:
    return len(s) == 40 and not os.path.exists(s)


def key_read(path: Union[str, "os.PathLike[str]"]) -> Tuple[str, str]:
    """key_read reads a key file as `sluice keygen` writes it.

    Returns (public, secret), each 40 Z85 characters; the secret is "" for a
    .pub file. Raises NotFound when the file cannot be read, InvalidArgument
    when it is not a key file.
    """
    L = lib()
    pub, sec = create_string_buffer(SL_KEY_BYTES), create_string_buffer(SL_KEY_BYTES)
    rc = L.sl_key_read(os.fsencode(path), pub, sec)
    if rc:
        raise from_code(rc, f"{os.fspath(path)}: {_lib.text(L.sl_strerror(rc))}")
    return pub.value.decode(), sec.value.decode()


def keygen() -> Tuple[str, str]:
    """keygen makes a new CURVE key pair: (public, secret), 40 Z85 characters each.

    Raises InvalidArgument when the ZeroMQ library lacks CURVE.
    """
    L = lib()
    pub, sec = create_string_buffer(SL_KEY_BYTES), create_string_buffer(SL_KEY_BYTES)
    rc = L.sl_keygen(pub, sec)
    if rc:
        raise from_code(rc, "this ZeroMQ library has no CURVE support")
    return pub.value.decode(), sec.value.decode()


def _keys(client_key: KeyArg, server_key: Optional[str]) -> Tuple[Optional[bytes], Optional[bytes], Optional[bytes]]:
    """_keys turns the Client's key arguments into (public, secret, server) Z85 bytes, or all None."""
    if client_key is None and server_key is None:
        return None, None, None
    if client_key is None or server_key is None:
        raise InvalidArgument("CURVE needs both client_key and server_key")
    if isinstance(client_key, tuple):
        if len(client_key) != 2:
            raise InvalidArgument("client_key is a .key file's path or a (public, secret) pair")
        pub, sec = client_key
    else:
        pub, sec = key_read(client_key)
        if not sec:
            raise InvalidArgument(f"{os.fspath(client_key)}: not a .key file (it has no secret key)")
    server = server_key if _is_z85_key(os.fspath(server_key)) else key_read(server_key)[0]
    if not server:
        raise InvalidArgument(f"{server_key}: not a key file (no public key)")
    return pub.encode(), sec.encode(), server.encode()


def _close_handle(L: Any, h: c_void_p) -> None:
    L.sl_close(byref(h))


class _Conn:
    """_Conn is one sl_client: its handle, its error reporting and its level names."""

    def __init__(self, endpoint: str, opts: Options) -> None:
        self._L = L = lib()
        h = c_void_p()
        rc = L.sl_connect(endpoint.encode(), byref(opts), byref(h))
        if rc:
            what = "invalid endpoint or keys" if rc == 1 else _lib.text(L.sl_strerror(rc))
            raise from_code(rc, f"cannot create a client for {endpoint}: {what}")
        self._h: Optional[c_void_p] = h
        self._fin = weakref.finalize(self, _close_handle, L, h)
        self._level_ids: dict = {}
        self._level_names: Optional[List[str]] = None

    def _handle(self) -> c_void_p:
        h = self._h
        if h is None:
            raise InvalidState("the client is closed")
        return h

    def _error(self, rc: int) -> Error:
        h = self._h
        msg = _lib.text(self._L.sl_last_error(h) if h is not None else self._L.sl_strerror(rc))
        return from_code(rc, msg, _lib.text(self._L.sl_errname(rc)))

    def _check(self, rc: int) -> None:
        if rc:
            raise self._error(rc)

    def _close(self) -> None:
        if self._h is not None:
            self._h = None
            self._fin()

    # ---- levels ----

    def levels(self) -> List[str]:
        """levels returns the broker's level names, highest first (asks the broker once)."""
        if self._level_names is None:
            n = c_uint()
            names = POINTER(c_char_p)()
            self._check(self._L.sl_levels(self._handle(), byref(n), byref(names)))
            self._level_names = [_lib.text(names[i]) for i in range(n.value)]
        return list(self._level_names)

    def _label(self, level: int) -> str:
        """_label is level's name, or its number when the names cannot be read (the CLI's rule)."""
        try:
            names = self._level_names if self._level_names is not None else self.levels()
        except Error:
            return str(level)
        return names[level] if 0 <= level < len(names) else str(level)

    def _level(self, level: Level) -> int:
        """_level turns a level's name or number into its number, checked against the broker's levels."""
        if isinstance(level, bool) or not isinstance(level, (int, str)):
            raise NoLevel(f"no such level {level!r} (a name or a number)")
        got = self._level_ids.get(level)
        if got is not None:
            return got
        if isinstance(level, int) and level < 0:
            raise NoLevel(f"no such level {level}")
        out = c_uint()
        text = level if isinstance(level, str) else str(level)
        self._check(self._L.sl_level_parse(self._handle(), text.encode(), byref(out)))
        self._level_ids[level] = out.value
        return out.value


def _options(timeout_ms: int, heartbeat_ms: int, client_key: KeyArg, server_key: Optional[str]) -> Options:
    if timeout_ms <= 0 or heartbeat_ms < 0:
        raise InvalidArgument("timeout_ms must be above 0, heartbeat_ms not below 0")
    pub, sec, server = _keys(client_key, server_key)
    return Options(timeout_ms=timeout_ms, heartbeat_ms=heartbeat_ms, server_key=server, public_key=pub,
                   secret_key=sec)


class Client(_Conn, AdminMixin, MsgsMixin, BackupMixin, HaMixin):
    """Client is a connection to one Sluice broker: publish, consume, administer.

    Args:
        endpoint: the broker's ZeroMQ endpoint, ``tcp://HOST:PORT`` or ``ipc://PATH``.
        timeout_ms: how long a call waits for the broker's answer (default 5000).
        client_key: for a broker with CURVE (``--auth``): this client's ``.key``
            file from ``sluice keygen``, or a ``(public, secret)`` pair of Z85 keys.
        server_key: the broker's ``.pub`` (or ``.key``) file, or its public key in Z85.
        heartbeat_ms: the transport heartbeat (0: the library's 1000 ms).

    Connecting is asynchronous: the first call that waits for the broker says
    whether it is there. When nothing listens at the endpoint (the connection
    is refused) that call raises :class:`ConnectError` about 0.3 s after the
    first refusal; a broker that cannot be reached otherwise (a host that
    drops packets, a peer that never answers) raises :class:`Timeout` after
    timeout_ms. A bad endpoint or key raises
    :class:`InvalidArgument` here. Use it as a context manager, or call
    :meth:`close`. One thread at a time (see the module's notes).
    """

    def __init__(
        self,
        endpoint: str = DEFAULT_ENDPOINT,
        *,
        timeout_ms: int = 5000,
        client_key: KeyArg = None,
        server_key: Optional[str] = None,
        heartbeat_ms: int = 0,
    ) -> None:
        self.endpoint = endpoint
        self.timeout_ms = timeout_ms
        self._opts = _options(timeout_ms, heartbeat_ms, client_key, server_key)
        super().__init__(endpoint, self._opts)
        self._put = Put()
        self._id = c_uint64()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"sluice.Client({self.endpoint!r}{'' if self._h is not None else ', closed'})"

    def close(self) -> None:
        """close ends the connection; publishes not yet confirmed have an unknown fate. Idempotent."""
        self._close()

    @property
    def closed(self) -> bool:
        """closed tells whether close was called."""
        return self._h is None

    # ---- publishing ----

    def _fill(self, p: Put, level: Optional[Level], tag: Optional[str], cost: int, delay_ms: int,
              ttl_ms: int) -> None:
        p.level = SL_LEVEL_DEFAULT if level is None else self._level(level)
        p.tag = _b(tag)
        if cost < 0 or delay_ms < 0 or ttl_ms < 0:
            raise InvalidArgument("cost, delay_ms and ttl_ms are not negative")
        p.cost = cost
        p.delay_ms = delay_ms
        p.ttl_ms = ttl_ms

    def send(
        self,
        body: Body,
        *,
        level: Optional[Level] = None,
        tag: Optional[str] = None,
        key: Optional[str] = None,
        cost: int = 1,
        delay_ms: int = 0,
        ttl_ms: int = 0,
        headers: Optional[Mapping[str, str]] = None,
    ) -> int:
        """send publishes one message and returns its id once the broker has stored it durably.

        Args:
            body: bytes, or str (sent as UTF-8).
            level: a level's name or number; None for the broker's default level.
            tag: the tenant or job type (up to 255 bytes); None for none.
            key: an idempotency key: a repeat within the broker's window stores
                nothing and returns the first message's id.
            cost: units charged to every rate limit the message passes.
            delay_ms: deliver no sooner than this from now.
            ttl_ms: not delivered within this, it becomes a dead letter; 0: forever.
            headers: name to value, kept in their order and returned with
                every delivery (``Delivery.headers``), forwarded by ``sluice
                consume --post``; W3C trace context as ``traceparent`` and
                ``tracestate``. Up to 32, names of 1-64 token characters
                (case-insensitive, each once), values up to 1024 bytes of text,
                8192 bytes in all; hop-by-hop and reserved names (Connection,
                Host, Idempotency-Key, X-Sluice-*, ...) are refused
                (InvalidArgument; TooBig for a size).

        Raises:
            NoLevel, TooBig, InvalidArgument, Full, NoSpace (retry later),
            StorageError (not stored), Shutdown, Timeout (outcome unknown:
            it may have been stored; send again with the same key).
        """
        h = self._handle()
        p = self._put
        b = _body(body)
        p.body = b
        p.body_len = len(b)
        self._fill(p, level, tag, cost, delay_ms, ttl_ms)
        p.key = _b(key)
        if headers:
            arr, n = _headers(headers)
            rc = self._L.sl_send_ex(h, byref(p), arr, n, byref(self._id))
        else:
            rc = self._L.sl_send(h, byref(p), byref(self._id))
        if rc:
            raise self._error(rc)
        return self._id.value

    def send_many(
        self,
        bodies: Iterable[Body],
        *,
        level: Optional[Level] = None,
        tag: Optional[str] = None,
        key: Optional[str] = None,
        cost: int = 1,
        delay_ms: int = 0,
        ttl_ms: int = 0,
        headers: Optional[Mapping[str, str]] = None,
        window: int = SEND_WINDOW,
    ) -> List[int]:
        """send_many publishes every body, keeping up to window publishes outstanding.

        The options are send's (headers included), the same for every message; with key, message N
        (from 1) gets the key ``KEY:N``, as ``sluice send -k`` does. Returns the
        ids in the order of bodies, once every one is durably stored.

        Raises the first failure, once every outstanding publish has been
        answered (or, after a Timeout, without waiting for the rest); the
        exception's ``ids`` attribute then lists the ids, None for messages
        not stored or whose fate is unknown, and ``index`` the position of
        the first failed one. A publish the connection lost before its
        answer (the broker restarted) fails with ConnectError: it may or may
        not have been stored, so send it again with a key where it matters.
        """
        if window < 1:
            raise InvalidArgument("window must be at least 1")
        h = self._handle()
        L = self._L
        p = Put()
        self._fill(p, level, tag, cost, delay_ms, ttl_ms)
        send_wait = L.sl_send_wait
        ticket, conf = c_uint64(), Confirm()
        p_ref, t_ref, c_ref = byref(p), byref(ticket), byref(conf)
        if headers:  # the same headers on every message
            h_arr, h_n = _headers(headers)
            send_ex = L.sl_send_async_ex

            def send_async(h: Any, p_ref: Any, t_ref: Any) -> int:
                return send_ex(h, p_ref, h_arr, h_n, t_ref)
        else:
            send_async = L.sl_send_async
        ids: List[Optional[int]] = []
        first: Optional[int] = None
        failed: Optional[Tuple[int, Error]] = None
        done = 0
        timeout_ms = self.timeout_ms

        def take() -> None:
            nonlocal done, failed
            rc = send_wait(h, timeout_ms, c_ref)
            if rc:
                raise self._error(rc)
            at = conf.ticket - first  # type: ignore[operator]
            if at < 0:
                return  # an earlier call's publish, abandoned when it raised
            done += 1
            if conf.err:
                if failed is None:
                    failed = (at, self._error(conf.err))
            else:
                ids[at] = conf.id

        try:
            for n, body in enumerate(bodies, 1):
                b = body if type(body) is bytes else _body(body)
                if len(ids) - done >= window:
                    take()
                p.body = b
                p.body_len = len(b)
                if key is not None:
                    p.key = f"{key}:{n}".encode()
                rc = send_async(h, p_ref, t_ref)
                if rc:
                    if failed is None:
                        failed = (len(ids), self._error(rc))
                    break
                if first is None:
                    first = ticket.value
                ids.append(None)
            while done < len(ids):
                take()
        except Error as e:  # no answer (Timeout, ...): the rest have an unknown fate
            if failed is None:
                failed = (done, e)
        if failed is not None:
            at, err = failed
            err.ids = ids  # type: ignore[attr-defined]
            err.index = at  # type: ignore[attr-defined]
            raise err
        return ids  # type: ignore[return-value]

    # ---- consuming ----

    def consume(
        self,
        levels: Union[None, Level, Sequence[Level]] = None,
        *,
        pool: str = "default",
        credit: int = 1,
        limit: int = 0,
    ) -> "Consumer":
        """consume subscribes a new consumer connection and returns it.

        Args:
            levels: a level, a list of levels (names or numbers), or a string
                such as ``"high,normal"``; None for every level.
            pool: the consumer pool to join.
            credit: how many unacknowledged deliveries it may hold at once.
            limit: receive at most this many deliveries in all (0: no limit).

        The Consumer is a context manager and an iterator of :class:`Delivery`.
        Raises NoLevel, InvalidArgument, Timeout, Permission.
        """
        return Consumer(self, levels, pool=pool, credit=credit, limit=limit)

    def flush(self, timeout_ms: Optional[int] = None) -> None:
        """flush waits until the broker has answered every settlement sent on this connection.

        Raises the first refused settlement not yet reported (Stale, ...), or Timeout.
        """
        self._check(self._L.sl_flush(self._handle(), self.timeout_ms if timeout_ms is None else timeout_ms))


# Delivery and Consumer live in _consume.py, which builds on _Conn above
# (so imported here, at the end); both are sluice's, and importable from here.
from ._consume import Consumer, Delivery  # noqa: E402

__all__ = ["DEFAULT_ENDPOINT", "Client", "Consumer", "Delivery", "KeyArg", "key_read", "keygen"]
