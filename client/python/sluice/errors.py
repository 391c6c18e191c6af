"""Sluice's errors as Python exceptions.

Every failure of a call is raised as an :class:`Error`: its ``code`` is the
library's ``sl_err`` number (proto/sluice_errors.h, the same on the wire),
``name`` the symbol (``"SL_EFULL"``) and ``message`` the broker's own words
when it gave any, else the code's generic message. Each code has a subclass,
so a caller catches only what it handles differently::

    try:
        client.send(b"job", level="high")
    except sluice.Full as e:          # the level is at its limit
        time.sleep(e.retry_after_ms / 1000)
    except sluice.Timeout:            # outcome unknown: send again with a key
        ...

Some also derive from the matching built-in exception (``Timeout`` is a
``TimeoutError``, ``Permission`` a ``PermissionError``, ``InvalidArgument`` a
``ValueError``, ``NotFound`` a ``LookupError``, ``ConnectError`` a
``ConnectionError``), so generic handlers catch them too.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

# The suggested wait before publishing again after Full or NoSpace. The broker
# puts 1000 ms in its SL_ENOSPC reply; libsluice does not pass that figure on,
# so the same value is used for both here.
RETRY_AFTER_MS = 1000


class Error(Exception):
    """Error is a failed Sluice call.

    Attributes:
        code: the ``sl_err`` number (``SL_EFULL`` is 5, ...).
        name: its symbol, such as ``"SL_EFULL"``.
        message: the broker's explanation, or the code's generic message.
    """

    code: int = -1
    name: str = "SL_E?"

    def __init__(self, message: str = "", code: Optional[int] = None, name: Optional[str] = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        if name is not None:
            self.name = name
        self.message = message

    def __str__(self) -> str:
        return f"{self.message} ({self.name})" if self.message else self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.code})"


class InvalidArgument(Error, ValueError):
    """SL_EINVAL: a bad argument, or a value the broker refused (its message says which)."""

    code, name = 1, "SL_EINVAL"


class ProtocolError(Error):
    """SL_EPROTO: a malformed or unexpected message."""

    code, name = 2, "SL_EPROTO"


class TooBig(Error):
    """SL_ETOOBIG: a body, tag or key over its size limit."""

    code, name = 3, "SL_ETOOBIG"


class NoSpace(Error):
    """SL_ENOSPC: the broker's storage is full; publish again after ``retry_after_ms``."""

    code, name = 4, "SL_ENOSPC"
    retry_after_ms: int = RETRY_AFTER_MS


class Full(Error):
    """SL_EFULL: the level (or the pool table) is full; try again after ``retry_after_ms``."""

    code, name = 5, "SL_EFULL"
    retry_after_ms: int = RETRY_AFTER_MS


class Stale(Error):
    """SL_ESTALE: a settlement's lease had expired or its token is unknown.

    The message may be delivered again (at least once).
    """

    code, name = 6, "SL_ESTALE"


class NoLevel(Error, LookupError):
    """SL_ENOLEVEL: no such priority level."""

    code, name = 7, "SL_ENOLEVEL"


class VersionMismatch(Error):
    """SL_EVERSION: the broker speaks another wire version."""

    code, name = 8, "SL_EVERSION"


class StorageError(Error):
    """SL_EIO: the broker failed to commit; the operation was not stored."""

    code, name = 9, "SL_EIO"


class Shutdown(Error):
    """SL_ESHUTDOWN: the broker is shutting down."""

    code, name = 10, "SL_ESHUTDOWN"


class Timeout(Error, TimeoutError):
    """SL_ETIMEDOUT: no answer in time. For a publish the outcome is unknown.

    Publishing again with the same idempotency key is safe.
    """

    code, name = 11, "SL_ETIMEDOUT"


class NoMemory(Error, MemoryError):
    """SL_ENOMEM: out of memory."""

    code, name = 12, "SL_ENOMEM"


class SinkThrottled(Error):
    """SL_ETHROTTLED: throttled by the sink."""

    code, name = 13, "SL_ETHROTTLED"


class UnknownType(Error):
    """SL_EUNKNOWN: the broker does not know the message type."""

    code, name = 14, "SL_EUNKNOWN"


class ConnectError(Error, ConnectionError):
    """SL_ECONNECT: the broker cannot be reached, or the connection was lost."""

    code, name = 15, "SL_ECONNECT"


class InvalidState(Error):
    """SL_ESTATE: not valid in this state (already subscribed, already settled, a non-empty level, ...)."""

    code, name = 16, "SL_ESTATE"


class Corrupt(Error):
    """SL_ECORRUPT: a stored record failed its checksum."""

    code, name = 17, "SL_ECORRUPT"


class NotFound(Error, LookupError):
    """SL_ENOTFOUND: no such pool, dead letter, tag pattern or key file."""

    code, name = 18, "SL_ENOTFOUND"


class Permission(Error, PermissionError):
    """SL_EPERM: the principal's role does not allow it, or the broker refused the key."""

    code, name = 19, "SL_EPERM"


class Redirect(Error):
    """SL_EREDIRECT: the node is the standby of a high-availability group; the primary is elsewhere."""

    code, name = 20, "SL_EREDIRECT"


BY_CODE: Dict[int, Type[Error]] = {
    cls.code: cls
    for cls in (
        InvalidArgument,
        ProtocolError,
        TooBig,
        NoSpace,
        Full,
        Stale,
        NoLevel,
        VersionMismatch,
        StorageError,
        Shutdown,
        Timeout,
        NoMemory,
        SinkThrottled,
        UnknownType,
        ConnectError,
        InvalidState,
        Corrupt,
        NotFound,
        Permission,
        Redirect,
    )
}


def from_code(code: int, message: str, name: Optional[str] = None) -> Error:
    """from_code builds the exception of code's class, with message."""
    cls = BY_CODE.get(code)
    if cls is None:
        return Error(message, code=code, name=name or f"SL_E{code}")
    return cls(message)
