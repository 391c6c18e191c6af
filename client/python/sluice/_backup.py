"""The calls of Client on the broker as a whole: hot backups, the settings as declarations, console links.

As tools/cli/cli_backup.c does: :meth:`BackupMixin.backup` asks the broker
for a copy of its store, then asks for its state every 100 ms until the copy
is done or failed, and returns what ``sluice backup --to DIR --json`` prints;
:meth:`BackupMixin.backup_status` is ``sluice backup status --json``;
:meth:`BackupMixin.settings_export` is the text ``sluice settings export``
prints. The copy itself is the broker's (broker/README.md, Backups): a
checkpoint first, then LMDB's compacting copy on a thread of its own while
it serves. Costs: a round trip per poll.
"""

from __future__ import annotations

import os
import time
from ctypes import byref, c_size_t, c_void_p, string_at
from typing import TYPE_CHECKING, Any, Dict, Union

from . import _lib
from ._lib import BackupInfo, WebLink
from .errors import InvalidArgument, StorageError

Json = Dict[str, Any]

POLL_S = 0.1  # between two questions about a running backup, as the CLI's POLL_MS

_s = _lib.text


class BackupMixin:
    """BackupMixin holds Client's backup and settings calls (a part of Client; see client.py)."""

    if TYPE_CHECKING:  # provided by client._Conn
        _L: Any

        def _handle(self) -> c_void_p: ...
        def _check(self, rc: int) -> None: ...

    def backup(self, to: Union[str, "os.PathLike[str]"]) -> Json:
        """backup copies the running broker's store into directory to, as ``sluice backup --to DIR --json``.

        to is a directory on the broker's machine that does not exist (the
        broker makes it) or is empty; a relative path is taken from this
        process's working directory, as the CLI does. The broker makes a
        checkpoint, so that the copy holds every message confirmed before
        the call, then copies while it goes on serving; this waits until the
        copy ends. ``sluiced --data DIR`` opens the copy.

        Returns backup_status() of the finished copy: ``{"state": "done",
        "path", "bytes", "elapsed_ms", "message"}``. Raises InvalidState
        while another backup runs, InvalidArgument for a directory that is
        not empty or cannot be made, StorageError (its ``status`` the
        backup_status() dict) when the copy failed.
        """
        path = os.fspath(to)
        if not path:
            raise InvalidArgument("backup needs a directory: a new or empty one on the broker's machine")
        d = path if path.startswith("/") else f"{os.getcwd()}/{path}"
        self._check(self._L.sl_backup(self._handle(), os.fsencode(d)))
        while True:
            s = self.backup_status()
            if s["state"] not in ("checkpoint", "copying"):
                break
            time.sleep(POLL_S)
        if s["state"] != "done":
            e = StorageError(f"the backup into {d} failed: {s['message']}")
            e.status = s  # type: ignore[attr-defined]
            raise e
        return s

    def backup_status(self) -> Json:
        """backup_status reads the last backup's state, as ``sluice backup status --json``.

        ``{"state", "path", "bytes", "elapsed_ms", "message"}``: state is
        "none" (no backup since the broker started), "checkpoint", "copying",
        "done" or "failed"; bytes the copy's size once done; elapsed_ms from
        the request to its end (so far, while it runs); message what it did,
        or why it failed.
        """
        b = BackupInfo()
        self._check(self._L.sl_backup_status(self._handle(), byref(b)))
        return {
            "state": _s(b.state),
            "path": _s(b.path),
            "bytes": b.bytes,
            "elapsed_ms": b.elapsed_ms,
            "message": _s(b.msg),
        }

    def settings_export(self) -> str:
        """settings_export returns the running settings as sluice.conf declarations, as ``sluice settings export``.

        The sink, the levels, the configured pools and the tag patterns
        (``[sink]``, ``[level NAME]``, ``[pool NAME]``, ``[tag "P"]``): text
        a config file may hold, which a broker applies at start and on SIGHUP.
        """
        text, n = c_void_p(), c_size_t()
        self._check(self._L.sl_settings_export(self._handle(), byref(text), byref(n)))
        return string_at(text.value, n.value).decode("utf-8", "replace") if n.value else ""

    def web_login(self, ttl_ms: int = 0) -> Json:
        """web_login mints a one-time login link to the web console, as ``sluice web login --json``.

        ``{"url", "link", "role", "ttl_ms"}``: open link (url + "/#login=" +
        a token) in a browser to get a session with the role of this
        client's key, lasting ttl_ms (0: the broker's default, 8 hours; at
        most 7 days). Raises InvalidState when the broker serves no console
        (no ``--http``), PermissionDenied when an admin's link must come
        through the admin endpoint, InvalidArgument for a ttl out of range.
        """
        w = WebLink()
        self._check(self._L.sl_web_login(self._handle(), ttl_ms, byref(w)))
        url = _s(w.url)
        return {"url": url, "link": f"{url}/#login={_s(w.token)}", "role": _s(w.role), "ttl_ms": w.ttl_ms}
