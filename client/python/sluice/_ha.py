"""The calls of Client on a high-availability group: its status, a switchover, a recovery.

As tools/cli/cli_ha.c does: :meth:`HaMixin.ha_status` returns what ``sluice ha
status --json`` prints, built from the same C struct (sl_ha_status) with the
same keys in the same order; :meth:`HaMixin.ha_switchover` and
:meth:`HaMixin.ha_recover` are ``sluice ha switchover`` and ``sluice ha
recover --node NAME``, which print no JSON: they return None once the node
has taken the request. What a group is and how it fails over is in
broker/README.md, "High availability". A Client whose endpoint names both
nodes (``"tcp://a:7470|tcp://b:7470"``) sends each call to the primary; one
that names a standby gets its answer to ha_status and ha_recover, and
:class:`~sluice.errors.Redirect` for ha_switchover.
"""

from __future__ import annotations

from ctypes import byref
from typing import TYPE_CHECKING, Any, Dict

from . import _lib
from ._lib import HaStatus

if TYPE_CHECKING:  # the mixin's host is client._Conn
    from ctypes import c_void_p

Json = Dict[str, Any]

_s = _lib.text


class HaMixin:
    """HaMixin holds Client's high-availability calls (a part of Client; see client.py)."""

    if TYPE_CHECKING:  # provided by client._Conn
        _L: Any

        def _handle(self) -> c_void_p: ...
        def _check(self, rc: int) -> None: ...

    def ha_status(self) -> Json:
        """ha_status returns the group as the node reached sees it, as ``sluice ha status --json``.

        ``{"epoch", "nodes": [{"node", "role", "endpoint", "in_sync",
        "lag_records"}]}``: the group's epoch (one more per promotion) and a
        row per node, the answering node first. role is "primary",
        "standby", "fenced" (a primary without a valid lease) or
        "unreachable"; in_sync is True for the primary and for the standby
        Redis records in sync; lag_records is the records of the stream the
        standby has not acknowledged, as the primary counts them (0 in a
        standby's answer). A standby answers too, so this works while the
        primary is down. Raises InvalidState when the broker is not a node
        of a group (no ``--ha``).
        """
        st = HaStatus()
        self._check(self._L.sl_ha_status_get(self._handle(), byref(st)))
        return {
            "epoch": st.epoch,
            "nodes": [
                {
                    "node": _s(n.node),
                    "role": _s(n.role),
                    "endpoint": _s(n.endpoint),
                    "in_sync": bool(n.in_sync),
                    "lag_records": n.lag_records,
                }
                for n in st.nodes[: st.nnodes]
            ],
        }

    def ha_switchover(self) -> None:
        """ha_switchover hands the primary's lease to its standby in sync, at the next epoch.

        The primary confirms and dispatches nothing more from the call on;
        the standby promotes as soon as it hears (well under a second) and
        the old primary starts again as its standby. Returns once the
        primary has taken the request (the promotion follows: ha_status
        shows it). Raises InvalidState when no standby is in sync or a
        switchover is already under way, Redirect when the node reached is
        a standby (a Client naming both nodes reaches the primary).
        """
        self._check(self._L.sl_ha_switchover(self._handle()))

    def ha_recover(self, node: str) -> None:
        """ha_recover writes the group's record in Redis again after Redis lost its data, node leading.

        Nothing promotes by itself once Redis has lost the record: send this
        to a node of the group (each waits as a standby then), naming the
        node whose store is the most recent; it leads at the epoch after the
        highest the answering node has seen. Returns once the request is
        recorded. Raises InvalidState when Redis holds the record (nothing
        to recover), InvalidArgument for an empty node.
        """
        self._check(self._L.sl_ha_recover(self._handle(), node.encode("utf-8")))
