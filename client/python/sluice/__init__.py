"""sluice: the Python client of the Sluice priority message broker.

A thin binding over the C client library, libsluice.so.1 (ctypes, standard
library only): the wire protocol has one implementation, the C one. The
library is found through $SLUICE_LIB (a path), else the system's library
path.

    import sluice

    with sluice.Client("tcp://127.0.0.1:7470") as c:
        id = c.send(b"resize image 7", level="high", tag="acme")
        with c.consume("high", credit=8) as consumer:
            for d in consumer:
                print(d.id, d.body)
                d.ack()

See client/python/README.md for the API, the errors and the threading rules.
"""

from ._lib import SONAME
from .client import DEFAULT_ENDPOINT, Client, Consumer, Delivery, key_read, keygen
from .errors import (
    BY_CODE,
    ConnectError,
    Corrupt,
    Error,
    Full,
    InvalidArgument,
    InvalidState,
    NoLevel,
    NoMemory,
    NoSpace,
    NotFound,
    Permission,
    Redirect,
    ProtocolError,
    Shutdown,
    SinkThrottled,
    Stale,
    StorageError,
    Timeout,
    TooBig,
    UnknownType,
    VersionMismatch,
)
from .worker import Outcome, Reject, Retry, Throttled, Worker, WorkResult, work

__version__ = "1.0.0"

__all__ = [
    "BY_CODE",
    "Client",
    "ConnectError",
    "Consumer",
    "Corrupt",
    "DEFAULT_ENDPOINT",
    "Delivery",
    "Error",
    "Full",
    "InvalidArgument",
    "InvalidState",
    "NoLevel",
    "NoMemory",
    "NoSpace",
    "NotFound",
    "Outcome",
    "Permission",
    "Redirect",
    "ProtocolError",
    "Reject",
    "Retry",
    "SONAME",
    "Shutdown",
    "SinkThrottled",
    "Stale",
    "StorageError",
    "Throttled",
    "Timeout",
    "TooBig",
    "UnknownType",
    "VersionMismatch",
    "WorkResult",
    "Worker",
    "key_read",
    "keygen",
    "work",
]
