"""The session's methods whose meaning depends on the era, and its hooks for listen and cache.

2026-07-28 dropped ``ping``, ``resources/subscribe``, ``logging/setLevel`` and every
notification from the client but ``notifications/cancelled``; it added
``subscriptions/listen``. Each method here does what the negotiated era allows: the
legacy request or notification, the modern equivalent without a round trip
(``set_logging_level`` rides the ``_meta`` envelope; ``send_roots_list_changed`` has
nothing to say to a server that asks for the roots each time), or `NotInThisEraError`
before anything is sent.

`EraMethods` is mixed into `ClientSession`, which holds the parts it uses (the
connection, the era state and the back-channel).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, cast

from mrtr.errors import NotInThisEraError

if TYPE_CHECKING:
    from mrtr._backchannel import BackChannel
    from mrtr._envelope import EraState
    from mrtr._jsonrpc import JSONRPCConnection
    from mrtr._listen import ListenRoutes
    from mrtr.transports import JSONObject
    from mrtr.types import EmptyResult

__all__ = ["EraMethods"]

_logger = logging.getLogger("mrtr.session")

_NO_LISTEN = "use Client.listen(...) on a 2026-07-28 connection"


class EraMethods:
    """Ping, subscriptions, logging and the client's notifications, per era."""

    _connection: JSONRPCConnection
    _era: EraState
    _backchannel: BackChannel

    def _legacy_only(self, method: str, instead: str) -> None:
        if self._era.era == "modern":
            raise NotInThisEraError(method, self._era.protocol_version, instead)

    # -- hooks for subscriptions/listen and the response cache -------------------------

    @property
    def listen_routes(self) -> ListenRoutes:
        """The open ``subscriptions/listen`` streams, fed by the reader."""
        return self._backchannel.listen_routes

    def add_change_listener(self, listener: Callable[[str, Any], object]) -> None:
        """Call ``listener(method, params)`` on the reader for every change notification.

        It runs before any other route sees the notification (the response cache evicts
        there, so a refetch triggered by the change never gets the stale entry).
        """
        self._backchannel.change_listeners.append(listener)

    def start_background(self, function: Callable[[], Coroutine[Any, Any, object]]) -> None:
        """Run `function` in the session's task group: it ends when the session closes.

        Raises:
            ClientStateError: the session is not open.
        """
        self._connection.start_background(function)

    # -- era-specific requests ---------------------------------------------------------

    async def send_ping(self, *, read_timeout_seconds: float | None = None) -> EmptyResult:
        """Ping the server (legacy era only: 2026-07-28 has no ``ping``).

        Raises:
            NotInThisEraError: the connection is 2026-07-28 (nothing is sent).
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        from mrtr.types import parse_result

        self._legacy_only("ping", "2026-07-28 has no ping; any request shows the server is up")
        raw = await self._connection.send_request("ping", None, timeout=read_timeout_seconds)
        return cast("EmptyResult", parse_result("ping", raw))

    async def subscribe_resource(
        self, uri: str, *, read_timeout_seconds: float | None = None
    ) -> EmptyResult:
        """Ask for ``notifications/resources/updated`` about `uri` (legacy era).

        The updates reach the change callback (``ResourceUpdated``) and the message
        handler. On a 2026-07-28 connection use ``Client.listen(resource_subscriptions=...)``.

        Raises:
            NotInThisEraError: the connection is 2026-07-28 (nothing is sent).
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        return await self._legacy_empty(
            "resources/subscribe", {"uri": str(uri)}, read_timeout_seconds
        )

    async def unsubscribe_resource(
        self, uri: str, *, read_timeout_seconds: float | None = None
    ) -> EmptyResult:
        """Stop the updates about `uri` (legacy era); raises as `subscribe_resource`."""
        return await self._legacy_empty(
            "resources/unsubscribe", {"uri": str(uri)}, read_timeout_seconds
        )

    async def _legacy_empty(
        self, method: str, params: JSONObject, timeout: float | None
    ) -> EmptyResult:
        from mrtr.types import EmptyResult

        self._legacy_only(method, _NO_LISTEN)
        await self._connection.send_request(method, params, timeout=timeout)
        return EmptyResult()

    async def set_logging_level(
        self, level: str, *, read_timeout_seconds: float | None = None
    ) -> EmptyResult:
        """Ask the server for log messages at `level` and above.

        Legacy: sends ``logging/setLevel``. 2026-07-28: every later request carries the
        level in ``_meta`` (``io.modelcontextprotocol/logLevel``); nothing is sent now.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        from mrtr.types import EmptyResult

        era = self._era
        era.log_level = level
        if era.era == "modern" and era.protocol_version is not None:
            era.set_envelope(era.modern_envelope(era.protocol_version))
            return EmptyResult()
        await self._connection.send_request(
            "logging/setLevel", {"level": level}, timeout=read_timeout_seconds
        )
        return EmptyResult()

    # -- the client's own notifications --------------------------------------------------

    async def send_roots_list_changed(self) -> None:
        """Tell the server the client's roots changed (``notifications/roots/list_changed``).

        On a 2026-07-28 connection nothing is sent: the server asks for the roots with
        each request that needs them, so it always gets the current list.

        Raises:
            TransportError, ClientStateError: as `send_notification`.
        """
        if self._era.era == "modern":
            _logger.debug("no roots/list_changed at %s; nothing sent", self._era.protocol_version)
            return
        await self._connection.send_notification("notifications/roots/list_changed")

    async def send_progress_notification(
        self,
        progress_token: str | int,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> None:
        """Report progress on a request the server sent (legacy back-channel).

        Raises:
            NotInThisEraError: the connection is 2026-07-28 (progress flows from the
                server only).
            TransportError, ClientStateError: as `send_notification`.
        """
        self._legacy_only(
            "notifications/progress", "at 2026-07-28 only the server reports progress"
        )
        params: JSONObject = {"progressToken": progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._connection.send_notification("notifications/progress", params)
