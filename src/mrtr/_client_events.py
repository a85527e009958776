"""The client's side of change notifications, the response cache and era-only requests.

`ClientEvents` is mixed into `Client`: ``listen`` (2026-07-28 ``subscriptions/listen``),
the legacy ``subscribe_resource`` / ``unsubscribe_resource``, ``set_logging_level`` and
the client's own notifications (each does what the negotiated era allows, see
`mrtr._session_era`), and the list methods' path through the opt-in `ResponseCache`.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, TypeVar

from mrtr._cache import CACHE_MODES, CacheMode, ResponseCache

if TYPE_CHECKING:
    from mrtr._listen import Subscription
    from mrtr.session import ClientSession
    from mrtr.types import EmptyResult

__all__ = ["ClientEvents"]

PageT = TypeVar("PageT")

_clients = itertools.count(1)


class ClientEvents:
    """Change notifications, the response cache and the era-only requests of `Client`."""

    read_timeout_seconds: float | None
    _cache: ResponseCache | None
    _cache_server: str
    _cache_partition: str

    @property
    def session(self) -> ClientSession:  # provided by Client
        raise NotImplementedError

    def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_subscriptions: Sequence[str] = (),
        ack_timeout: float | None = None,
    ) -> AbstractAsyncContextManager[Subscription]:
        """Open a ``subscriptions/listen`` stream of change events (2026-07-28).

        ``async with client.listen(tools_list_changed=True) as sub:`` returns once the
        server acknowledged; ``sub.honored`` is what it agreed to send. ``async for event
        in sub`` yields `ChangeEvent` values until the server ends the stream (the loop
        stops) or the stream is lost (`SubscriptionLostError`: listen again and refetch,
        nothing is replayed). Leaving the block cancels the subscription. With a response
        cache, each event evicts the lists it names before the loop sees it.

        Args:
            tools_list_changed: ask for ``ToolsListChanged`` events.
            prompts_list_changed: ask for ``PromptsListChanged`` events.
            resources_list_changed: ask for ``ResourcesListChanged`` events.
            resource_subscriptions: URIs to get ``ResourceUpdated`` events about.
            ack_timeout: seconds to wait for the acknowledgement (default: the
                client's ``read_timeout_seconds``, else 30).

        Raises:
            NotInThisEraError: the connection is legacy (use `subscribe_resource` and
                ``change_callback``).
            MCPError: the server refused.
            RequestTimeoutError: no acknowledgement in time.
            SubscriptionLostError: the stream ended before its acknowledgement.
            TransportError, ClientStateError: the connection failed, or is not open.
            TypeError: `resource_subscriptions` is one string.
        """
        from mrtr._listen import SubscriptionFilter, listen

        if isinstance(resource_subscriptions, str):
            raise TypeError("resource_subscriptions must be a list of URIs, not one string")
        requested = SubscriptionFilter(
            tools_list_changed=tools_list_changed,
            prompts_list_changed=prompts_list_changed,
            resources_list_changed=resources_list_changed,
            resource_subscriptions=tuple(str(uri) for uri in resource_subscriptions),
        )
        timeout = self.read_timeout_seconds if ack_timeout is None else ack_timeout
        return listen(self.session, requested, ack_timeout=timeout)

    async def subscribe_resource(self, uri: str) -> EmptyResult:
        """Get ``ResourceUpdated`` events about `uri` (legacy; `listen` at 2026-07-28).

        Raises:
            NotInThisEraError: the connection is 2026-07-28; raised without a round trip.
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
        """
        return await self.session.subscribe_resource(uri)

    async def unsubscribe_resource(self, uri: str) -> EmptyResult:
        """Stop the events about `uri` (legacy era); raises as `subscribe_resource`."""
        return await self.session.unsubscribe_resource(uri)

    async def set_logging_level(self, level: str) -> EmptyResult:
        """Ask for server log messages at `level` and above (``logging_callback`` gets them).

        Legacy: ``logging/setLevel``. 2026-07-28: later requests carry the level in
        ``_meta``; nothing is sent now.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
        """
        return await self.session.set_logging_level(level)

    async def send_roots_list_changed(self) -> None:
        """Tell a legacy server the roots changed (a 2026-07-28 server asks each time).

        Raises:
            TransportError, ClientStateError: the connection failed, or is not open.
        """
        await self.session.send_roots_list_changed()

    async def send_progress_notification(
        self,
        progress_token: str | int,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> None:
        """Report progress on a request a legacy server sent.

        Raises:
            NotInThisEraError: the connection is 2026-07-28.
            TransportError, ClientStateError: the connection failed, or is not open.
        """
        await self.session.send_progress_notification(progress_token, progress, total, message)

    # -- the response cache ------------------------------------------------------------

    def _init_cache(self, cache: bool | ResponseCache, partition: str | None, server: str) -> None:
        """Set up the cache: a shared one, one of this client's own, or none."""
        self._cache = (
            cache if isinstance(cache, ResponseCache) else ResponseCache() if cache else None
        )
        self._cache_partition = partition or f"client-{next(_clients)}"
        self._cache_server = server

    def _watch_changes(self, session: ClientSession) -> None:
        """Evict on every change notification, before anyone who reacts to it refetches."""
        if self._cache is not None:
            cache, server = self._cache, self._cache_server
            session.add_change_listener(lambda method, _params: cache.evict_for(server, method))

    async def _cached(
        self,
        method: str,
        cursor: str | None,
        cache_mode: CacheMode,
        fetch: Callable[[str | None], Awaitable[PageT]],
    ) -> PageT:
        """One list page through the response cache (when there is one).

        Raises:
            ValueError: an unknown `cache_mode`.
        """
        if cache_mode not in CACHE_MODES:
            raise ValueError(
                f"cache_mode must be one of {', '.join(CACHE_MODES)}; got {cache_mode!r}"
            )
        cache = self._cache
        if cache is None or cache_mode == "bypass":
            return await fetch(cursor)
        server, partition = self._cache_server, self._cache_partition
        if cache_mode == "use":
            hit: PageT | None = cache.get(server, method, cursor, partition)
            if hit is not None:
                return hit
        page = await fetch(cursor)
        cache.put(server, method, cursor, partition, page)
        return page

    def clear_cache(self) -> None:
        """Drop every entry of the response cache (of a shared cache: every client's)."""
        if self._cache is not None:
            self._cache.clear()
